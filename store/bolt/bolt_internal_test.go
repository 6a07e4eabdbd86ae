package bolt

import (
	"context"
	"fmt"
	"os"
	"testing"

	"latchkey/store"
)

// viewTx, updateTx and batchTx are View, Update and Batch for the
// internal tests, whose functions reach the bbolt transaction.
func (db *DB) viewTx(fn func(txn) error) error {
	return db.View(context.Background(), func(tx store.Tx) error { return fn(tx.(txn)) })
}

func (db *DB) updateTx(fn func(txn) error) error {
	return db.Update(context.Background(), func(tx store.Tx) error { return fn(tx.(txn)) })
}

func (db *DB) batchTx(fn func(txn) error) error {
	return db.Batch(context.Background(), func(tx store.Tx) error { return fn(tx.(txn)) })
}

// must returns v, panicking on err (reads of the internal tests).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestMain runs the package's tests on the bolt pass only: they test
// data files whatever LATCHKEY_TEST_STORE names, so on the postgres pass
// (LATCHKEY_TEST_STORE=postgres; store/postgres's tests run there) they
// would only run again.
func TestMain(m *testing.M) {
	if os.Getenv("LATCHKEY_TEST_STORE") == "postgres" {
		fmt.Println("store/bolt: these tests run on the bolt pass (LATCHKEY_TEST_STORE unset or bolt)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
