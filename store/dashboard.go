package store

import (
	"context"
	"time"
)

// DashSession is a signed-in session of the operator's dashboard (the
// web pages under /admin/). It is keyed by a keyed hash of its cookie's
// value, never the value itself.
type DashSession struct {
	Hash      []byte
	ExpiresAt time.Time
	// Flash is what the session's next pages show once (a notice, a
	// secret just created), sealed by the caller: opaque to the store.
	Flash []byte
}

// Dashboard keeps the dashboard's sessions. Every DB implements it: the
// bbolt file's keeps them in memory (one process serves the file; a
// restart signs operators out), PostgreSQL's in a table, so that every
// replica behind a load balancer knows every session. Safe for
// concurrent use.
type Dashboard interface {
	// PutDashSession creates or replaces the session d.Hash.
	PutDashSession(ctx context.Context, d *DashSession) error
	// DashSession returns the session whose Hash is hash, unless it
	// expired at now: ErrNotFound.
	DashSession(ctx context.Context, hash []byte, now time.Time) (*DashSession, error)
	// UpdateDashFlash replaces the Flash of session hash with what fn
	// returns, fn given the current one, atomically; when fn reports no
	// change nothing is written. A session that is gone is left so (nil
	// error, fn not called).
	UpdateDashFlash(ctx context.Context, hash []byte, fn func(flash []byte) (next []byte, changed bool, err error)) error
	// DeleteDashSession removes session hash (nil when it is gone).
	DeleteDashSession(ctx context.Context, hash []byte) error
	// SweepDashSessions deletes the sessions expired at now.
	SweepDashSessions(ctx context.Context, now time.Time) (int, error)
}
