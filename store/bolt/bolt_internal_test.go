package bolt

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"latchkey/store"

	"go.etcd.io/bbolt"
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

// upgraded writes a data file as a binary of schema version left it:
// every bucket but those in missing (which that version did not have),
// its schema version, then the rows fill puts. It opens the file with
// this binary, which upgrades it, checks it, and closes it with the test.
func upgraded(t *testing.T, version uint64, missing [][]byte, fill func(btx *bbolt.Tx) error) *DB {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.db", version))
	b, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = b.Update(func(btx *bbolt.Tx) error {
		for _, name := range allBuckets {
			if slices.ContainsFunc(missing, func(m []byte) bool { return bytes.Equal(m, name) }) {
				continue
			}
			if _, err := btx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if err := btx.Bucket(bucketMeta).Put(keySchema, u64(version)); err != nil {
			return err
		}
		return fill(btx)
	})
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	db, _, err := openDB(path, store.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	return db
}
