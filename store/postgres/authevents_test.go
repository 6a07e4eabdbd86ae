package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"latchkey/store"
)

// addEvents adds evs in one transaction.
func addEvents(t *testing.T, db store.DB, evs []*store.AuthEvent) {
	t.Helper()
	evUpdate(t, db, func(tx store.Tx) error {
		for _, e := range evs {
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// listEvents returns the ids of every event matching f, newest first.
func listEvents(t *testing.T, db store.DB, f store.AuthEventFilter) []string {
	t.Helper()
	var ids []string
	evView(t, db, func(tx store.Tx) error {
		evs, _, err := tx.AuthEvents(f)
		for _, e := range evs {
			ids = append(ids, e.ID)
		}
		return err
	})
	return ids
}

// TestAuthEventRoundTrip: every field comes back byte for byte (an
// email, IP and user agent PostgreSQL's text would refuse included), Pos
// is set, and a NUL in the project or failure code is refused.
func TestAuthEventRoundTrip(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	e := &store.AuthEvent{ID: "0193-e", ProjectID: "p", UserID: "u", Email: odd, Method: "email_otp", Action: "verify",
		FailureCode: "invalid_code", IP: "::1%\xff", UserAgent: "UA \xc3(" + odd, CreatedAt: evT0}
	addEvents(t, db, []*store.AuthEvent{e})
	if e.Pos.Nanos != evT0.UnixNano() || e.Pos.Seq == 0 {
		t.Fatalf("Pos = %+v", e.Pos)
	}
	evView(t, db, func(tx store.Tx) error {
		evs, more, err := tx.AuthEvents(store.AuthEventFilter{Limit: 10})
		if err != nil || more || len(evs) != 1 {
			return fmt.Errorf("AuthEvents: %d, %v, %v", len(evs), more, err)
		}
		if !evs[0].CreatedAt.Equal(e.CreatedAt) {
			return fmt.Errorf("created %v, want %v", evs[0].CreatedAt, e.CreatedAt)
		}
		evs[0].CreatedAt = e.CreatedAt
		if !reflect.DeepEqual(evs[0], e) {
			return fmt.Errorf("got %#v, want %#v", evs[0], e)
		}
		return nil
	})
	for _, bad := range []*store.AuthEvent{{ProjectID: "a\x00b"}, {FailureCode: "x\x00"}} {
		err := db.Update(context.Background(), func(tx store.Tx) error { return tx.AddAuthEvent(bad) })
		if !errors.Is(err, store.ErrBadEventField) {
			t.Errorf("AddAuthEvent(%q, %q): %v, want ErrBadEventField", bad.ProjectID, bad.FailureCode, err)
		}
	}
}

// TestAuthEventQueries checks every filter, walked page by page, against
// a plain filter over all events.
func TestAuthEventQueries(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	projects := []string{"", "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222", "p3"}
	codes := []string{"", "invalid_code", "expired", "validation_error"}
	var all []*store.AuthEvent
	for i := range 300 {
		e := &store.AuthEvent{ID: fmt.Sprint("e", i), ProjectID: projects[rng.IntN(len(projects))], Method: "email_otp", Action: "verify",
			// Several events share an instant: the sequence orders them.
			CreatedAt: evT0.Add(time.Duration(i/3) * time.Second)}
		if c := codes[rng.IntN(len(codes))]; c == "" {
			e.Success = true
		} else {
			e.FailureCode = c
		}
		all = append(all, e)
	}
	addEvents(t, db, all[:150])
	addEvents(t, db, all[150:])
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
		for _, limit := range []int{0, 1, 7, 1000} {
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
				if pages > 400 {
					t.Fatal("pagination does not end")
				}
				var evs []*store.AuthEvent
				var more bool
				evView(t, db, func(tx store.Tx) (err error) {
					evs, more, err = tx.AuthEvents(f)
					return err
				})
				if evs == nil || (limit > 0 && len(evs) > limit) || (more && len(evs) != limit) {
					t.Fatalf("%q/%q: page of %d events (limit %d), more=%v", f.ProjectID, f.FailureCode, len(evs), limit, more)
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
				t.Fatalf("%q/%q/%d: got %d events, want %d", f.ProjectID, f.FailureCode, limit, len(got), len(want))
			}
		}
	}
	// Before a time: events older than it.
	if ids := listEvents(t, db, store.AuthEventFilter{Before: store.PosBefore(evT0.Add(time.Second)), Limit: 10}); fmt.Sprint(ids) != "[e2 e1 e0]" {
		t.Fatalf("before evT0+1s: %v", ids)
	}
	// A position past every sequence number.
	if ids := listEvents(t, db, store.AuthEventFilter{Before: store.EventPos{Nanos: evT0.UnixNano(), Seq: 1<<64 - 1}}); fmt.Sprint(ids) != "[e2 e1 e0]" {
		t.Fatalf("before (evT0, max): %v", ids)
	}
}

// TestAuthEventCap: a project keeps at most the cap, losing its oldest
// events first; other projects and the events without one keep theirs;
// counters keep counting. A lowered cap trims four per new event, and
// TrimAuthEvents the rest.
func TestAuthEventCap(t *testing.T) {
	t.Parallel()
	url := newDatabase(t)
	open := func(cap int) store.DB {
		db, _, err := store.Open(context.Background(), url, store.Options{MaxEventsPerProject: cap})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db := open(5)
	var evs []*store.AuthEvent
	for i := range 12 {
		evs = append(evs, &store.AuthEvent{ID: fmt.Sprint("a", i), ProjectID: "A", Success: i%3 == 0, FailureCode: []string{"", "expired", "invalid_code"}[i%3],
			CreatedAt: evT0.Add(time.Duration(i) * time.Minute)})
	}
	evs = append(evs, &store.AuthEvent{ID: "b0", ProjectID: "B", Success: true, CreatedAt: evT0})
	evs = append(evs, &store.AuthEvent{ID: "n0", FailureCode: "invalid_code", CreatedAt: evT0})
	addEvents(t, db, evs[:3])
	addEvents(t, db, evs[3:])
	if ids := listEvents(t, db, store.AuthEventFilter{ProjectID: "A"}); fmt.Sprint(ids) != "[a11 a10 a9 a8 a7]" {
		t.Fatalf("A keeps %v", ids)
	}
	counts := func(db store.DB, scope string) (n int) {
		evView(t, db, func(tx store.Tx) (err error) { n, err = tx.AuthEventCount(scope); return err })
		return n
	}
	if counts(db, "A") != 5 || counts(db, "B") != 1 || counts(db, "") != 1 || counts(db, "C") != 0 {
		t.Fatalf("A %d, B %d, none %d", counts(db, "A"), counts(db, "B"), counts(db, ""))
	}
	evView(t, db, func(tx store.Tx) error {
		hc, err := tx.HourlyCounts("A", evT0, evT0)
		var sum int64
		for _, c := range hc {
			sum += c.N
		}
		if sum != 12 {
			return fmt.Errorf("hourly counters of A sum to %d, want 12", sum)
		}
		return err
	})

	// Lowering the cap: each new event trims a few, TrimAuthEvents the
	// rest.
	db = open(2)
	addEvents(t, db, []*store.AuthEvent{{ID: "a12", ProjectID: "A", Success: true, CreatedAt: evT0.Add(time.Hour)}})
	if n := counts(db, "A"); n != 2 {
		t.Fatalf("after one add under cap 2: %d", n)
	}
	db = open(1)
	evView(t, db, func(tx store.Tx) error {
		if _, _, over, err := tx.EventSweepDue(evT0.Add(-time.Hour)); !over || err != nil {
			return fmt.Errorf("EventSweepDue over the cap: %v, %v", over, err)
		}
		return nil
	})
	evUpdate(t, db, func(tx store.Tx) error {
		if n, err := tx.TrimAuthEvents(1000); n != 1 || err != nil {
			return fmt.Errorf("trimmed %d, %v; want 1", n, err)
		}
		return nil
	})
	if ids := listEvents(t, db, store.AuthEventFilter{ProjectID: "A"}); fmt.Sprint(ids) != "[a12]" {
		t.Fatalf("A keeps %v", ids)
	}
}

// TestSweepAuthEvents: events older than the cutoff go, oldest first, in
// bounded transactions, with their kept numbers; counters of old hours go
// too, and EventSweepDue tells when anything is left to do.
func TestSweepAuthEvents(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	var evs []*store.AuthEvent
	for i := range 50 {
		evs = append(evs, &store.AuthEvent{ID: fmt.Sprint(i), ProjectID: []string{"A", "B", ""}[i%3], Success: i%2 == 0, FailureCode: map[bool]string{true: "", false: "expired"}[i%2 == 0],
			CreatedAt: evT0.Add(time.Duration(i) * time.Hour)})
	}
	addEvents(t, db, evs)
	evUpdate(t, db, func(tx store.Tx) error {
		return tx.AddSuppressed(store.SuppressedCount{Hour: evT0, ProjectID: "A", Method: "magic_link", Action: "verify", FailureCode: "invalid_code", N: 3})
	})
	cutoff := evT0.Add(20 * time.Hour)
	due := func() (d [3]bool) {
		evView(t, db, func(tx store.Tx) (err error) {
			d[0], d[1], d[2], err = tx.EventSweepDue(cutoff)
			return err
		})
		return d
	}
	if d := due(); !d[0] || !d[1] || d[2] {
		t.Fatalf("EventSweepDue = %v, want events and counters", d)
	}
	total := 0
	for {
		var n int
		evUpdate(t, db, func(tx store.Tx) (err error) { n, err = tx.SweepAuthEvents(cutoff, 7); return err })
		total += n
		if n < 7 {
			break
		}
	}
	if total != 20 {
		t.Fatalf("swept %d, want 20", total)
	}
	evUpdate(t, db, func(tx store.Tx) error {
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
		hc, _ := tx.HourlyCounts("", evT0, cutoff.Add(-time.Hour))
		sc, _ := tx.SuppressedCounts("", "", evT0, cutoff, 1000)
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
	evUpdate(t, db, func(tx store.Tx) error {
		if n, err := tx.SweepAuthEvents(cutoff, 0); n != 0 || err != nil {
			return fmt.Errorf("max 0: %d, %v", n, err)
		}
		return nil
	})
}

// TestHourlyAndSuppressedCounts: counters per hour and outcome, for a
// project and for all projects; suppressed failures count in both and in
// their own counters.
func TestHourlyAndSuppressedCounts(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	addEvents(t, db, []*store.AuthEvent{
		{ProjectID: "A", Success: true, CreatedAt: evT0},
		{ProjectID: "A", FailureCode: "expired", CreatedAt: evT0.Add(time.Minute)},
		{ProjectID: "A", FailureCode: "expired", CreatedAt: evT0.Add(time.Hour)},
		{ProjectID: "B", FailureCode: "expired", CreatedAt: evT0},
		{FailureCode: "invalid_code", CreatedAt: evT0},
		{ProjectID: "C", CreatedAt: evT0}, // a failure without a code
	})
	evUpdate(t, db, func(tx store.Tx) error {
		for _, c := range []store.SuppressedCount{
			{Hour: evT0.Add(30 * time.Minute), Method: "magic_link", Action: "verify", FailureCode: "invalid_code", N: 40},
			{Hour: evT0, ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 5},
			{Hour: evT0.Add(time.Hour), ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 2},
			{Hour: evT0, ProjectID: "A", Method: "external", Action: "confirm", FailureCode: "external_method_error", N: 1},
			{Hour: evT0, ProjectID: "A", N: 0}, // nothing
		} {
			if err := tx.AddSuppressed(c); err != nil {
				return err
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
			out = append(out, row{int(c.Hour.Sub(evT0.Truncate(time.Hour)) / time.Hour), k, c.N})
		}
		return out
	}
	evView(t, db, func(tx store.Tx) error {
		a, _ := tx.HourlyCounts("A", evT0, evT0.Add(time.Hour))
		if got, want := rows(a), []row{{0, "+", 1}, {0, "expired", 1}, {0, "external_method_error", 6}, {0, "suppressed", 6},
			{1, "expired", 1}, {1, "external_method_error", 2}, {1, "suppressed", 2}}; !slices.Equal(got, want) {
			return fmt.Errorf("A: %v, want %v", got, want)
		}
		all, _ := tx.HourlyCounts("", evT0, evT0)
		if got, want := rows(all), []row{{0, "+", 1}, {0, "?", 1}, {0, "expired", 2}, {0, "external_method_error", 6}, {0, "invalid_code", 41}, {0, "suppressed", 46}}; !slices.Equal(got, want) {
			return fmt.Errorf("all: %v, want %v", got, want)
		}
		sc, _ := tx.SuppressedCounts("", "", evT0, evT0.Add(time.Hour), 1000)
		if len(sc) != 3 || !sc[0].Hour.Equal(evT0.Truncate(time.Hour).Add(time.Hour)) || sc[0].N != 2 {
			return fmt.Errorf("suppressed: %+v", sc)
		}
		var none, six bool
		for _, c := range sc[1:] {
			none = none || (c.ProjectID == "" && c.N == 40 && c.Method == "magic_link" && c.Action == "verify" && c.FailureCode == "invalid_code")
			six = six || (c.ProjectID == "A" && c.N == 6)
		}
		if !none || !six {
			return fmt.Errorf("suppressed: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("A", "", evT0, evT0, 1000); len(sc) != 1 || sc[0].N != 6 {
			return fmt.Errorf("A suppressed in hour 0: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("", "invalid_code", evT0, evT0.Add(time.Hour), 1000); len(sc) != 1 || sc[0].N != 40 {
			return fmt.Errorf("invalid_code suppressed: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("", "", evT0, evT0.Add(time.Hour), 2); len(sc) != 2 || sc[0].N != 2 {
			return fmt.Errorf("limit 2: %+v", sc)
		}
		if sc, _ := tx.SuppressedCounts("A", "", evT0, evT0.Add(time.Hour), 1); len(sc) != 1 || sc[0].N != 2 {
			return fmt.Errorf("A, limit 1: %+v", sc)
		}
		return nil
	})
	err := db.Update(context.Background(), func(tx store.Tx) error {
		return tx.AddSuppressed(store.SuppressedCount{Hour: evT0, ProjectID: "A\x00B", N: 1})
	})
	if !errors.Is(err, store.ErrBadEventField) {
		t.Fatalf("NUL in a project id: %v", err)
	}
}

// TestConcurrentSignIns: sign-ins of one project from many goroutines,
// each recording its event in a serializable transaction beside another
// write, all commit, and the counters and kept numbers are exact: the
// counter rows are split by backend, so no two transactions update one.
func TestConcurrentSignIns(t *testing.T) {
	t.Parallel()
	db := openEvents(t, store.Options{})
	const workers, each = 16, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	runs := make(chan int, workers*each*4)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprint(w, "-", i)
				err := db.Update(context.Background(), func(tx store.Tx) error {
					runs <- 1
					e := &store.AuthEvent{ID: id, ProjectID: "busy", Success: true, Method: "email_otp", Action: "verify", CreatedAt: time.Now()}
					if err := tx.AddAuthEvent(e); err != nil {
						return err
					}
					return tx.AppendEvent(&store.Event{ID: id, ProjectID: "busy", Type: "user.login"})
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	close(runs)
	for err := range errs {
		t.Fatal(err)
	}
	n := 0
	for range runs {
		n++
	}
	t.Logf("%d transactions ran %d times", workers*each, n)
	evView(t, db, func(tx store.Tx) error {
		kept, err := tx.AuthEventCount("busy")
		if err != nil || kept != workers*each {
			return fmt.Errorf("busy keeps %d, %v; want %d", kept, err, workers*each)
		}
		var sum int64
		hc, _ := tx.HourlyCounts("", time.Now().Add(-2*time.Hour), time.Now())
		for _, c := range hc {
			sum += c.N
		}
		if sum != workers*each {
			return fmt.Errorf("counters sum to %d, want %d", sum, workers*each)
		}
		return nil
	})
	if n > workers*each*11/10 {
		t.Errorf("%d reruns for %d sign-ins: the counters conflict", n-workers*each, workers*each)
	}
}

// TestFoldCounters: the sweep folds the counter rows of backends that are
// gone, and of past hours, into one row per key; the sums stay.
func TestFoldCounters(t *testing.T) {
	t.Parallel()
	url := newDatabase(t)
	ctx := context.Background()
	now := time.Now()
	// Events from several connections of another store, closed after.
	other, _, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				other.Update(ctx, func(tx store.Tx) error {
					return tx.AddAuthEvent(&store.AuthEvent{ID: fmt.Sprint(w, i), ProjectID: "p", Success: true, CreatedAt: now.Add(-5 * time.Hour)})
				})
			}
		}()
	}
	wg.Wait()
	other.Close()
	db, _, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	addEvents(t, db, []*store.AuthEvent{{ID: "new", ProjectID: "p", Success: true, CreatedAt: now}})
	// The backends of the closed store may take a moment to go.
	var folded int
	for try := 0; ; try++ {
		evUpdate(t, db, func(tx store.Tx) (err error) {
			folded, err = tx.SweepEventCounts(now.Add(-30*24*time.Hour), 1000)
			return err
		})
		if folded > 0 || try == 50 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if folded == 0 {
		t.Fatal("nothing folded")
	}
	evView(t, db, func(tx store.Tx) error {
		if n, _ := tx.AuthEventCount("p"); n != 21 {
			return fmt.Errorf("p keeps %d after folding, want 21", n)
		}
		hc, _ := tx.HourlyCounts("p", now.Add(-5*time.Hour), now)
		if len(hc) != 2 || hc[0].N != 20 || hc[1].N != 1 {
			return fmt.Errorf("hourly counters after folding: %+v", hc)
		}
		return nil
	})
}
