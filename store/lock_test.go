package store_test

import (
	"context"
	"errors"
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
	seen := make(chan int, waiters)
	for range waiters {
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
				seen <- n
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
	close(seen)
	got := map[int]bool{}
	for n := range seen {
		got[n] = true
	}
	for n := 1; n <= waiters; n++ {
		if !got[n] {
			t.Fatalf("waiters saw %v events before their own; want each of 1..%d once (one at a time, each after the previous commit)", got, waiters)
		}
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
