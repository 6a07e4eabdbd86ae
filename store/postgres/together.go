package postgres

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"latchkey/store"
)

// together sends the single statements that concurrent callers run
// outside any transaction of theirs (the velocity checks around every
// code verification, limits.go) in one round trip: one goroutine takes
// every statement waiting, sends them as one pipelined batch and answers
// each caller. Under load a verification's two checks then cost a
// fraction of a round trip each instead of one; alone, a statement waits
// for nothing but its own batch.
//
// A batch runs as one implicit transaction and holds its rows' locks to
// its end, so its statements go in the order of the rows they lock (each
// call's key): two batches, of this replica (one is in flight at a time)
// or of two, then lock in one order and never wait for each other in a
// cycle. When a statement of a batch fails, the whole batch is rolled
// back and each of its statements is sent again on its own, so every
// caller gets its own answer.
type together struct {
	pool   *pgxpool.Pool
	in     chan *call
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ended  chan struct{} // closed when loop has returned
}

// call is one caller's statement, locking the row of key: scan reads its
// row (nil for a statement whose command tag is enough), done gets its
// error.
type call struct {
	key  []byte
	sql  string
	args []any
	scan func(pgx.Row) error
	done chan error
}

// maxTogether bounds the statements of one batch.
const maxTogether = 256

// togetherTimeout bounds one batch.
const togetherTimeout = 10 * time.Second

// startTogether starts db's sender; stopTogether (Close) ends it.
func (db *DB) startTogether() {
	t := &together{pool: db.pool, in: make(chan *call, maxTogether), ended: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer close(t.ended)
		t.loop()
	}()
	db.together = t
}

// stopTogether ends db's sender, once the batch in flight is answered.
func (db *DB) stopTogether() {
	if t := db.together; t != nil {
		t.cancel()
		t.wg.Wait()
	}
}

// one runs sql with args, which locks the row of key, in a batch with
// the statements of other callers, and scans its row with scan (or reads
// its command tag when scan is nil). Without a sender (a DB made by hand
// in a test) it runs the statement alone.
func (db *DB) one(ctx context.Context, key []byte, sql string, args []any, scan func(pgx.Row) error) error {
	t := db.together
	if db.closed.Load() {
		return store.ErrClosed
	}
	if t == nil {
		return runAlone(ctx, db.pool, &call{sql: sql, args: args, scan: scan})
	}
	c := &call{key: key, sql: sql, args: args, scan: scan, done: make(chan error, 1)}
	select {
	case t.in <- c:
	case <-ctx.Done():
		return ctx.Err()
	case <-t.ctx.Done():
		return store.ErrClosed
	}
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-t.ended:
		// Stopped: a statement it took has been answered.
		select {
		case err := <-c.done:
			return err
		default:
			return store.ErrClosed
		}
	}
}

// loop sends the waiting statements, batch after batch, until stopped.
func (t *together) loop() {
	for {
		var calls []*call
		select {
		case c := <-t.in:
			calls = append(calls, c)
		case <-t.ctx.Done():
			return
		}
	more:
		for len(calls) < maxTogether {
			select {
			case c := <-t.in:
				calls = append(calls, c)
			default:
				break more
			}
		}
		t.send(calls)
	}
}

// send runs calls in one batch, or each alone when the batch fails, and
// answers every caller.
func (t *together) send(calls []*call) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), togetherTimeout)
	defer cancel()
	if len(calls) == 1 {
		calls[0].done <- runAlone(ctx, t.pool, calls[0])
		return
	}
	slices.SortStableFunc(calls, func(x, y *call) int { return bytes.Compare(x.key, y.key) })
	b := &pgx.Batch{}
	for _, c := range calls {
		b.Queue(c.sql, c.args...)
	}
	br := t.pool.SendBatch(ctx, b)
	errs := make([]error, len(calls))
	failed := false
	for i, c := range calls {
		errs[i] = read(br, c)
		failed = failed || (errs[i] != nil && !errors.Is(errs[i], pgx.ErrNoRows))
	}
	closeErr := br.Close()
	if failed {
		// The batch was one implicit transaction, rolled back whole:
		// each statement again, alone, with time of its own.
		again, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), togetherTimeout)
		defer cancel()
		for _, c := range calls {
			c.done <- runAlone(again, t.pool, c)
		}
		return
	}
	for i, c := range calls {
		// Every statement answered but the batch did not end cleanly:
		// whether it committed is unknown, so it is not run again (a
		// second run would count twice); each caller is told.
		c.done <- first(errs[i], closeErr)
	}
}

// read reads c's result from br.
func read(br pgx.BatchResults, c *call) error {
	if c.scan != nil {
		return c.scan(br.QueryRow())
	}
	_, err := br.Exec()
	return err
}

// runAlone runs c's statement on its own.
func runAlone(ctx context.Context, pool *pgxpool.Pool, c *call) error {
	if c.scan != nil {
		return c.scan(pool.QueryRow(ctx, c.sql, c.args...))
	}
	_, err := pool.Exec(ctx, c.sql, c.args...)
	return err
}
