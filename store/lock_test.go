package store_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestLock: write transactions that take the same name run one at a
// time, and each sees what the one before it committed: six waiters
// queue behind a holder and, once it commits, each runs alone and sees
// every event committed before it. A failed function lets go of the name
// too. (That waiters hold no connection on PostgreSQL is
// postgres.TestLockWaitsOffPool.)
func TestLock(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	add := func(tx store.Tx) error {
		return tx.AddAuthEvent(&store.AuthEvent{ProjectID: "p", CreatedAt: time.Now()})
	}
	count := func(tx store.Tx) int {
		n, err := tx.AuthEventCount("p")
		if err != nil {
			t.Error(err)
		}
		return n
	}
	var held atomic.Bool
	held.Store(true)
	locked, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := db.Update(ctx, func(tx store.Tx) error {
			if err := tx.Lock("lock-test"); err != nil {
				return err
			}
			if err := add(tx); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}()
	<-locked

	const waiters = 6
	// Each waiter's count of the events before its own, from the run of
	// its function that committed (its last).
	seen := make([]int, waiters)
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.Update(ctx, func(tx store.Tx) error {
				if err := tx.Lock("lock-test"); err != nil {
					return err
				}
				if held.Load() {
					t.Error("a waiter took the name while another transaction held it")
				}
				n := count(tx)
				if err := add(tx); err != nil {
					return err
				}
				seen[i] = n
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	held.Store(false)
	close(release)
	wg.Wait()
	slices.Sort(seen)
	if want := []int{1, 2, 3, 4, 5, 6}; !slices.Equal(seen, want) {
		t.Fatalf("waiters' functions saw %v events before their own; want %v (one at a time, each after the previous commit)", seen, want)
	}

	refused := errors.New("refused")
	if err := db.Update(ctx, func(tx store.Tx) error {
		if err := tx.Lock("lock-test"); err != nil {
			return err
		}
		return refused
	}); !errors.Is(err, refused) {
		t.Fatalf("failing function: %v", err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.Update(rctx, func(tx store.Tx) error {
		if err := tx.Lock("lock-test"); err != nil {
			return err
		}
		return add(tx)
	}); err != nil {
		t.Fatalf("the name after a failed function: %v", err)
	}

	if storetest.Backend(t) == storetest.Postgres {
		err := db.Update(ctx, func(tx store.Tx) error {
			count(tx)
			return tx.Lock("lock-test")
		})
		if err == nil {
			t.Fatal("Lock after a read: no error")
		}
	}
}
