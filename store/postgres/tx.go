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

// exec runs a statement that returns no rows.
func (tx *txn) exec(sql string, args ...any) (pgconn.CommandTag, error) {
	tag, err := tx.ptx.Exec(tx.ctx, sql, args...)
	return tag, tx.note(unavailable(err))
}

// query runs a statement that returns rows.
func (tx *txn) query(sql string, args ...any) (pgx.Rows, error) {
	rows, err := tx.ptx.Query(tx.ctx, sql, args...)
	return rows, tx.note(unavailable(err))
}

// one scans the single row of a query into dest, answering
// store.ErrNotFound when there is none.
func (tx *txn) one(sql string, args []any, dest ...any) error {
	err := tx.ptx.QueryRow(tx.ctx, sql, args...).Scan(dest...)
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
