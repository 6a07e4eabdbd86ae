package bolt

import (
	"context"
	"time"

	"latchkey/store"
)

// Watch on a bbolt file: every change is made by this process, whose
// callers drop their own cached copies after their commits; fn is never
// called.
func (db *DB) Watch(fn func(store.Change)) (cancel func()) { return func() {} }

// Lease on a bbolt file: one process owns the file, so it holds every
// lease (a ttl of 0 or less releases nothing and reports false).
func (db *DB) Lease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return ttl > 0, nil
}
