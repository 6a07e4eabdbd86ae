package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"latchkey/store"
)

// txn is one transaction: a store.Tx on a pgx transaction.
type txn struct {
	ctx      context.Context
	ptx      pgx.Tx
	db       *DB
	readOnly bool
	onCommit []func()
	// err is the first statement error that decides a retry (a
	// serialization failure or a deadlock), kept because the
	// transaction function may return its own error instead.
	err error
	// woke holds the kinds of wake-up this transaction wrote to the
	// invalidation feed: one row each is enough (feed.go, wake).
	woke map[store.ChangeKind]bool
	// feedRows are the transaction's rows of the invalidation feed,
	// written in one statement with its COMMIT, or with an import's
	// batches (feed.go, changes); wokeHere, the wake-ups left out
	// because this replica's own task does the work, checked again
	// then (feed.go, wake).
	feedRows []store.Change
	wokeHere []store.ChangeKind

	// The writes queued by later, sent with the next statement or with
	// COMMIT; after reads their results, in order.
	pending *pgx.Batch
	after   []func(pgx.BatchResults) error

	// byEmail holds the users this transaction read by address (nil
	// for none there): a sign-in reads its user more than once, and the
	// snapshot cannot change in between. Writing a user drops what the
	// write can change (forgetUser); deleting users drops it all.
	byEmail map[[2]string]*store.User
	// ahead: the reads PrefetchCode and PrefetchThrottle asked for, sent
	// with the next statement; fetched: their answers (nil for none)
	// until the transaction writes their keys (prefetch.go).
	ahead   []rowKey
	fetched map[rowKey]any
	// aheadUsers: the addresses PrefetchUsers asked for, read with the
	// next statement into byEmail.
	aheadUsers []usersAhead

	// templateGen is the template cache's count of drops as the
	// transaction began (templates.go).
	templateGen uint64
	// wroteTemplates: this transaction changed mail templates, so its
	// Template reads bypass the replica's cache (templates.go).
	wroteTemplates bool
	// putSession is the id of the session this transaction stored last
	// (PutSession) and has not deleted since: its refresh tokens are
	// stored without reading sessions (refresh.go). One id, not a set:
	// a sign-in or a refresh stores its token right after its session,
	// and an import stores millions of sessions.
	putSession string
}

var _ store.Tx = (*txn)(nil)

// OnCommit registers fn to run after the commit.
func (tx *txn) OnCommit(fn func()) {
	if !tx.readOnly {
		tx.onCommit = append(tx.onCommit, fn)
	}
}

// note keeps err when it decides a retry, and returns err.
func (tx *txn) note(err error) error {
	if err != nil && tx.err == nil && retryable(err) {
		tx.err = err
	}
	return err
}

// later queues a write that returns nothing any caller waits for (an
// upsert, an insert of generated keys, a delete): it goes to the server
// in the same round trip as the transaction's next statement or its
// COMMIT, in order, so every statement still sees it and it commits or
// fails with the transaction. A write whose error a caller must tell
// apart (a unique violation, the rows it affected) is not queued.
//
// A queued write's failure is the error of the statement or the commit
// it went with; a serialization failure is retried as any other.
func (tx *txn) later(sql string, args ...any) {
	tx.queue(sql, args, func(br pgx.BatchResults) error {
		_, err := br.Exec()
		return err
	})
}

// laterRow is later for a write that returns one row, which scan reads
// when the write has run (before the commit returns): generated keys.
func (tx *txn) laterRow(sql string, args []any, scan func(pgx.Row) error) {
	tx.queue(sql, args, func(br pgx.BatchResults) error { return scan(br.QueryRow()) })
}

// queue adds a statement and the function reading its result to the
// pending writes.
func (tx *txn) queue(sql string, args []any, read func(pgx.BatchResults) error) {
	if tx.pending == nil {
		tx.pending = &pgx.Batch{}
	}
	tx.pending.Queue(sql, args...)
	tx.after = append(tx.after, read)
}

// send sends the pending writes followed by sql and returns the batch,
// positioned at sql's result, with the pending writes' first error.
func (tx *txn) send(sql string, args []any) (pgx.BatchResults, error) {
	b, after := tx.pending, tx.after
	tx.pending, tx.after = nil, nil
	if b == nil {
		b = &pgx.Batch{}
	}
	after = append(after, tx.queueAhead(b)...)
	b.Queue(sql, args...)
	br := tx.ptx.SendBatch(tx.ctx, b)
	return br, readAll(br, after)
}

// flush sends the pending writes on their own (before a commit that is
// not lazyTx's).
func (tx *txn) flush() error {
	if tx.pending == nil {
		return nil
	}
	b, after := tx.pending, tx.after
	tx.pending, tx.after = nil, nil
	br := tx.ptx.SendBatch(tx.ctx, b)
	err := readAll(br, after)
	return tx.note(unavailable(first(err, closeOnly(br, err))))
}

// exec runs a statement that returns no rows.
func (tx *txn) exec(sql string, args ...any) (pgconn.CommandTag, error) {
	if tx.pending == nil && !tx.readsAhead() {
		tag, err := tx.ptx.Exec(tx.ctx, sql, args...)
		return tag, tx.note(unavailable(err))
	}
	br, err := tx.send(sql, args)
	tag, xerr := br.Exec()
	err = first(err, xerr)
	return tag, tx.note(unavailable(first(err, closeOnly(br, err))))
}

// query runs a statement that returns rows.
func (tx *txn) query(sql string, args ...any) (pgx.Rows, error) {
	if tx.pending == nil && !tx.readsAhead() {
		rows, err := tx.ptx.Query(tx.ctx, sql, args...)
		return rows, tx.note(unavailable(err))
	}
	br, err := tx.send(sql, args)
	if err != nil {
		br.Close()
		return nil, tx.note(unavailable(err))
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, tx.note(unavailable(err))
	}
	return &batchRows{Rows: rows, br: br}, nil
}

// row runs a statement that returns at most one row.
func (tx *txn) row(sql string, args ...any) pgx.Row {
	if tx.pending == nil && !tx.readsAhead() {
		return tx.ptx.QueryRow(tx.ctx, sql, args...)
	}
	br, err := tx.send(sql, args)
	if err != nil {
		br.Close()
		return errRow{err}
	}
	return batchRow{br: br}
}

// one scans the single row of a query into dest, answering
// store.ErrNotFound when there is none.
func (tx *txn) one(sql string, args []any, dest ...any) error {
	err := tx.row(sql, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return tx.note(unavailable(err))
}

// uniqueViolation reports whether err is a unique constraint's refusal.
func uniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
