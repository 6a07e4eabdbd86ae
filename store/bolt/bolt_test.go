package bolt_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
	"latchkey/store/bolt"
	"latchkey/store/storetest"
)

// The store's interfaces are tested by package storetest's suites
// (TestConformance); the tests of this file and of the package's other
// external tests are about what only a data file does: its lock, its
// pages, its group commit, CheckFile, Compact, its copy.

// ctx is the context of the tests' store calls: never cancelled.
var ctx = context.Background()

// openFile opens a new bbolt data file in t.TempDir (bbolt-only tests),
// closed and checked when the test ends.
func openFile(t *testing.T, opt store.Options) (store.DB, store.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	db, created, err := store.Open(ctx, path, opt)
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Fatal("new file not reported as created")
	}
	t.Cleanup(func() { storetest.CheckFile(t, path) })
	t.Cleanup(func() { db.Close() })
	return db, db.(store.File)
}

// check runs the file's consistency check in the middle of a test.
func check(t *testing.T, db store.DB) {
	t.Helper()
	if err := db.(store.File).Check(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRefusesNewerSchema: a data file of a newer latchkey is refused
// (bbolt only: PostgreSQL has its own migrations).
func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// Pretend a newer latchkey wrote the file.
	b, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Update(func(tx *bbolt.Tx) error {
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, bolt.SchemaVersion+1)
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), v)
	})
	b.Close()
	_, _, err = store.Open(ctx, path, store.Options{})
	if err == nil || !strings.Contains(err.Error(), "schema version") || !strings.Contains(err.Error(), "upgrade latchkey") {
		t.Fatalf("err = %v, want a clear schema refusal", err)
	}
}

// TestOpenInUse: a data file another process holds is ErrInUse (bbolt
// only).
func TestOpenInUse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	_, _, err = store.Open(ctx, path, store.Options{LockTimeout: 100 * time.Millisecond})
	if !errors.Is(err, store.ErrInUse) {
		t.Fatalf("err = %v, want ErrInUse", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("waited too long for the lock")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("data file mode %v", fi.Mode().Perm())
	}
}

// TestBackupIsAConsistentCopy: a backup is a data file that opens and
// checks (bbolt only: PostgreSQL's backup is pg_dump).
func TestBackupIsAConsistentCopy(t *testing.T) {
	t.Parallel()
	db, _ := openFile(t, store.Options{})
	db.Update(ctx, func(tx store.Tx) error {
		return tx.AddAuthEvent(&store.AuthEvent{ID: "ev1", ProjectID: "p", CreatedAt: time.Now()})
	})
	var buf bytes.Buffer
	var size int64
	n, err := db.Backup(ctx, &buf, func(s int64) { size = s })
	if err != nil || n != size || int64(buf.Len()) != n {
		t.Fatalf("backup: n=%d size=%d len=%d err=%v", n, size, buf.Len(), err)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	os.WriteFile(path, buf.Bytes(), 0o600)
	cp, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	if err := cp.(store.File).Check(); err != nil {
		t.Fatal(err)
	}
	var found int
	cp.View(ctx, func(tx store.Tx) error {
		evs, _, _ := tx.AuthEvents(store.AuthEventFilter{ProjectID: "p", Limit: 10})
		found = len(evs)
		return nil
	})
	if found != 1 {
		t.Fatalf("copy has %d events", found)
	}
}
