package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Leases (docs/replicas.md, "Background work and leases"): one row per
// name in leases, holder and
// until. A lease is acquired or renewed by one upsert whose update
// applies only when the lease ran out or the holder already holds it;
// the row lock the upsert takes makes it atomic among replicas, and
// until is on the database's clock, so replicas' clocks need not agree.
// Autocommit at READ COMMITTED: the upsert re-checks its condition on the
// newest row version after waiting for a concurrent one.

// Lease acquires or renews lease name for holder for ttl, or releases it
// when ttl is 0 or less (see store.DB).
func (db *DB) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		_, err := db.pool.Exec(ctx, `UPDATE leases SET until = '-infinity' WHERE name = $1 AND holder = $2`, name, holder)
		if err != nil {
			return false, fmt.Errorf("release lease %s: %w", name, unavailable(err))
		}
		return false, nil
	}
	var held bool
	err := db.pool.QueryRow(ctx, `INSERT INTO leases AS l (name, holder, until)
		VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until = excluded.until
			WHERE l.until < now() OR l.holder = excluded.holder
		RETURNING true`, name, holder, ttl.Seconds()).Scan(&held)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // another holder's lease runs
	}
	if err != nil {
		return false, fmt.Errorf("lease %s: %w", name, unavailable(err))
	}
	return held, nil
}
