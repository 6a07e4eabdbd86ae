package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/store"
)

// Hints tests what a transaction may tell the store (store.Hints):
// prefetches change no answer, and Lock runs the transactions that take
// one name one at a time.
func (s Suite) Hints(t *testing.T) {
	parallel(t, []subtest{
		{"Prefetch", s.hintsPrefetch},
		{"Lock", s.hintsLock},
	})
}

// hintsPrefetch: reads after a prefetch answer what they answer without
// one: found, not found, and what the transaction wrote in between.
func (s Suite) hintsPrefetch(t *testing.T) {
	db := s.open(t, store.Options{})
	code := &store.Code{Kind: "otp", ProjectID: "p", Subject: "a@example.com", Hash: []byte{1}, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	history := &store.Throttle{Sends: []time.Time{t0}}
	ada := &store.User{ID: "u1", ProjectID: "p", Email: "ada@example.com", CreatedAt: t0}
	update(t, db, func(tx store.Tx) error {
		if err := tx.PutCode(code); err != nil {
			return err
		}
		if err := tx.PutThrottle("otp", "p", "a@example.com", history); err != nil {
			return err
		}
		return tx.PutUser(ada)
	})
	for _, write := range []bool{false, true} {
		update(t, db, func(tx store.Tx) error {
			tx.PrefetchCode("otp", "p", "a@example.com")
			tx.PrefetchCode("otp", "p", "b@example.com")
			tx.PrefetchThrottle("otp", "p", "a@example.com")
			tx.PrefetchThrottle("otp", "p", "b@example.com")
			tx.PrefetchUsers("p", []string{"ada@example.com", "bob@example.com", "bob@example.com"})
			bob := &store.User{ID: "u2", ProjectID: "p", Email: "bob@example.com", CreatedAt: t0}
			if write {
				// Written after the prefetches, before the reads.
				if err := tx.PutCode(&store.Code{Kind: "otp", ProjectID: "p", Subject: "b@example.com", Hash: []byte{2}}); err != nil {
					return err
				}
				if err := tx.PutUser(bob); err != nil {
					return err
				}
			}
			got, err := tx.Code("otp", "p", "a@example.com")
			if err != nil {
				return err
			}
			if err := diff("prefetched code", got, code); err != nil {
				return err
			}
			if _, err := tx.Code("otp", "p", "b@example.com"); write != (err == nil) {
				return fmt.Errorf("prefetched code b (written: %v): %v", write, err)
			}
			th, err := tx.Throttle("otp", "p", "a@example.com")
			if err != nil {
				return err
			}
			if err := diff("prefetched history", th, history); err != nil {
				return err
			}
			if th, err := tx.Throttle("otp", "p", "b@example.com"); err != nil || len(th.Sends) != 0 {
				return fmt.Errorf("prefetched empty history: %+v, %v", th, err)
			}
			u, err := tx.UserByEmail("p", "ada@example.com")
			if err != nil {
				return err
			}
			if err := diff("prefetched user", u, ada); err != nil {
				return err
			}
			u, err = tx.UserByEmail("p", "bob@example.com")
			if write {
				if err != nil {
					return err
				}
				return diff("user written after its prefetch", u, bob)
			}
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("prefetched user not there: %+v, %v", u, err)
			}
			return nil
		})
	}
}

// hintsLock: write transactions that take the same name run one at a
// time, and each sees what the one before it committed: six waiters
// queue behind a holder and, once it commits, each runs alone and sees
// every event committed before it. A failed function lets go of the
// name too.
func (s Suite) hintsLock(t *testing.T) {
	db := s.open(t, store.Options{})
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
}
