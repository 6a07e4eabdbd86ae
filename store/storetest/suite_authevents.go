package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"latchkey/store"
)

// AuthEvents tests the authentication events and their counters
// (store.AuthEvents): exact round trips, every filter page by page, the
// cap per project, the sweeps, and the hourly and suppressed counters.
func (s Suite) AuthEvents(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.authEventsRoundTrip},
		{"Queries", s.authEventsQueries},
		{"Cap", s.authEventsCap},
		{"Sweep", s.authEventsSweep},
		{"Counts", s.authEventsCounts},
	})
}

// addEvents stores evs in one transaction.
func addEvents(t *testing.T, db store.DB, evs []*store.AuthEvent) {
	t.Helper()
	update(t, db, func(tx store.Tx) error {
		for _, e := range evs {
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// listEvents returns the ids of the events AuthEvents(f) answers.
func listEvents(t *testing.T, db store.DB, f store.AuthEventFilter) []string {
	t.Helper()
	var ids []string
	view(t, db, func(tx store.Tx) error {
		evs, _, err := tx.AuthEvents(f)
		for _, e := range evs {
			ids = append(ids, e.ID)
		}
		return err
	})
	return ids
}

// authEventCount returns how many events scope keeps.
func authEventCount(t *testing.T, db store.DB, scope string) (n int) {
	t.Helper()
	view(t, db, func(tx store.Tx) (err error) { n, err = tx.AuthEventCount(scope); return err })
	return n
}

// authEventsRoundTrip: every field comes back byte for byte (an email,
// address and user agent that are not text included), Pos is set from
// the time and a growing sequence, and a NUL in the project or failure
// code is ErrBadEventField, changing nothing.
func (s Suite) authEventsRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	evs := []*store.AuthEvent{
		{ID: "0193-e", ProjectID: "p", UserID: "u", Email: odd, Method: "email_otp", Action: "verify",
			FailureCode: "invalid_code", IP: "::1%\xff", UserAgent: "UA \xc3(" + odd, CreatedAt: t0},
		{ID: "0193-f", ProjectID: "p", UserID: "u", Email: "a@example.com", Method: "passkey", Action: "login", Success: true, IP: "192.0.2.1", UserAgent: "ua", CreatedAt: t0},
		{ID: "0193-g", CreatedAt: t0.Add(-time.Hour)},
	}
	complete(t, evs[1], "FailureCode", "Pos")
	addEvents(t, db, evs)
	if evs[0].Pos.Nanos != t0.UnixNano() || evs[0].Pos.Seq == 0 || evs[1].Pos.Seq <= evs[0].Pos.Seq || evs[2].Pos.Seq <= evs[1].Pos.Seq {
		t.Fatalf("Pos = %+v %+v %+v", evs[0].Pos, evs[1].Pos, evs[2].Pos)
	}
	view(t, db, func(tx store.Tx) error {
		got, more, err := tx.AuthEvents(store.AuthEventFilter{Limit: 10})
		if err != nil || more {
			return fmt.Errorf("AuthEvents: %d, %v, %v", len(got), more, err)
		}
		// Newest first: the same time in sequence order.
		return diff("events", got, []*store.AuthEvent{evs[1], evs[0], evs[2]})
	})
	for _, bad := range []*store.AuthEvent{{ProjectID: "a\x00b"}, {FailureCode: "x\x00"}} {
		err := db.Update(ctx, func(tx store.Tx) error { return tx.AddAuthEvent(bad) })
		if !errors.Is(err, store.ErrBadEventField) {
			t.Errorf("AddAuthEvent(%q, %q): %v, want ErrBadEventField", bad.ProjectID, bad.FailureCode, err)
		}
	}
	if n := len(listEvents(t, db, store.AuthEventFilter{Limit: 10})); n != 3 {
		t.Fatalf("%d events after the refused ones, want 3", n)
	}
}

// authEventsQueries checks every filter, walked page by page, against a
// plain filter over all events.
func (s Suite) authEventsQueries(t *testing.T) {
	db := s.open(t, store.Options{})
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
	for _, p := range append(projects[1:], "unknown", odd) {
		filters = append(filters, store.AuthEventFilter{ProjectID: p})
		for _, c := range append(codes[1:], "rate_limited") {
			filters = append(filters, store.AuthEventFilter{ProjectID: p, FailureCode: c})
		}
	}
	for _, c := range codes[1:] {
		filters = append(filters, store.AuthEventFilter{FailureCode: c})
	}
	for _, f := range filters {
		for _, limit := range []int{0, 1, 7, 100, 1000} {
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
				view(t, db, func(tx store.Tx) error {
					for pages := 0; ; pages++ {
						if pages > 700 {
							return errors.New("pagination does not end")
						}
						evs, more, err := tx.AuthEvents(f)
						if err != nil {
							return err
						}
						if evs == nil || (limit > 0 && len(evs) > limit) || (more && len(evs) != limit) {
							return fmt.Errorf("page of %d events (limit %d, never nil), more=%v", len(evs), limit, more)
						}
						for _, e := range evs {
							got = append(got, e.ID)
						}
						if !more {
							return nil
						}
						f.Before = evs[len(evs)-1].Pos
					}
				})
				if !slices.Equal(got, want) {
					t.Fatalf("got %d events %v…, want %d %v…", len(got), head(got), len(want), head(want))
				}
			})
		}
	}
	// Before a time: events older than it.
	if ids := listEvents(t, db, store.AuthEventFilter{Before: store.PosBefore(t0.Add(time.Second)), Limit: 10}); fmt.Sprint(ids) != "[e2 e1 e0]" {
		t.Fatalf("before t0+1s: %v", ids)
	}
	// A position past every sequence number.
	if ids := listEvents(t, db, store.AuthEventFilter{Before: store.EventPos{Nanos: t0.UnixNano(), Seq: 1<<64 - 1}}); fmt.Sprint(ids) != "[e2 e1 e0]" {
		t.Fatalf("before (t0, max): %v", ids)
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// authEventsCap: a project keeps at most the cap, losing its oldest
// events first; other projects and the events without one keep theirs,
// whether the oldest event of all is the capped project's or, in "older
// project", another's; counters keep counting. A lowered cap trims a
// few per new event, and TrimAuthEvents the rest.
func (s Suite) authEventsCap(t *testing.T) {
	for _, older := range []bool{false, true} {
		t.Run(map[bool]string{false: "oldest", true: "older project"}[older], func(t *testing.T) {
			t.Parallel()
			s.authEventsCapWith(t, older)
		})
	}
}

func (s Suite) authEventsCapWith(t *testing.T, older bool) {
	dsn := s.New(t)
	db := openAt(t, dsn, store.Options{MaxEventsPerProject: 5})
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
	addEvents(t, db, evs[:3])
	addEvents(t, db, evs[3:])
	check(t, db)
	if ids := listEvents(t, db, store.AuthEventFilter{ProjectID: "A"}); fmt.Sprint(ids) != "[a11 a10 a9 a8 a7]" {
		t.Fatalf("A keeps %v", ids)
	}
	wantC := 0
	if older {
		wantC = 1
	}
	if a, b, none, c := authEventCount(t, db, "A"), authEventCount(t, db, "B"), authEventCount(t, db, ""), authEventCount(t, db, "C"); a != 5 || b != 1 || none != 1 || c != wantC {
		t.Fatalf("A keeps %d, B %d, none %d, C %d; want 5, 1, 1, %d", a, b, none, c, wantC)
	}
	view(t, db, func(tx store.Tx) error {
		// The hourly counters keep counting what happened.
		hc, err := tx.HourlyCounts("A", t0, t0)
		var sum int64
		for _, c := range hc {
			sum += c.N
		}
		if err == nil && sum != 12 {
			err = fmt.Errorf("hourly counters of A sum to %d, want 12", sum)
		}
		return err
	})

	// Lowering the cap: each new event trims a few, TrimAuthEvents the
	// rest.
	db = reopen(t, db, dsn, store.Options{MaxEventsPerProject: 2})
	addEvents(t, db, []*store.AuthEvent{{ID: "a12", ProjectID: "A", Success: true, CreatedAt: t0.Add(time.Hour)}})
	if n := authEventCount(t, db, "A"); n != 2 {
		t.Fatalf("after one add under cap 2: %d", n)
	}
	db = reopen(t, db, dsn, store.Options{MaxEventsPerProject: 1})
	view(t, db, func(tx store.Tx) error {
		if _, _, over, err := tx.EventSweepDue(t0.Add(-2 * time.Hour)); !over || err != nil {
			return fmt.Errorf("EventSweepDue over the cap: %v, %v", over, err)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		if n, err := tx.TrimAuthEvents(1000); n != 1 || err != nil {
			return fmt.Errorf("trimmed %d, %v; want 1", n, err)
		}
		return nil
	})
	if ids := listEvents(t, db, store.AuthEventFilter{ProjectID: "A"}); fmt.Sprint(ids) != "[a12]" {
		t.Fatalf("A keeps %v", ids)
	}
	view(t, db, func(tx store.Tx) error {
		if _, _, over, err := tx.EventSweepDue(t0.Add(-2 * time.Hour)); over || err != nil {
			return fmt.Errorf("EventSweepDue over the cap after the trim: %v, %v", over, err)
		}
		return nil
	})
	check(t, db)
}

// authEventsSweep: events older than the cutoff go, oldest first, in
// bounded transactions, with their kept numbers; counters of old hours
// go too; EventSweepDue tells when anything is left to do, over the cap
// included.
func (s Suite) authEventsSweep(t *testing.T) {
	dsn := s.New(t)
	db := openAt(t, dsn, store.Options{})
	var evs []*store.AuthEvent
	for i := range 50 {
		evs = append(evs, &store.AuthEvent{ID: fmt.Sprint(i), ProjectID: []string{"A", "B", ""}[i%3], Success: i%2 == 0, FailureCode: map[bool]string{true: "", false: "expired"}[i%2 == 0],
			CreatedAt: t0.Add(time.Duration(i) * time.Hour)})
	}
	addEvents(t, db, evs)
	update(t, db, func(tx store.Tx) error {
		return tx.AddSuppressed(store.SuppressedCount{Hour: t0, ProjectID: "A", Method: "magic_link", Action: "verify", FailureCode: "invalid_code", N: 3})
	})
	cutoff := t0.Add(20 * time.Hour)
	due := func() (d [3]bool) {
		t.Helper()
		view(t, db, func(tx store.Tx) (err error) {
			d[0], d[1], d[2], err = tx.EventSweepDue(cutoff)
			return err
		})
		return d
	}
	if d := due(); d != [3]bool{true, true, false} {
		t.Fatalf("EventSweepDue = %v, want events and counters", d)
	}
	total := 0
	for {
		var n int
		update(t, db, func(tx store.Tx) (err error) { n, err = tx.SweepAuthEvents(cutoff, 7); return err })
		total += n
		if n < 7 {
			break
		}
	}
	if total != 20 {
		t.Fatalf("swept %d, want 20", total)
	}
	check(t, db)
	update(t, db, func(tx store.Tx) error {
		evs, _, _ := tx.AuthEvents(store.AuthEventFilter{Limit: 1000})
		if len(evs) != 30 || evs[len(evs)-1].ID != "20" {
			return fmt.Errorf("%d events left, oldest %s", len(evs), evs[len(evs)-1].ID)
		}
		for _, scope := range []string{"A", "B", ""} {
			if n, _ := tx.AuthEventCount(scope); n != 10 {
				return fmt.Errorf("scope %q keeps %d, want 10", scope, n)
			}
		}
		n, err := tx.SweepEventCounts(cutoff, 1000)
		if err != nil || n == 0 {
			return fmt.Errorf("swept %d counters: %v", n, err)
		}
		hc, _ := tx.HourlyCounts("", t0, cutoff.Add(-time.Hour))
		sc, _ := tx.SuppressedCounts("", "", t0, cutoff, 1000)
		if len(hc) != 0 || len(sc) != 0 {
			return fmt.Errorf("old counters left: %v %v", hc, sc)
		}
		if hc, _ := tx.HourlyCounts("", cutoff, cutoff.Add(100*time.Hour)); len(hc) != 30 {
			return fmt.Errorf("%d recent counters, want 30", len(hc))
		}
		for _, scope := range []string{"A", "B", ""} {
			if n, _ := tx.AuthEventCount(scope); n != 10 {
				return fmt.Errorf("scope %q keeps %d after sweeping counters", scope, n)
			}
		}
		return nil
	})
	if d := due(); d != [3]bool{} {
		t.Fatalf("EventSweepDue = %v after everything old was swept", d)
	}
	update(t, db, func(tx store.Tx) error {
		if n, err := tx.SweepAuthEvents(cutoff, 0); n != 0 || err != nil {
			return fmt.Errorf("max 0: %d, %v", n, err)
		}
		return nil
	})
	check(t, db)
	// Over the cap is due too.
	db = reopen(t, db, dsn, store.Options{MaxEventsPerProject: 9})
	if d := due(); d != [3]bool{false, false, true} {
		t.Fatalf("EventSweepDue = %v with projects over the cap, want that alone", d)
	}
}

// authEventsCounts: counters per hour and outcome, for a project and for
// all projects; suppressed failures count in both and in their own
// counters, newest hour first, up to a limit.
func (s Suite) authEventsCounts(t *testing.T) {
	db := s.open(t, store.Options{})
	addEvents(t, db, []*store.AuthEvent{
		{ProjectID: "A", Success: true, CreatedAt: t0},
		{ProjectID: "A", FailureCode: "expired", CreatedAt: t0.Add(time.Minute)},
		{ProjectID: "A", FailureCode: "expired", CreatedAt: t0.Add(time.Hour)},
		{ProjectID: "B", FailureCode: "expired", CreatedAt: t0},
		{FailureCode: "invalid_code", CreatedAt: t0},
		{ProjectID: "C", CreatedAt: t0}, // a failure without a code
	})
	update(t, db, func(tx store.Tx) error {
		for _, c := range []store.SuppressedCount{
			{Hour: t0.Add(30 * time.Minute), Method: "magic_link", Action: "verify", FailureCode: "invalid_code", N: 40},
			{Hour: t0, ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 5},
			{Hour: t0.Add(time.Hour), ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 2},
			{Hour: t0, ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 1},
			{Hour: t0, ProjectID: "A", N: 0}, // nothing
		} {
			if err := tx.AddSuppressed(c); err != nil {
				return err
			}
		}
		return nil
	})
	hour := t0.Truncate(time.Hour)
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
			out = append(out, row{int(c.Hour.Sub(hour) / time.Hour), k, c.N})
		}
		return out
	}
	view(t, db, func(tx store.Tx) error {
		a, _ := tx.HourlyCounts("A", t0, t0.Add(time.Hour))
		if got, want := rows(a), []row{{0, "+", 1}, {0, "expired", 1}, {0, "external_method_error", 6}, {0, "suppressed", 6},
			{1, "expired", 1}, {1, "external_method_error", 2}, {1, "suppressed", 2}}; !slices.Equal(got, want) {
			return fmt.Errorf("A: %v, want %v", got, want)
		}
		all, _ := tx.HourlyCounts("", t0, t0)
		if got, want := rows(all), []row{{0, "+", 1}, {0, "?", 1}, {0, "expired", 2}, {0, "external_method_error", 6}, {0, "invalid_code", 41}, {0, "suppressed", 46}}; !slices.Equal(got, want) {
			return fmt.Errorf("all: %v, want %v", got, want)
		}
		if none, err := tx.HourlyCounts("Z", t0, t0.Add(time.Hour)); len(none) != 0 || err != nil {
			return fmt.Errorf("a project without events: %v, %v", none, err)
		}
		sc, _ := tx.SuppressedCounts("", "", t0, t0.Add(time.Hour), 1000)
		if len(sc) != 3 || !sc[0].Hour.Equal(hour.Add(time.Hour)) || sc[0].N != 2 {
			return fmt.Errorf("suppressed: %+v", sc)
		}
		var none, six bool
		for _, c := range sc[1:] {
			none = none || (c.ProjectID == "" && c.N == 40 && c.Method == "magic_link" && c.Action == "verify" && c.FailureCode == "invalid_code" && c.Hour.Equal(hour))
			six = six || (c.ProjectID == "A" && c.N == 6 && c.Hour.Equal(hour))
		}
		if !none || !six {
			return fmt.Errorf("suppressed: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("A", "", t0, t0, 1000); len(sc) != 1 || sc[0].N != 6 {
			return fmt.Errorf("A suppressed in hour 0: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("", "invalid_code", t0, t0.Add(time.Hour), 1000); len(sc) != 1 || sc[0].N != 40 {
			return fmt.Errorf("invalid_code suppressed: %+v", sc)
		}
		// A limit keeps the newest hours.
		if sc, _ := tx.SuppressedCounts("", "", t0, t0.Add(time.Hour), 2); len(sc) != 2 || !sc[0].Hour.Equal(hour.Add(time.Hour)) || sc[0].N != 2 {
			return fmt.Errorf("limit 2: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("A", "", t0, t0.Add(time.Hour), 1); len(sc) != 1 || !sc[0].Hour.Equal(hour.Add(time.Hour)) || sc[0].N != 2 {
			return fmt.Errorf("A, limit 1: %+v", sc)
		}
		return nil
	})
	err := db.Update(ctx, func(tx store.Tx) error {
		return tx.AddSuppressed(store.SuppressedCount{Hour: t0, ProjectID: "A\x00B", N: 1})
	})
	if !errors.Is(err, store.ErrBadEventField) {
		t.Fatalf("NUL in a project id: %v", err)
	}
}
