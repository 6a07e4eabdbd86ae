package postgres

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"latchkey/store"
)

// lazyTx is a pgx.Tx that begins its transaction (a connection from the
// pool and BEGIN, one round trip) at its first statement, not before: a
// transaction function answered from memory (SessionExists from the
// session cache, on the path of every user call) then costs no round
// trip and holds no connection, and its Commit and Rollback do nothing.
//
// PostgreSQL takes a REPEATABLE READ or SERIALIZABLE transaction's
// snapshot at its first statement, not at BEGIN, so beginning later
// changes nothing of what the transaction sees. A failure to begin is the
// first statement's error (exec, query and one wrap it as
// store.ErrUnavailable).
type lazyTx struct {
	pool   *pgxpool.Pool
	opts   pgx.TxOptions
	closed *atomic.Bool // the DB's: a failure to begin after Close is store.ErrClosed
	tx     pgx.Tx       // nil until the first statement
	err    error        // the failure to begin, returned by every later call
}

var _ pgx.Tx = (*lazyTx)(nil)

// begin begins the transaction on the first call.
func (l *lazyTx) begin(ctx context.Context) (pgx.Tx, error) {
	if l.tx == nil && l.err == nil {
		l.tx, l.err = l.pool.BeginTx(ctx, l.opts)
		if l.err != nil && l.closed != nil && l.closed.Load() {
			l.err = store.ErrClosed
		}
	}
	return l.tx, l.err
}

// begun reports whether a statement began the transaction.
func (l *lazyTx) begun() bool { return l.tx != nil }

func (l *lazyTx) Begin(ctx context.Context) (pgx.Tx, error) {
	t, err := l.begin(ctx)
	if err != nil {
		return nil, err
	}
	return t.Begin(ctx)
}

// Commit commits a begun transaction; one never begun has nothing to
// commit.
func (l *lazyTx) Commit(ctx context.Context) error {
	if l.tx == nil {
		return nil
	}
	return l.tx.Commit(ctx)
}

// Rollback rolls a begun transaction back.
func (l *lazyTx) Rollback(ctx context.Context) error {
	if l.tx == nil {
		return nil
	}
	return l.tx.Rollback(ctx)
}

func (l *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	t, err := l.begin(ctx)
	if err != nil {
		return 0, err
	}
	return t.CopyFrom(ctx, table, cols, src)
}

func (l *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	t, err := l.begin(ctx)
	if err != nil {
		return errBatch{err}
	}
	return t.SendBatch(ctx, b)
}

// LargeObjects begins the transaction; on a failure to begin, the large
// objects' calls fail on a nil transaction (latchkey uses none).
func (l *lazyTx) LargeObjects() pgx.LargeObjects {
	t, err := l.begin(context.Background())
	if err != nil {
		return pgx.LargeObjects{}
	}
	return t.LargeObjects()
}

func (l *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	t, err := l.begin(ctx)
	if err != nil {
		return nil, err
	}
	return t.Prepare(ctx, name, sql)
}

func (l *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	t, err := l.begin(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.Exec(ctx, sql, args...)
}

func (l *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	t, err := l.begin(ctx)
	if err != nil {
		return nil, err
	}
	return t.Query(ctx, sql, args...)
}

func (l *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	t, err := l.begin(ctx)
	if err != nil {
		return errRow{err}
	}
	return t.QueryRow(ctx, sql, args...)
}

// Conn begins the transaction and returns its connection (nil when it
// cannot begin).
func (l *lazyTx) Conn() *pgx.Conn {
	t, err := l.begin(context.Background())
	if err != nil {
		return nil
	}
	return t.Conn()
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
