package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"latchkey/store"
)

// Tests of the authentication events that are about PostgreSQL: the
// counter rows split by backend, so that concurrent sign-ins do not
// conflict, and folded by the sweep. What every engine does (round
// trips, filters, the cap, the sweeps, the counters) is storetest's
// suites.

// addEvents adds evs in one transaction.
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

// TestConcurrentSignIns: sign-ins of one project from many goroutines,
// each recording its event in a serializable transaction beside another
// write, all commit, and the counters and kept numbers are exact: the
// counter rows are split by backend, so no two transactions update one.
func TestConcurrentSignIns(t *testing.T) {
	t.Parallel()
	db, _ := openStore(t, store.Options{})
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
	view(t, db, func(tx store.Tx) error {
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
		update(t, db, func(tx store.Tx) (err error) {
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
	view(t, db, func(tx store.Tx) error {
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
