package postgres

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"latchkey/store"
)

// lazyTx is a pgx.Tx that begins its transaction at its first statement,
// in the same round trip: BEGIN goes to the server in one pipelined batch
// with that statement (and with the writes queued before it, txn.later).
// A transaction function answered from memory (SessionExists from the
// session cache, on the path of every user call) then costs no round trip
// and holds no connection, and its Commit and Rollback do nothing; one
// that reads once costs two round trips (BEGIN with the read, COMMIT with
// the queued writes) where it cost four.
//
// PostgreSQL takes a REPEATABLE READ or SERIALIZABLE transaction's
// snapshot at its first statement, not at BEGIN, so beginning later
// changes nothing of what the transaction sees. A failure to acquire a
// connection is the first statement's error (exec, query and one wrap it
// as store.ErrUnavailable).
//
// lazyTx drives the transaction itself (BEGIN, COMMIT and ROLLBACK are
// its own statements on a pooled connection) so that COMMIT too can ride
// in a batch, which pgx.Tx cannot do.
type lazyTx struct {
	pool   *pgxpool.Pool
	begin  string       // the BEGIN statement, with the isolation level
	closed *atomic.Bool // the DB's: a failure to acquire after Close is store.ErrClosed
	c      *pgxpool.Conn
	begun  bool  // BEGIN has been sent
	err    error // the failure to acquire, returned by every later call
}

var _ pgx.Tx = (*lazyTx)(nil)

// newLazyTx returns the transaction of opts on pool, not begun.
func newLazyTx(pool *pgxpool.Pool, opts pgx.TxOptions, closed *atomic.Bool) *lazyTx {
	begin := "begin isolation level " + string(opts.IsoLevel)
	if opts.AccessMode != "" {
		begin += " " + string(opts.AccessMode)
	}
	return &lazyTx{pool: pool, begin: begin, closed: closed}
}

// conn acquires the transaction's connection on the first call.
func (l *lazyTx) conn(ctx context.Context) (*pgxpool.Conn, error) {
	if l.c == nil && l.err == nil {
		l.c, l.err = l.pool.Acquire(ctx)
		if l.err != nil && l.closed != nil && l.closed.Load() {
			l.err = store.ErrClosed
		}
	}
	return l.c, l.err
}

// started begins the transaction on its own, for the calls that cannot
// carry BEGIN with them.
func (l *lazyTx) started(ctx context.Context) (*pgxpool.Conn, error) {
	c, err := l.conn(ctx)
	if err != nil || l.begun {
		return c, err
	}
	l.begun = true
	if _, err := c.Exec(ctx, l.begin); err != nil {
		return nil, err
	}
	return c, nil
}

// begunOnce reports whether a statement began the transaction.
func (l *lazyTx) begunOnce() bool { return l.begun }

// SendBatch sends b, with BEGIN in front when it begins the transaction.
func (l *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c, err := l.conn(ctx)
	if err != nil {
		return errBatch{err}
	}
	if l.begun {
		return c.SendBatch(ctx, b)
	}
	l.begun = true
	withBegin := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries)+1)}
	withBegin.Queue(l.begin)
	withBegin.QueuedQueries = append(withBegin.QueuedQueries, b.QueuedQueries...)
	br := c.SendBatch(ctx, withBegin)
	if _, err := br.Exec(); err != nil {
		br.Close()
		return errBatch{err}
	}
	return br
}

// Exec runs a statement that returns no rows.
func (l *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if l.begun {
		return l.c.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := l.SendBatch(ctx, b)
	tag, err := br.Exec()
	return tag, first(err, closeOnly(br, err))
}

// Query runs a statement that returns rows.
func (l *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if l.begun {
		return l.c.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := l.SendBatch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return rows, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// QueryRow runs a statement that returns at most one row.
func (l *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if l.begun {
		return l.c.QueryRow(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return batchRow{br: l.SendBatch(ctx, b)}
}

// Commit commits a begun transaction; one never begun has nothing to
// commit.
func (l *lazyTx) Commit(ctx context.Context) error {
	return l.commit(ctx, nil, nil)
}

// commit sends the writes of b, whose results the functions of after
// read in order, with COMMIT in one round trip (BEGIN in front when
// nothing began the transaction), and releases the connection. A
// transaction that nothing began and that has nothing to write commits
// nothing.
func (l *lazyTx) commit(ctx context.Context, b *pgx.Batch, after []func(pgx.BatchResults) error) error {
	if b == nil || b.Len() == 0 {
		if !l.begun {
			l.release(ctx)
			return nil
		}
		b = &pgx.Batch{}
	}
	b.Queue("commit")
	br := l.SendBatch(ctx, b)
	err := readAll(br, after)
	tag, cerr := br.Exec()
	err = first(err, cerr)
	err = first(err, closeOnly(br, err))
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	l.release(ctx)
	return err
}

// Rollback rolls a begun transaction back and releases its connection;
// later calls do nothing.
func (l *lazyTx) Rollback(ctx context.Context) error {
	l.release(ctx)
	return nil
}

// release ends whatever transaction is open on the connection and gives
// the connection back to the pool (which closes it when it is broken).
func (l *lazyTx) release(ctx context.Context) {
	if l.c == nil {
		return
	}
	c := l.c
	l.c = nil
	if pc := c.Conn().PgConn(); !pc.IsClosed() && pc.TxStatus() != 'I' {
		c.Exec(ctx, "rollback")
	}
	c.Release()
}

// errNested is the answer to Begin: latchkey nests no transactions.
var errNested = errors.New("postgres: nested transactions are not supported")

// Begin would begin a nested transaction (a savepoint); latchkey uses
// none.
func (l *lazyTx) Begin(context.Context) (pgx.Tx, error) { return nil, errNested }

func (l *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	c, err := l.started(ctx)
	if err != nil {
		return 0, err
	}
	return c.CopyFrom(ctx, table, cols, src)
}

// LargeObjects is not used by latchkey: it returns the zero value.
func (l *lazyTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

func (l *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	c, err := l.started(ctx)
	if err != nil {
		return nil, err
	}
	return c.Conn().Prepare(ctx, name, sql)
}

// Conn begins the transaction and returns its connection (nil when it
// cannot begin).
func (l *lazyTx) Conn() *pgx.Conn {
	c, err := l.started(context.Background())
	if err != nil {
		return nil
	}
	return c.Conn()
}

// first returns a when it is an error, else b.
func first(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// readAll reads the results of a batch's first len(after) statements
// with after's functions, in order, and returns the first error.
func readAll(br pgx.BatchResults, after []func(pgx.BatchResults) error) error {
	var err error
	for _, f := range after {
		err = first(err, f(br))
	}
	return err
}

// closeOnly closes br, and returns its error only when err, the error
// already read from it, is nil (pgx reports a failed statement's error
// again at Close).
func closeOnly(br pgx.BatchResults, err error) error {
	cerr := br.Close()
	if err != nil {
		return nil
	}
	return cerr
}

// batchRows are the rows of a batch's last statement: closing them closes
// the batch.
type batchRows struct {
	pgx.Rows
	br   pgx.BatchResults
	done bool
	err  error
}

func (r *batchRows) finish() {
	if !r.done {
		r.done = true
		r.Rows.Close()
		r.err = closeOnly(r.br, r.Rows.Err())
	}
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.finish()
	return false
}

func (r *batchRows) Close() { r.finish() }

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// batchRow is the row of a batch's last statement: scanning it closes the
// batch.
type batchRow struct{ br pgx.BatchResults }

func (r batchRow) Scan(dest ...any) error {
	err := r.br.QueryRow().Scan(dest...)
	return first(err, closeOnly(r.br, err))
}

// errRow is the Row of a statement that could not be sent.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// errBatch is the BatchResults of a batch that could not be sent.
type errBatch struct{ err error }

func (b errBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, b.err }
func (b errBatch) Query() (pgx.Rows, error)         { return nil, b.err }
func (b errBatch) QueryRow() pgx.Row                { return errRow(b) }
func (b errBatch) Close() error                     { return b.err }
func (b errBatch) Tx() pgx.Tx                       { return nil }
