package postgres

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"latchkey/store"
)

// group gathers concurrent Batch calls into shared transactions (group
// commit), as the bbolt store does. A PostgreSQL transaction needs two
// round trips however little it does: its reads, then its writes with
// COMMIT (txn.later). Functions run one after another in one
// transaction send their writes with the next function's reads, so n
// sign-ins cost n+1 round trips and one COMMIT (one WAL flush) instead
// of 2n round trips and n.
//
// At most committers transactions of Batch calls run at once, each on a
// goroutine of its own (a committer) that takes the calls waiting, up to
// maxBatch, commits them and goes on until none wait. There is no timer:
// a call made while every committer is busy waits for the next round,
// and under light load a call runs at once, alone, as Update would run
// it. A function runs on a committer's goroutine, not its caller's.
type group struct {
	mu         sync.Mutex
	pending    []*batchCall
	committers int // at most at work at once (Open: committersFor)
	running    int // at work
	closed     bool
	wg         sync.WaitGroup
	// gate: a committer's transaction holds it shared; one run again
	// after a serialization conflict holds it alone (gated).
	gate sync.RWMutex
}

// batchCall is one Batch call: its function, its caller's context (the
// transaction's when it runs alone; a shared transaction ends with any
// of its callers', roundContext) and where its answer goes.
type batchCall struct {
	ctx  context.Context
	fn   func(store.Tx) error
	done chan error
}

// maxBatch bounds the calls of one transaction: its functions run one
// after another, so each waits for all of them, and a serialization
// conflict runs them all again. With three committers, 8 gave the best
// sign-in rate on two cores (16 and 32 fewer: more conflicts; 4 more
// round trips).
const maxBatch = 8

// committersFor returns how many committers a pool of maxConns
// connections has: one connection is left for reads, the replica's
// background work and Update, and no more than three, because
// concurrent sign-ins on small tables conflict (gated).
func committersFor(maxConns int32) int {
	return int(min(3, max(1, maxConns-1)))
}

// errSolo tells a caller its function failed inside a shared
// transaction, or the shared commit failed, and must be run on its own
// to get its own answer.
var errSolo = errors.New("batch function failed; run it alone")

// Batch runs fn in a serializable transaction shared with other
// concurrent Batch calls (group commit, see group). fn may run more than
// once. It returns fn's error, which is fn's own (a function that fails
// in a shared transaction is run again alone, and the others commit
// without it), or the commit's, or store.ErrClosed after Close. A ctx
// already done refuses the call before it is queued.
func (db *DB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	c := &batchCall{ctx: ctx, fn: fn, done: make(chan error, 1)}
	g := &db.group
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return store.ErrClosed
	}
	g.pending = append(g.pending, c)
	if g.running < max(1, g.committers) { // 0: a DB made by hand in a test
		db.startCommitter()
	}
	g.mu.Unlock()
	err := <-c.done
	if err == errSolo {
		err = db.Update(context.WithoutCancel(ctx), fn)
	}
	var p store.Panicked
	if errors.As(err, &p) {
		panic(p.Value) // in the caller's goroutine, as Update would
	}
	if db.opt.ObserveBatch != nil {
		d := time.Since(start)
		db.opt.ObserveBatch(d, d)
	}
	return err
}

// stopGroup refuses new Batch calls and waits for the committers to
// commit those already queued (Close).
func (db *DB) stopGroup() {
	g := &db.group
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// startCommitter starts a committer; g.mu is held.
func (db *DB) startCommitter() {
	g := &db.group
	g.running++
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		db.commitPending()
	}()
}

// errGoexit answers the calls of a round whose function ended the
// committer's goroutine (runtime.Goexit, as a test's t.Fatal does).
var errGoexit = errors.New("batch function ended its goroutine")

// commitPending commits the waiting calls, up to maxBatch a round, until
// none wait.
func (db *DB) commitPending() {
	g := &db.group
	var calls []*batchCall
	defer func() {
		if calls == nil {
			return
		}
		// Left by runtime.Goexit inside a function: the round's callers
		// are answered (those answered already never read this), and a
		// committer takes over the calls still waiting.
		for _, c := range calls {
			select {
			case c.done <- errGoexit:
			default:
			}
		}
		g.mu.Lock()
		g.running--
		if len(g.pending) > 0 {
			db.startCommitter()
		}
		g.mu.Unlock()
	}()
	for {
		g.mu.Lock()
		n := min(len(g.pending), maxBatch)
		if n == 0 {
			g.running--
			g.mu.Unlock()
			return
		}
		calls = slices.Clone(g.pending[:n])
		g.pending = slices.Delete(g.pending, 0, n)
		g.mu.Unlock()
		db.commit(calls)
		calls = nil
	}
}

// commit runs calls in one transaction and answers each. A call whose
// caller's context has ended is answered with its error and not run; a
// call alone runs with its caller's context. Of several, a failing
// function is taken out and told to run alone, and the rest run again
// without it; when the commit itself fails (a queued write's error,
// which may be any function's), each is told to run alone, unless it is
// unknown whether it committed (then each gets the error).
func (db *DB) commit(calls []*batchCall) {
	// A copy: the round's list stays whole for commitPending.
	calls = slices.Clone(calls)
	for {
		calls = answerDone(calls)
		if len(calls) <= 1 {
			break
		}
		ctx, end := roundContext(calls)
		failed := -1
		err := db.gated(ctx, func(tx store.Tx) error {
			failed = -1
			for i, c := range calls {
				if err := store.SafeCall(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		left := ctx.Err() != nil
		end()
		switch {
		case err == nil:
			for _, c := range calls {
				c.done <- nil
			}
			return
		case left && (failed >= 0 || rolledBack(err)):
			// A caller's context ended and the transaction was rolled
			// back: that caller is answered (answerDone), the others run
			// again without it.
		case left || errors.Is(err, store.ErrClosed) ||
			errors.Is(err, store.ErrUnavailable) && !errors.Is(err, pgx.ErrTxCommitRollback):
			// Whether it committed is unknown (or the store is gone):
			// running the calls again could apply them twice.
			for _, c := range calls {
				c.done <- err
			}
			return
		case failed >= 0:
			calls[failed].done <- errSolo
			calls = slices.Delete(calls, failed, failed+1)
		default:
			// The commit failed (a queued write's error, which may be
			// any function's, or a rollback): each alone.
			for _, c := range calls {
				c.done <- errSolo
			}
			return
		}
	}
	if len(calls) == 1 {
		c := calls[0]
		c.done <- db.gated(c.ctx, func(tx store.Tx) error { return store.SafeCall(c.fn, tx) })
	}
}

// rolledBack reports whether err, a transaction's, leaves no doubt that
// none of it committed: an error PostgreSQL answered (the transaction is
// then aborted), a COMMIT answered with ROLLBACK, or a statement never
// sent.
func rolledBack(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) || errors.Is(err, pgx.ErrTxCommitRollback) || pgconn.SafeToRetry(err)
}

// answerDone answers the calls whose caller's context has ended with its
// error, before their functions run, and returns the others.
func answerDone(calls []*batchCall) []*batchCall {
	return slices.DeleteFunc(calls, func(c *batchCall) bool {
		if err := c.ctx.Err(); err != nil {
			c.done <- err
			return true
		}
		return false
	})
}

// roundContext returns the context of a shared transaction, which ends
// when any of its callers' contexts ends (its statements are cancelled,
// its COMMIT is not), and the function that releases it.
func roundContext(calls []*batchCall) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	stops := make([]func() bool, len(calls))
	for i, c := range calls {
		stops[i] = context.AfterFunc(c.ctx, cancel)
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// gated runs fn in a serializable transaction beside the other
// committers' transactions. One that loses a serialization conflict
// runs again alone: the other committers finish the transactions they
// are in and wait until it has committed (or lost again: it waits for
// its next attempt without the gate). On nearly empty tables, where
// PostgreSQL's page-level tracking of reads makes concurrent sign-ins
// conflict, the committers so take turns instead of running each other
// again and again; as the tables grow, the conflicts fade and they run
// side by side.
func (db *DB) gated(ctx context.Context, fn func(store.Tx) error) error {
	g := &db.group
	opts := pgx.TxOptions{IsoLevel: pgx.Serializable}
	err := func() error {
		g.gate.RLock()
		defer g.gate.RUnlock()
		if err := db.ready(ctx); err != nil {
			return err
		}
		return db.once(ctx, opts, fn)
	}()
	if err == nil || !retryable(err) {
		return err
	}
	return db.retry(ctx, func() error {
		g.gate.Lock()
		defer g.gate.Unlock()
		return db.once(ctx, opts, fn)
	})
}
