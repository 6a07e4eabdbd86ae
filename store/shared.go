package store

import (
	"context"
	"time"
)

// Shared is implemented by the DB of a store that several processes use
// at once (PostgreSQL, with latchkey's replicas behind a load balancer):
// the counts behind request limits, which one process alone would keep
// in memory, live in the store so that a limit holds across the
// processes. Reach it with a type assertion:
//
//	if sh, ok := db.(store.Shared); ok { ... }
//
// A bbolt file is used by one process only; its DB does not implement
// Shared, and callers count in memory, exactly and without a round trip.
//
// Two kinds of count are kept. Velocity counts (the risk engine's failed
// verifications per address or account) are exact: each call is one
// atomic check-and-count in the database, so however many processes
// verify at once, no more verifications are evaluated than one process
// would allow. Request rates (per API key, per session, per admin
// address) are approximate: each process counts its own requests and
// publishes them, per slot of RateSlot, with SyncRates about twice a
// second, and reads what the others published.
type Shared interface {
	// ReserveVelocity takes one slot of key's velocity count for a
	// verification about to be evaluated, and reports whether it got
	// one. It refuses while key is blocked (a SettleVelocity counted a
	// failure past r.Max within the window) and while key's failures in
	// the window (the VelocityBuckets one-minute buckets up to now's)
	// plus the slots held already reach r.Max+1. The check and the count
	// are one statement: concurrent callers on any process are
	// serialized on key's row. A slot held longer than r.Hold (its
	// process died before settling it) no longer counts. Every true is
	// followed by SettleVelocity with held set.
	ReserveVelocity(ctx context.Context, key []byte, now time.Time, r VelocityRule) (bool, error)

	// SettleVelocity ends a verification keyed by key: held releases a
	// slot ReserveVelocity gave, failed counts one failure in now's
	// minute (creating key's row when there is none) and blocks key
	// until now+r.BlockFor when its failures in the window then exceed
	// r.Max. With neither set it does nothing.
	SettleVelocity(ctx context.Context, key []byte, now time.Time, held, failed bool, r VelocityRule) error

	// SweepVelocity deletes the velocity rows untouched since before
	// (no reservation, failure or settlement since): call it with a time
	// older than the window, the block and the hold, so that only rows
	// that count nothing go.
	SweepVelocity(ctx context.Context, before time.Time) (int, error)

	// SyncRates publishes this process's request counts and reads the
	// other processes'. It stores put as replica's counts, each
	// replacing replica's earlier count of the same key and slot (so a
	// retry after a failed call is harmless), and returns, for the keys
	// named in keys, the sums over every other replica of the counts in
	// slots from from on, one RateCount per key and slot that has any
	// (in no particular order). One round trip.
	SyncRates(ctx context.Context, replica string, put []RateCount, keys []string, from int64) ([]RateCount, error)

	// SweepRates deletes every replica's counts of slots before before.
	SweepRates(ctx context.Context, before int64) (int, error)

	// WakeHere tells the store that this process's own task does the
	// work that a wake-up of kind (ChangeMail, ChangeOutbox) announces
	// while here reports true, and that the process wakes that task
	// itself after every commit that queued such work. While here
	// reports true, a transaction that queues it writes no wake-up to
	// the invalidation feed (a row only another process's task needs).
	// here must report true only while the task's lease is sure to
	// outlast a transaction begun now: work committed after the lease
	// passed to another process waits for that process's next run. A
	// nil here writes every wake-up again.
	WakeHere(kind ChangeKind, here func() bool)
}

// VelocityBuckets is how many one-minute buckets a velocity count keeps:
// its window is the current minute and the nine before it.
const VelocityBuckets = 10

// VelocityRule is the limit a velocity count enforces.
type VelocityRule struct {
	// Max is how many failures the window may hold: past it the key is
	// blocked.
	Max int
	// BlockFor is how long a key stays blocked after the failure that
	// went past Max.
	BlockFor time.Duration
	// Hold is how long a reserved slot counts without being settled.
	Hold time.Duration
}

// RateSlot is the length of a slot of the shared request counts, in
// seconds: a rolling minute is ten of them.
const RateSlot = 6

// RateCount is a number of requests counted for a key in one slot (Unix
// seconds divided by RateSlot).
type RateCount struct {
	Key  string
	Slot int64
	N    int
}
