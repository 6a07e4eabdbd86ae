package store

import (
	"context"
	"os"
	"testing"
)

// viewTx, updateTx and batchTx are View, Update and Batch for the
// internal tests, whose functions reach the bbolt transaction.
func (db *boltDB) viewTx(fn func(boltTx) error) error {
	return db.View(context.Background(), func(tx Tx) error { return fn(tx.(boltTx)) })
}

func (db *boltDB) updateTx(fn func(boltTx) error) error {
	return db.Update(context.Background(), func(tx Tx) error { return fn(tx.(boltTx)) })
}

func (db *boltDB) batchTx(fn func(boltTx) error) error {
	return db.Batch(context.Background(), func(tx Tx) error { return fn(tx.(boltTx)) })
}

// must returns v, panicking on err (reads of the internal tests).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// boltOnly skips t on the postgres pass (LATCHKEY_TEST_STORE=postgres):
// the internal tests are about bbolt's buckets, encodings and
// migrations, and the bolt pass ran them already.
func boltOnly(t testing.TB) {
	t.Helper()
	if os.Getenv("LATCHKEY_TEST_STORE") == "postgres" {
		t.Skip("a test of the bbolt backend's internals: ran on the bolt pass")
	}
}
