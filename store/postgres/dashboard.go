package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// The dashboard's sessions (store.Dashboard): table dash_sessions
// (migration 0006), so every replica knows every session.

// PutDashSession creates or replaces the session d.Hash.
func (db *DB) PutDashSession(ctx context.Context, d *store.DashSession) error {
	if db.closed.Load() {
		return store.ErrClosed
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO dash_sessions (hash, expires_at, flash) VALUES ($1, $2, $3)
		ON CONFLICT (hash) DO UPDATE SET expires_at = excluded.expires_at, flash = excluded.flash`,
		d.Hash, d.ExpiresAt.UnixNano(), d.Flash)
	return unavailable(err)
}

// DashSession returns the session hash unless it expired at now.
func (db *DB) DashSession(ctx context.Context, hash []byte, now time.Time) (*store.DashSession, error) {
	if db.closed.Load() {
		return nil, store.ErrClosed
	}
	d := &store.DashSession{Hash: hash}
	var exp int64
	err := db.pool.QueryRow(ctx, `SELECT expires_at, flash FROM dash_sessions WHERE hash = $1 AND expires_at > $2`,
		hash, now.UnixNano()).Scan(&exp, &d.Flash)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, unavailable(err)
	}
	d.ExpiresAt = time.Unix(0, exp).UTC()
	return d, nil
}

// UpdateDashFlash rewrites the session's flash under its row lock.
func (db *DB) UpdateDashFlash(ctx context.Context, hash []byte, fn func([]byte) ([]byte, bool, error)) error {
	if db.closed.Load() {
		return store.ErrClosed
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var flash []byte
		err := tx.QueryRow(ctx, `SELECT flash FROM dash_sessions WHERE hash = $1 FOR UPDATE`, hash).Scan(&flash)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return unavailable(err)
		}
		next, changed, err := fn(flash)
		if err != nil || !changed {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE dash_sessions SET flash = $2 WHERE hash = $1`, hash, next)
		return unavailable(err)
	})
}

// DeleteDashSession removes the session hash.
func (db *DB) DeleteDashSession(ctx context.Context, hash []byte) error {
	if db.closed.Load() {
		return store.ErrClosed
	}
	_, err := db.pool.Exec(ctx, `DELETE FROM dash_sessions WHERE hash = $1`, hash)
	return unavailable(err)
}

// SweepDashSessions deletes the sessions expired at now.
func (db *DB) SweepDashSessions(ctx context.Context, now time.Time) (int, error) {
	if db.closed.Load() {
		return 0, store.ErrClosed
	}
	tag, err := db.pool.Exec(ctx, `DELETE FROM dash_sessions WHERE expires_at <= $1`, now.UnixNano())
	if err != nil {
		return 0, unavailable(err)
	}
	return int(tag.RowsAffected()), nil
}
