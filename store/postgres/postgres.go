// Package postgres is latchkey's PostgreSQL backend: the store.DB and
// store.Tx contract (package store's doc comments) on a PostgreSQL
// database through github.com/jackc/pgx/v5, for running many stateless
// replicas of latchkey on one database.
//
// Importing the package registers the "postgres" driver, which store.Open
// uses for postgres:// and postgresql:// URLs.
//
// Every Update and Batch runs at SERIALIZABLE and is retried, with its
// function run again, when PostgreSQL aborts it for a serialization
// failure or a deadlock; a View runs READ ONLY at REPEATABLE READ (one
// snapshot). The schema is versioned (migrations/NNNN_name.sql, applied
// in order at Open under a row lock, recorded in schema_migrations).
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"

	"latchkey/store"
)

func init() { store.Register("postgres", Open) }

// retryFor bounds the time a transaction function that keeps losing
// serialization conflicts is run again for (with a jittered backoff of
// 1 ms doubling to 100 ms): a burst of conflicting sign-ins on a small
// table then waits rather than fails. Past it, or when the caller's
// context ends, the conflict is the answer.
const retryFor = 10 * time.Second

// DB is a latchkey store on a PostgreSQL database.
type DB struct {
	pool   *pgxpool.Pool
	opt    store.Options
	log    *slog.Logger
	closed atomic.Bool

	// The replica services (feed.go, lease.go, sessioncache.go): the
	// invalidation feed with its goroutines, and the session cache it
	// keeps coherent.
	feed     *feed
	sessions *sessionCache

	// Each project's mail templates, read at most templateTTL ago
	// (templates.go).
	templatesOnce sync.Once
	templates     *templates

	// The sender of the velocity checks' statements (together.go).
	together *together

	// The group commit of Batch calls (batch.go).
	group group

	// wakeHere: store.ChangeKind → func() bool, the kinds of work this
	// replica's own tasks do while the function reports true (WakeHere).
	wakeHere sync.Map

	// noLocks: the database has no advisory locks (CockroachDB), so
	// txn.Lock takes none.
	noLocks atomic.Bool
}

var _ store.DB = (*DB)(nil)

// Open connects to the database dsn names, applies the migrations it
// lacks and returns the store. created reports an empty database (no
// latchkey schema before): the first start.
func Open(ctx context.Context, dsn string, opt store.Options) (store.DB, bool, error) {
	pool, err := connect(ctx, dsn, opt)
	if err != nil {
		return nil, false, err
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	db := &DB{pool: pool, opt: opt, log: log}
	db.group.committers = committersFor(pool.Config().MaxConns)
	was, err := db.migrate(ctx)
	if err != nil {
		pool.Close()
		return nil, false, err
	}
	if err := db.startFeed(ctx); err != nil {
		pool.Close()
		return nil, false, err
	}
	db.startTogether()
	return db, was == 0, nil
}

// connect opens a pool of connections to dsn and checks that the
// database answers.
func connect(ctx context.Context, dsn string, opt store.Options) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	if opt.ObserveRoundTrip != nil {
		cfg.ConnConfig.Tracer = roundTrips(opt.ObserveRoundTrip)
	}
	// A context that ends mid-statement cancels the statement on the
	// server (PostgreSQL answers 57014 and the transaction rolls back)
	// rather than breaking the connection, which would leave a COMMIT's
	// outcome unknown; the connection is dropped only if the server does
	// not answer within 3 s.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 3 * time.Second}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database %s:%d unreachable: %w: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, store.ErrUnavailable, err)
	}
	return pool, nil
}

// Close closes the connections.
func (db *DB) Close() error {
	// Batch calls already queued commit first.
	db.stopGroup()
	if db.closed.Swap(true) {
		return nil
	}
	db.stopFeed()
	db.stopTogether()
	db.pool.Close()
	return nil
}

// Usable reports whether the database answers.
func (db *DB) Usable(ctx context.Context) error {
	if db.closed.Load() {
		return store.ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
	}
	return nil
}

// Backup is not supported on PostgreSQL: back the database up with
// pg_dump or the service's own backups.
func (db *DB) Backup(context.Context, io.Writer, func(int64)) (int64, error) {
	return 0, fmt.Errorf("%w: back up a PostgreSQL database with pg_dump", store.ErrNotSupported)
}

// View runs fn in a read-only transaction that sees one snapshot.
func (db *DB) View(ctx context.Context, fn func(store.Tx) error) error {
	return db.run(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

// Update runs fn in a serializable transaction, again when PostgreSQL
// aborts it for a conflict.
func (db *DB) Update(ctx context.Context, fn func(store.Tx) error) error {
	return db.run(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable}, fn)
}

// run runs fn in a transaction with opts, retrying serialization
// failures and deadlocks with a jittered backoff.
func (db *DB) run(ctx context.Context, opts pgx.TxOptions, fn func(store.Tx) error) error {
	return db.retry(ctx, func() error { return db.once(ctx, opts, fn) })
}

// retry runs attempt, and again after a serialization failure, a
// deadlock or a held name (txn.Lock), waiting a jittered backoff of 1 ms
// doubling to 100 ms between attempts, for up to retryFor since the last
// held name (waiting for a name is not failing) or until ctx ends.
func (db *DB) retry(ctx context.Context, attempt func() error) error {
	if err := db.ready(ctx); err != nil {
		return err
	}
	start, backoff := time.Now(), time.Millisecond
	for {
		err := attempt()
		if errors.Is(err, errBusy) {
			start = time.Now() // waiting for a name (Lock) is not failing
		}
		if err == nil || !retryable(err) || time.Since(start) >= retryFor {
			return err
		}
		t := time.NewTimer(backoff/2 + rand.N(backoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		backoff = min(2*backoff, 100*time.Millisecond)
	}
}

// ready refuses a transaction after Close or once ctx is done.
func (db *DB) ready(ctx context.Context) error {
	if db.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// once runs fn in one transaction. A connection's failure, wherever fn
// met it, comes out as store.ErrUnavailable (lost).
func (db *DB) once(ctx context.Context, opts pgx.TxOptions, fn func(store.Tx) error) (err error) {
	defer func() {
		if err != nil {
			err = lost(err)
		}
	}()
	// The transaction begins at its first statement (lazyTx): one
	// answered from memory costs no round trip.
	ptx := newLazyTx(db.pool, opts, &db.closed)
	// Should fn panic or exit its goroutine (t.Fatal in a test), the
	// transaction still ends and its connection goes back to the pool
	// (Rollback after Commit does nothing).
	defer ptx.Rollback(context.WithoutCancel(ctx))
	t := &txn{ctx: ctx, ptx: ptx, db: db, readOnly: opts.AccessMode == pgx.ReadOnly, templateGen: db.templateCache().generation()}
	if err := fn(t); err != nil {
		ptx.Rollback(context.WithoutCancel(ctx))
		if t.err != nil {
			// The function's error may be its answer to a failed
			// statement: the statement's error decides a retry.
			return t.err
		}
		return err
	}
	start := time.Now()
	// The queued writes go with COMMIT (txn.later), the feed's rows
	// among them; reads asked for and not made are not.
	t.ahead, t.aheadUsers = nil, nil
	t.writeFeed()
	if t.err != nil {
		// A statement failed for a conflict the function did not report
		// (a queued write carried by a read whose error it took for
		// "none"): the transaction is aborted; run it again.
		ptx.Rollback(context.WithoutCancel(ctx))
		return t.err
	}
	if err := ptx.commit(ctx, t.pending, t.after); err != nil {
		return unavailable(err)
	}
	if !t.readOnly && ptx.begunOnce() && db.opt.ObserveCommit != nil {
		db.opt.ObserveCommit(time.Since(start))
	}
	for _, f := range t.onCommit {
		f()
	}
	return nil
}

// retryable reports whether err is a serialization failure, a deadlock or
// a name another transaction holds (txn.Lock), after which the
// transaction may run again.
func retryable(err error) bool {
	if errors.Is(err, errBusy) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "40001" || pe.Code == "40P01"
	}
	return false
}
