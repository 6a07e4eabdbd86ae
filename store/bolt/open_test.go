package bolt_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"latchkey/store"
	"latchkey/store/bolt"
)

// txid is the id of the last transaction committed to the data file at
// path (bbolt counts every commit, even one that changes nothing).
func txid(t *testing.T, path string) int {
	t.Helper()
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tx, err := b.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	return tx.ID()
}

// TestOpenWritesOnlyWhatIsNeeded: opening a data file that needs no
// change commits nothing (the file's bytes, modification time and last
// transaction id stay as they were), while a new file, a bbolt file
// without buckets and an older version's file lacking buckets are
// written: their buckets and schema version are there after the open
// (bbolt only: PostgreSQL has its own migrations).
func TestOpenWritesOnlyWhatIsNeeded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, path string) // makes the file
		writes bool
	}{
		{name: "unchanged file", writes: false, before: func(t *testing.T, path string) {
			db, _, err := store.Open(ctx, path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
		}},
		{name: "no file", writes: true, before: func(*testing.T, string) {}},
		{name: "bbolt file without buckets", writes: true, before: func(t *testing.T, path string) {
			b, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
		}},
		{name: "older file lacking an index", writes: true, before: func(t *testing.T, path string) {
			db, _, err := store.Open(ctx, path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			b, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			err = b.Update(func(tx *bbolt.Tx) error {
				v := make([]byte, 8)
				binary.BigEndian.PutUint64(v, 5) // version 5 had no index of the grants by session
				if err := tx.Bucket([]byte("meta")).Put([]byte("schema_version"), v); err != nil {
					return err
				}
				return tx.DeleteBucket([]byte("oidc_grants_by_session"))
			})
			if err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "latchkey.db")
			tc.before(t, path)
			var before []byte
			var beforeTx int
			var beforeInfo os.FileInfo
			if fi, err := os.Stat(path); err == nil {
				before, beforeTx, beforeInfo = readFile(t, path), txid(t, path), fi
			}
			db, _, err := store.Open(ctx, path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			after, afterTx := readFile(t, path), txid(t, path)
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.writes {
				if afterTx != beforeTx || string(after) != string(before) || !fi.ModTime().Equal(beforeInfo.ModTime()) {
					t.Fatalf("open wrote to a file that needs no change: txid %d -> %d, bytes equal %v, mtime %v -> %v",
						beforeTx, afterTx, string(after) == string(before), beforeInfo.ModTime(), fi.ModTime())
				}
				return
			}
			if beforeInfo != nil && afterTx <= beforeTx {
				t.Fatalf("txid %d -> %d: open committed nothing to a file that needed it", beforeTx, afterTx)
			}
			b, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			b.View(func(tx *bbolt.Tx) error {
				for _, name := range []string{"meta", "users", "oidc_grants_by_session", "oidc_grants_by_user"} {
					if tx.Bucket([]byte(name)) == nil {
						t.Errorf("bucket %s missing after the open", name)
					}
				}
				if v := tx.Bucket([]byte("meta")).Get([]byte("schema_version")); len(v) != 8 || binary.BigEndian.Uint64(v) != bolt.SchemaVersion {
					t.Errorf("schema version %x, want %d", v, bolt.SchemaVersion)
				}
				return nil
			})
		})
	}
}

// readFile reads the file at path.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
