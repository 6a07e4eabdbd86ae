package postgres

import (
	"errors"
	"hash/fnv"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// Lock takes the transaction-level advisory lock named name (a 64-bit
// hash of it) as the transaction's first statement, with BEGIN
// (store.Tx). It does not wait: while another transaction holds the
// name, it answers errBusy, the transaction rolls back, giving its
// connection back to the pool, and runs again after DB.retry's backoff,
// without that wait counting against retryFor. The server lets go of the
// lock when the transaction ends, whatever ends it, and a transaction
// lock needs no session of its own (PgBouncer in transaction mode). The
// snapshot is taken as that first statement starts, so in a narrow race
// it may predate the previous holder's commit; SERIALIZABLE then fails
// the transaction on a conflicting write (40001) and it runs again. On a
// database without advisory locks (CockroachDB) the transaction runs
// again without one, and so do later ones: conflicting chunks then run
// again instead of taking turns.
func (tx *txn) Lock(name string) error {
	if tx.db.noLocks.Load() {
		return nil
	}
	l, ok := tx.ptx.(*lazyTx)
	if !ok || l.begunOnce() || tx.pending != nil || tx.readsAhead() {
		return errors.New("postgres: Lock must be a transaction's first statement")
	}
	h := fnv.New64a()
	h.Write([]byte("latchkey:" + name))
	var got bool
	err := tx.row("select pg_try_advisory_xact_lock($1)", int64(h.Sum64())).Scan(&got)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && (pe.Code == "0A000" || pe.Code == "42883"):
		tx.db.noLocks.Store(true)
		return errBusy
	case err != nil:
		return unavailable(err)
	case !got:
		lockBusy.Add(1)
		return errBusy
	}
	return nil
}

// errBusy is Lock's answer while another transaction holds the name.
var errBusy = errors.New("postgres: the name is held by another transaction")

// lockBusy counts errBusy answers (for tests).
var lockBusy atomic.Int64
