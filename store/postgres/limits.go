package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// Limits shared by replicas (store.Shared): velocity counts, exact, one
// row per key checked and counted by one statement each; request rates,
// approximate, one row per key, slot and replica (migration 0006).

var _ store.Shared = (*DB)(nil)

// velocityTotal is the failures a velocity row v holds in the window
// ending in minute $min (a parameter of the statement it is part of).
const velocityTotal = `(SELECT coalesce(sum(b & 65535), 0) FROM unnest(v.buckets) AS u(b) WHERE b >> 16 > $5 - 10)`

// emptyBuckets is the buckets of a row that counts no failure.
var emptyBuckets [store.VelocityBuckets]int64

// reserveSQL takes a slot: $1 key, $2 empty buckets, $3 now (ns), $4 the
// oldest reservation still held (ns), $5 now's minute, $6 Max. The row is
// locked by the conflict, and the WHERE reads its newest version, so the
// check and the count are atomic across connections.
const reserveSQL = `
	INSERT INTO velocity AS v (key, buckets, inflight, inflight_at, blocked_until, last)
	VALUES ($1, $2, 1, $3, 0, $3)
	ON CONFLICT (key) DO UPDATE SET
		inflight = CASE WHEN v.inflight_at < $4 THEN 1 ELSE v.inflight + 1 END,
		inflight_at = $3,
		last = $3
	WHERE v.blocked_until <= $3
		AND ` + velocityTotal + `
			+ CASE WHEN v.inflight_at < $4 THEN 0 ELSE v.inflight END <= $6
	RETURNING 1`

// failSQL counts a failure: $1 key, $2 the buckets of a new row (now's
// counting one), $3 now (ns), $4 the oldest reservation still held (ns),
// $5 now's minute, $6 Max, $7 1 to release a held slot (else 0), $8 the
// end of a block starting now (ns), $9 now's bucket (1-based), $10 the
// blocked_until of a new row. A stale bucket (an older minute's) restarts
// at 1; the window's total after the count is the total before plus one,
// since now's bucket is either counted already or outside the window.
const failSQL = `
	INSERT INTO velocity AS v (key, buckets, inflight, inflight_at, blocked_until, last)
	VALUES ($1, $2, 0, 0, $10, $3)
	ON CONFLICT (key) DO UPDATE SET
		buckets = ARRAY(
			SELECT CASE WHEN p <> $9 THEN b
				WHEN b >> 16 = $5 THEN least(b + 1, ($5 << 16) + 65535)
				ELSE ($5 << 16) + 1 END
			FROM unnest(v.buckets) WITH ORDINALITY AS u(b, p) ORDER BY p),
		inflight = CASE WHEN v.inflight_at < $4 THEN 0 ELSE greatest(v.inflight - $7, 0) END,
		blocked_until = CASE WHEN ` + velocityTotal + ` + 1 > $6 THEN $8 ELSE v.blocked_until END,
		last = $3`

// releaseSQL releases a slot without counting: $1 key, $2 the oldest
// reservation still held (ns).
const releaseSQL = `
	UPDATE velocity SET inflight = CASE WHEN inflight_at < $2 THEN 0 ELSE greatest(inflight - 1, 0) END
	WHERE key = $1`

// ReserveVelocity takes a slot of key's velocity count (store.Shared).
func (db *DB) ReserveVelocity(ctx context.Context, key []byte, now time.Time, r store.VelocityRule) (bool, error) {
	if db.closed.Load() {
		return false, store.ErrClosed
	}
	var one int
	err := db.one(ctx, key, reserveSQL, []any{key, emptyBuckets[:], now.UnixNano(), now.Add(-r.Hold).UnixNano(), now.Unix() / 60, r.Max},
		func(row pgx.Row) error { return row.Scan(&one) })
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, unavailable(err)
	}
	return true, nil
}

// SettleVelocity ends a verification keyed by key (store.Shared).
func (db *DB) SettleVelocity(ctx context.Context, key []byte, now time.Time, held, failed bool, r store.VelocityRule) error {
	if db.closed.Load() {
		return store.ErrClosed
	}
	stale := now.Add(-r.Hold).UnixNano()
	if !failed {
		if !held {
			return nil
		}
		return unavailable(db.one(ctx, key, releaseSQL, []any{key, stale}, nil))
	}
	min := now.Unix() / 60
	i := int(min % store.VelocityBuckets)
	buckets := make([]int64, store.VelocityBuckets)
	buckets[i] = min<<16 + 1
	until := now.Add(r.BlockFor).UnixNano()
	var newBlock int64
	if 1 > r.Max {
		newBlock = until
	}
	release := 0
	if held {
		release = 1
	}
	return unavailable(db.one(ctx, key, failSQL, []any{key, buckets, now.UnixNano(), stale, min, r.Max, release, until, i + 1, newBlock}, nil))
}

// SweepVelocity deletes rows untouched since before (store.Shared).
func (db *DB) SweepVelocity(ctx context.Context, before time.Time) (int, error) {
	if db.closed.Load() {
		return 0, store.ErrClosed
	}
	// In key order, skipping rows a verification holds: the sweep then
	// never waits for a batch of them in a cycle (together.go).
	tag, err := db.pool.Exec(ctx, `DELETE FROM velocity WHERE key = ANY (ARRAY(
		SELECT key FROM velocity WHERE last < $1 ORDER BY key FOR UPDATE SKIP LOCKED)) AND last < $1`, before.UnixNano())
	if err != nil {
		return 0, unavailable(err)
	}
	return int(tag.RowsAffected()), nil
}

// SyncRates stores replica's counts and reads the others' (store.Shared):
// both statements go in one batch, one round trip.
func (db *DB) SyncRates(ctx context.Context, replica string, put []store.RateCount, keys []string, from int64) ([]store.RateCount, error) {
	if db.closed.Load() {
		return nil, store.ErrClosed
	}
	b := &pgx.Batch{}
	if len(put) > 0 {
		ks, slots, ns := make([]string, len(put)), make([]int64, len(put)), make([]int32, len(put))
		for i, c := range put {
			ks[i], slots[i], ns[i] = c.Key, c.Slot, int32(c.N)
		}
		b.Queue(`INSERT INTO rate_counts (key, slot, replica, n)
			SELECT k, s, $4, n FROM unnest($1::text[], $2::bigint[], $3::integer[]) AS u(k, s, n)
			ON CONFLICT (key, slot, replica) DO UPDATE SET n = excluded.n`, ks, slots, ns, replica)
	}
	var out []store.RateCount
	if len(keys) > 0 {
		b.Queue(`SELECT key, slot, sum(n) FROM rate_counts
			WHERE key = ANY($1) AND slot >= $2 AND replica <> $3
			GROUP BY key, slot HAVING sum(n) > 0`, keys, from, replica).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var c store.RateCount
				var n int64
				if err := rows.Scan(&c.Key, &c.Slot, &n); err != nil {
					return err
				}
				c.N = int(n)
				out = append(out, c)
			}
			return rows.Err()
		})
	}
	if b.Len() == 0 {
		return nil, nil
	}
	if err := db.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, unavailable(err)
	}
	return out, nil
}

// SweepRates deletes the counts of slots before before (store.Shared).
func (db *DB) SweepRates(ctx context.Context, before int64) (int, error) {
	if db.closed.Load() {
		return 0, store.ErrClosed
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM rate_counts WHERE slot < $1`, before)
	if err != nil {
		return 0, unavailable(err)
	}
	return int(tag.RowsAffected()), nil
}
