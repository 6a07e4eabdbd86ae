package store_test

// The authentication events and their counters, on every backend.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// addEvents stores events in one transaction.
func addEvents(t *testing.T, db store.DB, evs []*store.AuthEvent) {
	t.Helper()
	if err := db.Update(ctx, func(tx store.Tx) error {
		for _, e := range evs {
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestAuthEventQueries checks every filter, walked page by page, against
// a plain filter over all events.
func TestAuthEventQueries(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	projects := []string{"", "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "p3"}
	codes := []string{"", "invalid_code", "expired", "validation_error"}
	var all []*store.AuthEvent
	for i := range 600 {
		e := &store.AuthEvent{ID: fmt.Sprint("e", i), ProjectID: projects[rng.IntN(len(projects))], Method: "email_otp", Action: "verify",
			// Several events share an instant: the sequence orders them.
			CreatedAt: t0.Add(time.Duration(i/3) * time.Second)}
		if c := codes[rng.IntN(len(codes))]; c == "" {
			e.Success = true
		} else {
			e.FailureCode = c
		}
		all = append(all, e)
	}
	addEvents(t, db, all[:300])
	addEvents(t, db, all[300:])
	check(t, db)
	newest := slices.Clone(all)
	slices.Reverse(newest)

	filters := []store.AuthEventFilter{{}}
	for _, p := range append(projects[1:], "unknown") {
		filters = append(filters, store.AuthEventFilter{ProjectID: p})
		for _, c := range append(codes[1:], "rate_limited") {
			filters = append(filters, store.AuthEventFilter{ProjectID: p, FailureCode: c})
		}
	}
	for _, c := range codes[1:] {
		filters = append(filters, store.AuthEventFilter{FailureCode: c})
	}
	for _, f := range filters {
		for _, limit := range []int{1, 7, 100, 1000} {
			t.Run(fmt.Sprintf("%q/%q/%d", f.ProjectID, f.FailureCode, limit), func(t *testing.T) {
				var want []string
				for _, e := range newest {
					if (f.ProjectID == "" || e.ProjectID == f.ProjectID) && (f.FailureCode == "" || e.FailureCode == f.FailureCode) {
						want = append(want, e.ID)
					}
				}
				var got []string
				f := f
				f.Limit = limit
				for pages := 0; ; pages++ {
					if pages > 700 {
						t.Fatal("pagination does not end")
					}
					var evs []*store.AuthEvent
					var more bool
					db.View(ctx, func(tx store.Tx) error {
						var err error
						evs, more, err = tx.AuthEvents(f)
						return err
					})
					if len(evs) > limit || (more && len(evs) != limit) {
						t.Fatalf("page of %d events (limit %d), more=%v", len(evs), limit, more)
					}
					for _, e := range evs {
						got = append(got, e.ID)
					}
					if !more {
						break
					}
					f.Before = evs[len(evs)-1].Pos
				}
				if !slices.Equal(got, want) {
					t.Fatalf("got %d events %v…, want %d %v…", len(got), head(got), len(want), head(want))
				}
			})
		}
	}
	// Before a time: events older than it.
	db.View(ctx, func(tx store.Tx) error {
		evs, _, _ := tx.AuthEvents(store.AuthEventFilter{Before: store.PosBefore(t0.Add(time.Second)), Limit: 10})
		if len(evs) != 3 || !evs[0].CreatedAt.Equal(t0) {
			t.Fatalf("before t0+1s: %d events", len(evs))
		}
		return nil
	})
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// TestAuthEventCap: a project keeps at most the cap, losing its oldest
// events first; other projects and the events without one keep theirs,
// whether the oldest event of all is the capped project's or, in "older
// project", another's.
func TestAuthEventCap(t *testing.T) {
	t.Parallel()
	for _, older := range []bool{false, true} {
		t.Run(map[bool]string{false: "oldest", true: "older project"}[older], func(t *testing.T) { testAuthEventCap(t, older) })
	}
}

func testAuthEventCap(t *testing.T, older bool) {
	dsn := storetest.New(t)
	db := openDSN(t, dsn, store.Options{MaxEventsPerProject: 5})
	var evs []*store.AuthEvent
	if older {
		evs = append(evs, &store.AuthEvent{ID: "c0", ProjectID: "C", Success: true, CreatedAt: t0.Add(-time.Hour)})
	}
	for i := range 12 {
		evs = append(evs, &store.AuthEvent{ID: fmt.Sprint("a", i), ProjectID: "A", Success: i%3 == 0, FailureCode: []string{"", "expired", "invalid_code"}[i%3],
			CreatedAt: t0.Add(time.Duration(i) * time.Minute)})
	}
	evs = append(evs, &store.AuthEvent{ID: "b0", ProjectID: "B", Success: true, CreatedAt: t0})
	evs = append(evs, &store.AuthEvent{ID: "n0", FailureCode: "invalid_code", CreatedAt: t0})
	addEvents(t, db, evs)
	check(t, db)
	db.View(ctx, func(tx store.Tx) error {
		got, _, _ := tx.AuthEvents(store.AuthEventFilter{ProjectID: "A", Limit: 100})
		var ids []string
		for _, e := range got {
			ids = append(ids, e.ID)
		}
		if want := []string{"a11", "a10", "a9", "a8", "a7"}; !slices.Equal(ids, want) {
			t.Fatalf("A keeps %v, want %v", ids, want)
		}
		if n := must(tx.AuthEventCount("A")); n != 5 {
			t.Fatalf("A total %d", n)
		}
		if must(tx.AuthEventCount("B")) != 1 || must(tx.AuthEventCount("")) != 1 {
			t.Fatalf("B %d, none %d", must(tx.AuthEventCount("B")), must(tx.AuthEventCount("")))
		}
		if c := must(tx.AuthEventCount("C")); older && c != 1 {
			t.Fatalf("C %d, want its 1", c)
		}
		// The hourly counters keep counting what happened.
		hc, _ := tx.HourlyCounts("A", t0, t0)
		var sum int64
		for _, c := range hc {
			sum += c.N
		}
		if sum != 12 {
			t.Fatalf("hourly counters of A sum to %d, want 12", sum)
		}
		return nil
	})

	// Lowering the cap: each new event trims a few, TrimAuthEvents the rest.
	db = reopen(t, db, dsn, store.Options{MaxEventsPerProject: 2})
	addEvents(t, db, []*store.AuthEvent{{ID: "a12", ProjectID: "A", Success: true, CreatedAt: t0.Add(time.Hour)}})
	db.Update(ctx, func(tx store.Tx) error {
		if n := must(tx.AuthEventCount("A")); n != 2 {
			t.Fatalf("after one add under cap 2: %d", n)
		}
		return nil
	})
	db = reopen(t, db, dsn, store.Options{MaxEventsPerProject: 1})
	var trimmed int
	db.Update(ctx, func(tx store.Tx) error {
		var err error
		trimmed, err = tx.TrimAuthEvents(1000)
		return err
	})
	if trimmed != 1 {
		t.Fatalf("trimmed %d, want 1", trimmed)
	}
	check(t, db)
}

// TestSweepAuthEvents: events older than the cutoff go, oldest first, in
// bounded transactions, with their index entries and totals; hourly and
// suppressed counters of old hours go too.
func TestSweepAuthEvents(t *testing.T) {
	t.Parallel()
	dsn := storetest.New(t)
	db := openDSN(t, dsn, store.Options{})
	var evs []*store.AuthEvent
	for i := range 50 {
		evs = append(evs, &store.AuthEvent{ID: fmt.Sprint(i), ProjectID: []string{"A", "B", ""}[i%3], Success: i%2 == 0, FailureCode: map[bool]string{true: "", false: "expired"}[i%2 == 0],
			CreatedAt: t0.Add(time.Duration(i) * time.Hour)})
	}
	addEvents(t, db, evs)
	db.Update(ctx, func(tx store.Tx) error {
		return tx.AddSuppressed(store.SuppressedCount{Hour: t0, ProjectID: "A", Method: "magic_link", Action: "verify", FailureCode: "invalid_code", N: 3})
	})
	cutoff := t0.Add(20 * time.Hour)
	due := func() (d bool) {
		db.View(ctx, func(tx store.Tx) error {
			a, b, c, _ := tx.EventSweepDue(cutoff)
			d = a || b || c
			return nil
		})
		return d
	}
	if !due() {
		t.Fatal("EventSweepDue=false with events older than the cutoff")
	}
	total := 0
	for {
		var n int
		if err := db.Update(ctx, func(tx store.Tx) error {
			var err error
			n, err = tx.SweepAuthEvents(cutoff, 7)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		total += n
		if n < 7 {
			break
		}
	}
	if total != 20 {
		t.Fatalf("swept %d, want 20", total)
	}
	check(t, db)
	db.Update(ctx, func(tx store.Tx) error {
		evs, _, _ := tx.AuthEvents(store.AuthEventFilter{Limit: 1000})
		if len(evs) != 30 || evs[len(evs)-1].ID != "20" {
			t.Fatalf("%d events left, oldest %s", len(evs), evs[len(evs)-1].ID)
		}
		n, err := tx.SweepEventCounts(cutoff, 1000)
		if err != nil || n == 0 {
			t.Fatalf("swept %d counters: %v", n, err)
		}
		hc, _ := tx.HourlyCounts("", t0, cutoff.Add(-time.Hour))
		sc, _ := tx.SuppressedCounts("", "", t0, cutoff, 1000)
		if len(hc) != 0 || len(sc) != 0 {
			t.Fatalf("old counters left: %v %v", hc, sc)
		}
		if hc, _ := tx.HourlyCounts("", cutoff, cutoff.Add(100*time.Hour)); len(hc) != 30 {
			t.Fatalf("%d recent counters, want 30", len(hc))
		}
		for _, scope := range []string{"A", "B", ""} {
			if n := must(tx.AuthEventCount(scope)); n != 10 {
				t.Fatalf("scope %q keeps %d after sweeping counters", scope, n)
			}
		}
		return nil
	})
	if due() {
		t.Fatal("EventSweepDue=true after everything old was swept")
	}
	// Over the cap is due too.
	db = reopen(t, db, dsn, store.Options{MaxEventsPerProject: 9})
	if !due() {
		t.Fatal("EventSweepDue=false with projects over the cap")
	}
}

// TestHourlyAndSuppressedCounts: counters per hour and outcome, for a
// project and for all projects; suppressed failures count in both and in
// their own counters.
func TestHourlyAndSuppressedCounts(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	addEvents(t, db, []*store.AuthEvent{
		{ProjectID: "A", Success: true, CreatedAt: t0},
		{ProjectID: "A", FailureCode: "expired", CreatedAt: t0.Add(time.Minute)},
		{ProjectID: "A", FailureCode: "expired", CreatedAt: t0.Add(time.Hour)},
		{ProjectID: "B", FailureCode: "expired", CreatedAt: t0},
		{FailureCode: "invalid_code", CreatedAt: t0},
	})
	db.Update(ctx, func(tx store.Tx) error {
		for _, c := range []store.SuppressedCount{
			{Hour: t0.Add(30 * time.Minute), Method: "magic_link", Action: "verify", FailureCode: "invalid_code", N: 40},
			{Hour: t0, ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 5},
			{Hour: t0.Add(time.Hour), ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 2},
			{Hour: t0, ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 1},
		} {
			if err := tx.AddSuppressed(c); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	type row struct {
		hour int
		kind string
		n    int64
	}
	rows := func(hc []store.HourCount) []row {
		var out []row
		for _, c := range hc {
			k := c.FailureCode
			if c.Success {
				k = "+"
			} else if c.Suppressed {
				k = "suppressed"
			}
			out = append(out, row{int(c.Hour.Sub(t0) / time.Hour), k, c.N})
		}
		return out
	}
	db.View(ctx, func(tx store.Tx) error {
		a, _ := tx.HourlyCounts("A", t0, t0.Add(time.Hour))
		if got, want := rows(a), []row{{0, "+", 1}, {0, "expired", 1}, {0, "external_method_error", 6}, {0, "suppressed", 6},
			{1, "expired", 1}, {1, "external_method_error", 2}, {1, "suppressed", 2}}; !slices.Equal(got, want) {
			t.Fatalf("A: %v, want %v", got, want)
		}
		all, _ := tx.HourlyCounts("", t0, t0)
		if got, want := rows(all), []row{{0, "+", 1}, {0, "expired", 2}, {0, "external_method_error", 6}, {0, "invalid_code", 41}, {0, "suppressed", 46}}; !slices.Equal(got, want) {
			t.Fatalf("all: %v, want %v", got, want)
		}
		sc, _ := tx.SuppressedCounts("", "", t0, t0.Add(time.Hour), 1000)
		if len(sc) != 3 || sc[0].Hour != t0.Add(time.Hour) || sc[0].N != 2 {
			t.Fatalf("suppressed: %+v", sc)
		}
		var none, six bool
		for _, c := range sc[1:] {
			none = none || (c.ProjectID == "" && c.N == 40 && c.Method == "magic_link" && c.Action == "verify" && c.FailureCode == "invalid_code")
			six = six || (c.ProjectID == "A" && c.N == 6)
		}
		if !none || !six {
			t.Fatalf("suppressed: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("A", "", t0, t0, 1000); len(sc) != 1 || sc[0].N != 6 {
			t.Fatalf("A suppressed in hour 0: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("", "invalid_code", t0, t0.Add(time.Hour), 1000); len(sc) != 1 || sc[0].N != 40 {
			t.Fatalf("invalid_code suppressed: %+v", sc)
		}
		// A limit keeps the newest hours.
		if sc, _ := tx.SuppressedCounts("", "", t0, t0.Add(time.Hour), 2); len(sc) != 2 || sc[0].Hour != t0.Add(time.Hour) {
			t.Fatalf("limit 2: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("A", "", t0, t0.Add(time.Hour), 1); len(sc) != 1 || sc[0].Hour != t0.Add(time.Hour) {
			t.Fatalf("A, limit 1: %+v", sc)
		}
		return nil
	})
	if err := db.Update(ctx, func(tx store.Tx) error {
		return tx.AddSuppressed(store.SuppressedCount{Hour: t0, ProjectID: "A\x00B", N: 1})
	}); err != store.ErrBadEventField {
		t.Fatalf("NUL in a project id: %v", err)
	}
}
