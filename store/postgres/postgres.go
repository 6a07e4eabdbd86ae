// Package postgres is latchkey's PostgreSQL backend: importing it
// registers the "postgres" driver of package store, which store.Open
// uses for postgres:// and postgresql:// URLs (latchkey serve
// --database-url).
//
// The backend implements store.DB and store.Tx as their doc comments
// specify; it is not written yet, and opening a database fails with
// ErrNotImplemented.
package postgres

import (
	"context"
	"errors"

	"latchkey/store"
)

// ErrNotImplemented is returned by the driver until the backend exists.
var ErrNotImplemented = errors.New("PostgreSQL support is not implemented yet: use a data file (--data)")

func init() {
	store.Register("postgres", func(context.Context, string, store.Options) (store.DB, bool, error) {
		return nil, false, ErrNotImplemented
	})
}
