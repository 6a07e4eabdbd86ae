package postgres

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"latchkey/store"
)

// The group commit of Batch calls (batch.go).

// holdCommitters starts one Batch call per committer, each held inside
// its function, and returns the function that lets them go and checks
// that they committed.
func holdCommitters(t *testing.T, db *DB) (release func()) {
	t.Helper()
	n := db.group.committers
	held, let, answers := make(chan struct{}), make(chan struct{}), make(chan error, n)
	for range n {
		first := true
		go func() {
			answers <- db.Batch(bg, func(store.Tx) error {
				if first { // a function may run twice: hold only the first run
					first = false
					held <- struct{}{}
					<-let
				}
				return nil
			})
		}()
		<-held
	}
	return func() {
		t.Helper()
		close(let)
		for range n {
			if err := <-answers; err != nil {
				t.Fatalf("a held call: %v", err)
			}
		}
	}
}

// addEvent returns a Batch function adding an event of project "p".
func addEvent(id string, at int64) func(store.Tx) error {
	return func(tx store.Tx) error {
		return tx.AddAuthEvent(&store.AuthEvent{ID: id, ProjectID: "p", CreatedAt: time.Unix(at, 0)})
	}
}

// waitPending waits (polling, for at most 10 s) until n Batch calls wait
// for a committer.
func waitPending(t *testing.T, db *DB, n int) {
	t.Helper()
	within(t, 10*time.Second, fmt.Sprintf("%d calls queued", n), func() bool {
		db.group.mu.Lock()
		defer db.group.mu.Unlock()
		return len(db.group.pending) == n
	})
}

// TestGroupShares: calls made while every committer is busy wait and
// then share one transaction; a function that fails or panics in it is
// run again alone, so that its error is its own and its panic reaches
// its caller, and the others commit without it.
func TestGroupShares(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	if db.group.committers != 3 {
		t.Fatalf("committers of the default pool (4 connections): %d, want 3", db.group.committers)
	}
	release := holdCommitters(t, db)

	txids := make([]int64, maxBatch)
	errs := make([]error, maxBatch)
	var wg sync.WaitGroup
	for i := range maxBatch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("panic: %v", p)
				}
			}()
			errs[i] = db.Batch(bg, func(tx store.Tx) error {
				switch i {
				case 2:
					return errors.New("call 2 refuses")
				case 5:
					panic("call 5 panics")
				}
				if err := addEvent(fmt.Sprintf("ev%d", i), int64(i))(tx); err != nil {
					return err
				}
				return tx.(*txn).one(`SELECT txid_current()`, nil, &txids[i])
			})
		}()
		waitPending(t, db, i+1) // queued in order
	}
	release()
	wg.Wait()
	var shared int64
	for i, err := range errs {
		switch i {
		case 2:
			if err == nil || err.Error() != "call 2 refuses" {
				t.Errorf("call 2: %v, want its own error", err)
			}
		case 5:
			if err == nil || err.Error() != "panic: call 5 panics" {
				t.Errorf("call 5: %v, want its panic in its own goroutine", err)
			}
		default:
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
			if shared == 0 {
				shared = txids[i]
			}
			if txids[i] != shared {
				t.Errorf("call %d committed in transaction %d, call 0 in %d: not shared", i, txids[i], shared)
			}
		}
	}
	var n int
	if err := db.pool.QueryRow(bg, `SELECT count(*) FROM auth_events WHERE project_id = 'p'`).Scan(&n); err != nil || n != maxBatch-2 {
		t.Fatalf("events: %d %v, want %d", n, err, maxBatch-2)
	}
}

// TestGroupConflictRunsAlone: of two committers' transactions that each
// read what the other writes (a serialization failure for one of them
// at its commit), the loser runs again alone: no other committer's
// transaction runs meanwhile.
func TestGroupConflictRunsAlone(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	var mu sync.Mutex
	runs := map[string]int{}
	aloneOnRerun := map[string]bool{}
	// Both read before either writes: a reads, then b (on a second
	// committer: a's holds a) reads, then both write.
	aRead, bRead := make(chan struct{}), make(chan struct{})
	put := func(subject string, readDone, other chan struct{}) error {
		return db.Batch(bg, func(tx store.Tx) error {
			mu.Lock()
			runs[subject]++
			run := runs[subject]
			mu.Unlock()
			if run > 1 {
				alone := !db.group.gate.TryRLock()
				if !alone {
					db.group.gate.RUnlock()
				}
				mu.Lock()
				aloneOnRerun[subject] = alone
				mu.Unlock()
			}
			th, err := tx.Throttle("send", "p", subject)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if run == 1 {
				close(readDone)
				if other != nil {
					<-other
				}
			}
			if th == nil {
				th = &store.Throttle{}
			}
			th.Sends = append(th.Sends, time.Unix(1, 0))
			return tx.PutThrottle("send", "p", subject, th)
		})
	}
	errs := make(chan error, 2)
	go func() { errs <- put("a@example.com", aRead, bRead) }()
	<-aRead
	go func() { errs <- put("b@example.com", bRead, nil) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	reruns := 0
	for s, n := range runs {
		if n > 1 {
			reruns++
			if !aloneOnRerun[s] {
				t.Errorf("%s ran again beside another committer's transaction", s)
			}
		}
	}
	if reruns != 1 {
		t.Fatalf("runs %v: want exactly one transaction run again after the conflict", runs)
	}
	var n int
	if err := db.pool.QueryRow(bg, `SELECT count(*) FROM throttles WHERE project_id = 'p'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("throttles: %d %v, want 2", n, err)
	}
}

// TestGroupClose: calls queued when Close begins commit; later calls get
// ErrClosed.
func TestGroupClose(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	release := holdCommitters(t, db)
	queued := make(chan error, 1)
	go func() {
		queued <- db.Batch(bg, addEvent("queued", 1))
	}()
	waitPending(t, db, 1)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	within(t, 10*time.Second, "Close refusing new calls", func() bool {
		db.group.mu.Lock()
		defer db.group.mu.Unlock()
		return db.group.closed
	})
	if err := db.Batch(bg, func(store.Tx) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Batch after Close began: %v, want ErrClosed", err)
	}
	release()
	if err := <-queued; err != nil {
		t.Fatalf("the call queued before Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// TestGroupCallerLeaves: a caller whose context ends while its shared
// transaction waits (here for a row another session locks) gets its
// context's error at once and writes nothing; the other calls of the
// transaction run again without it and commit.
func TestGroupCallerLeaves(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	mustUpdate(t, db, func(tx store.Tx) error {
		return tx.PutThrottle("send", "p", "locked@example.com", &store.Throttle{Sends: []time.Time{time.Unix(5, 0)}})
	})
	lock, err := db.pool.Begin(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(bg)
	if _, err := lock.Exec(bg, `SELECT 1 FROM throttles WHERE subject = 'locked@example.com' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	release := holdCommitters(t, db)
	put := func(ctx context.Context, subject string, done chan<- error) {
		done <- db.Batch(ctx, func(tx store.Tx) error {
			return tx.PutThrottle("send", "p", subject, &store.Throttle{Sends: []time.Time{time.Unix(1, 0)}})
		})
	}
	short, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	defer cancel()
	leaving, staying := make(chan error, 1), make(chan error, 1)
	go put(short, "locked@example.com", leaving) // first: its write waits for the lock
	waitPending(t, db, 1)
	go put(bg, "free@example.com", staying)
	waitPending(t, db, 2)
	release()
	select {
	case err := <-leaving:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the caller whose deadline passed: %v, want DeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the caller whose deadline passed is still held")
	}
	select {
	case err := <-staying:
		if err != nil {
			t.Fatalf("the other call: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the other call is held by the locked row")
	}
	lock.Rollback(bg)
	var first int64
	if err := db.pool.QueryRow(bg, `SELECT sends[1] FROM throttles WHERE subject = 'locked@example.com'`).Scan(&first); err != nil || first != time.Unix(5, 0).UnixNano() {
		t.Fatalf("the locked history: first send %d %v, want the one before (the leaving caller wrote nothing)", first, err)
	}
}

// TestGroupGateFreeBetweenRetries: a transaction that keeps losing
// conflicts holds the gate only while it runs, not while it waits for
// its next attempt: other Batch calls go on meanwhile.
func TestGroupGateFreeBetweenRetries(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	var runs atomic.Int32
	losing := make(chan error, 1)
	go func() {
		losing <- db.Batch(ctx, func(store.Tx) error {
			runs.Add(1)
			return &pgconn.PgError{Code: "40001", Message: "always loses"}
		})
	}()
	within(t, 10*time.Second, "the losing call retrying alone", func() bool { return runs.Load() >= 3 })
	start := time.Now()
	if err := db.Batch(bg, addEvent("beside", 1)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("a call beside the losing one took %v", d)
	}
	cancel()
	if err := <-losing; !errors.Is(err, context.Canceled) {
		t.Fatalf("the losing call: %v, want Canceled", err)
	}
}

// TestGroupPanicAlone: a function that panics alone on a committer
// panics in its caller's goroutine, as in a shared transaction.
func TestGroupPanicAlone(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	got := func() (p any) {
		defer func() { p = recover() }()
		db.Batch(bg, func(store.Tx) error { panic("alone") })
		return nil
	}()
	if got != "alone" {
		t.Fatalf("recovered %v, want the function's panic", got)
	}
}

// TestGroupGoexit: a function that ends its goroutine (runtime.Goexit,
// as t.Fatal does) inside a shared transaction, after another call of
// the round failed and was taken out, does not take the process down:
// every caller is answered, and later calls still commit.
func TestGroupGoexit(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	release := holdCommitters(t, db)
	fns := []func(store.Tx) error{
		func(store.Tx) error { return errors.New("refuses") },
		func(store.Tx) error { return nil },
		func(store.Tx) error { runtime.Goexit(); return nil },
	}
	answers := make(chan error, len(fns))
	for i, fn := range fns {
		go func() { answers <- db.Batch(bg, fn) }()
		waitPending(t, db, i+1)
	}
	release()
	for range fns {
		select {
		case <-answers:
		case <-time.After(10 * time.Second):
			t.Fatal("a caller was never answered")
		}
	}
	if err := db.Batch(bg, addEvent("after", 1)); err != nil {
		t.Fatal(err)
	}
}
