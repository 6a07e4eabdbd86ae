package postgres

import (
	"context"
	"sync"
	"testing"
	"time"

	"latchkey/store"
)

// TestLockWaitsOffPool: transactions waiting for a name (txn.Lock) hold
// no connection while they wait, so more waiters than the pool has
// connections leave it free for everything else; once the holder
// commits, they all run.
func TestLockWaitsOffPool(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	ctx := context.Background()
	locked, release := make(chan struct{}), make(chan struct{})
	let := sync.OnceFunc(func() { close(release) })
	defer let() // a failing test lets the holder go too
	var wg sync.WaitGroup
	run := func(hold bool) {
		defer wg.Done()
		err := db.Update(ctx, func(tx store.Tx) error {
			if err := tx.Lock("pool-test"); err != nil {
				return err
			}
			if hold {
				close(locked)
				<-release
			}
			return tx.AddAuthEvent(&store.AuthEvent{ProjectID: "p", CreatedAt: time.Now()})
		})
		if err != nil {
			t.Error(err)
		}
	}
	wg.Add(1)
	go run(true)
	<-locked
	waiters := 2 * int(db.pool.Config().MaxConns)
	before := lockBusy.Load()
	for range waiters {
		wg.Add(1)
		go run(false)
	}
	// Every waiter has found the name held at least twice.
	for lockBusy.Load()-before < int64(2*waiters) {
		time.Sleep(time.Millisecond)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.View(rctx, func(tx store.Tx) error { _, err := tx.AuthEventCount("p"); return err }); err != nil {
		t.Fatalf("a read while %d transactions waited for a name (pool of %d): %v", waiters, db.pool.Config().MaxConns, err)
	}
	let()
	wg.Wait()
	var n int
	db.View(ctx, func(tx store.Tx) (err error) { n, err = tx.AuthEventCount("p"); return err })
	if n != waiters+1 {
		t.Fatalf("%d events, want %d", n, waiters+1)
	}
}

// TestLockFirst: Lock after a read is an error (the advisory lock must
// be the transaction's first statement, or a rerun could not see what
// the holder committed).
func TestLockFirst(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	err := db.Update(context.Background(), func(tx store.Tx) error {
		if _, err := tx.AuthEventCount("p"); err != nil {
			return err
		}
		return tx.Lock("lock-test")
	})
	if err == nil {
		t.Fatal("Lock after a read: no error")
	}
}
