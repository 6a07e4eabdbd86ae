package bolt

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"latchkey/store"
)

// groupCommit gathers concurrent Batch calls into shared transactions.
// One goroutine, the committer, owns the commit loop: Open starts it and
// Close stops it. A caller queues its function, wakes the committer and
// waits for the answer of the one commit that holds its function, so no
// caller is kept past its own commit (with a leader chosen among the
// callers, the leader ran commits for others until the queue was empty).
// There is no timer: while one commit (and its fsync) runs, new calls
// queue, and the next commit takes all of them. Batch sizes follow the
// load by themselves.
//
// Before it takes the queue, the committer lets the goroutines that are
// ready to run go first (runtime.Gosched), so the requests already under
// way reach their Batch calls and share the commit. Without it, on one
// processor (GOMAXPROCS=1, a 1-vCPU machine), the committer ran as soon
// as the first caller woke it (a goroutine woken by a channel runs
// next), so a commit held 1.3 to 1.8 writes against 19 to 24 on two, and
// each commit's two fdatasync calls kept the only processor: the runtime
// hands a processor on from a goroutine in a system call only when its
// monitor next looks (20 µs to 10 ms later, the longer the idler it
// was), and a trace showed 244 of 286 of those calls keeping it, idle,
// while the callers just answered and the requests behind them waited.
// One CPU then signed in a sixth as many users as two; with the yield,
// 0.56 as many (docs/performance.md, One processor). An idle server pays
// nothing: with nobody else ready, the committer goes on at once.
//
// It yields on one processor only. With two or more, the writers reach
// their Batch calls while a commit runs anyway, and a yield put the
// committer behind every runnable goroutine: commits grew from 9.5 to
// 12.4 sign-ins each in the million-user growth benchmark, for the same
// rate, and the writes' p99 and p99.9 from 28 and 37 ms to 38 and 55 ms.
type groupCommit struct {
	mu      sync.Mutex
	pending []*batchCall
	closed  bool

	wake   chan struct{} // capacity 1: a pending wake-up
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type batchCall struct {
	fn      func(store.Tx) error
	err     chan error
	start   time.Time     // when Batch was called (set with ObserveBatch)
	durable time.Duration // from start to the commit that held fn
}

// errSolo tells a caller its function failed inside a shared
// transaction and must be run on its own to get its own error.
var errSolo = errors.New("batch function failed; run it alone")

// startCommitter starts the committer goroutine; Open calls it.
func (db *DB) startCommitter() {
	g := &db.group
	ctx, cancel := context.WithCancel(context.Background())
	g.wake = make(chan struct{}, 1)
	g.cancel = cancel
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		db.committer(ctx)
	}()
}

// stopCommitter refuses new Batch calls, lets the committer commit those
// already queued, and waits for it to return.
func (db *DB) stopCommitter() {
	g := &db.group
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	if g.cancel != nil {
		g.cancel()
		g.wg.Wait()
	}
}

// Batch runs fn in a read-write transaction shared with other concurrent
// Batch calls (group commit). fn may run more than once, so every effect
// it has must be inside tx. It returns fn's error, or the commit's, or
// ErrClosed after Close. It returns as soon as the commit that holds fn
// is done. A ctx already done refuses the call before it is queued.
func (db *DB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &batchCall{fn: fn, err: make(chan error, 1)}
	if db.batchWait != nil {
		c.start = time.Now()
		defer func() { db.batchWait(c.durable, time.Since(c.start)) }()
	}
	g := &db.group
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return store.ErrClosed
	}
	g.pending = append(g.pending, c)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
	err := <-c.err
	if err == errSolo {
		err = db.Update(context.WithoutCancel(ctx), fn)
		c.durable = time.Since(c.start)
	}
	return err
}

// committer commits queued calls whenever woken, until ctx ends; then it
// commits what is still queued and returns.
func (db *DB) committer(ctx context.Context) {
	g := &db.group
	for {
		select {
		case <-ctx.Done():
			db.commitPending()
			return
		case <-g.wake:
		}
		db.commitPending()
	}
}

// commitPending commits queued calls, one transaction per round, until
// none are left.
func (db *DB) commitPending() {
	g := &db.group
	for {
		if runtime.GOMAXPROCS(0) == 1 {
			runtime.Gosched() // see groupCommit
		}
		g.mu.Lock()
		calls := g.pending
		g.pending = nil
		g.mu.Unlock()
		if len(calls) == 0 {
			return
		}
		db.commit(calls)
	}
}

// commit runs calls in one transaction. A failing call is taken out and
// told to run alone; the rest are retried without it.
func (db *DB) commit(calls []*batchCall) {
	for len(calls) > 0 {
		failed := -1
		err, storeErr := db.update(func(tx store.Tx) error {
			for i, c := range calls {
				if err := store.SafeCall(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			calls[failed].err <- errSolo
			calls = append(calls[:failed], calls[failed+1:]...)
			continue
		}
		if storeErr { // every call's write failed
			db.health.failed(err, len(calls))
			err = fmt.Errorf("%w: %w", store.ErrWriteFailed, err)
		}
		if db.batchWait != nil {
			for _, c := range calls {
				c.durable = time.Since(c.start)
			}
		}
		for _, c := range calls {
			c.err <- err
		}
		return
	}
}

// BatchQueued reports whether Batch calls wait for the committer (for
// tests that line calls up behind a running commit).
func (db *DB) BatchQueued() bool {
	g := &db.group
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.pending) > 0
}
