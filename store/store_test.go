package store_test

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

	bolt "go.etcd.io/bbolt"

	"latchkey/store"
	"latchkey/store/storetest"
)

// The store's contract is tested by package storetest's suites, which
// TestConformance (conformance_test.go) runs on bbolt files and
// store/postgres on PostgreSQL. The other tests of this package that
// open their store with storetest.Open run on the backend
// LATCHKEY_TEST_STORE names; those about what only a bbolt file does
// (its lock, its pages, its group commit, CheckFile) open a file with
// openFile and run on bbolt whatever it names.

func TestMain(m *testing.M) { os.Exit(storetest.RunMain(m)) }

// ctx is the context of the tests' store calls: never cancelled.
var ctx = context.Background()

// openFile opens a new bbolt data file in t.TempDir (bbolt-only tests),
// closed and checked when the test ends.
func openFile(t *testing.T, opt store.Options) (store.DB, store.File) {
	t.Helper()
	storetest.BoltOnly(t)
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

// t0 is the tests' fixed time.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// mustTx runs fn in a write transaction and fails t on its error.
func mustTx(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.Update(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

// check runs the file's consistency check in the middle of a test, on
// bbolt; other backends have nothing to check.
func check(t *testing.T, db store.DB) {
	t.Helper()
	if f, ok := db.(store.File); ok {
		if err := f.Check(); err != nil {
			t.Fatal(err)
		}
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
	b, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Update(func(tx *bolt.Tx) error {
		v := make([]byte, 8)
		binary.BigEndian.PutUint64(v, store.SchemaVersion+1)
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

func TestKeyring(t *testing.T) {
	t.Parallel()
	k1, _ := store.NewKeyring(bytes.Repeat([]byte{1}, 32))
	k2, _ := store.NewKeyring(bytes.Repeat([]byte{2}, 32))
	if _, err := store.NewKeyring([]byte("short")); err == nil {
		t.Fatal("short master key accepted")
	}
	sealed, err := k1.Seal([]byte("totp secret"), []byte("totp:u1"))
	if err != nil || bytes.Contains(sealed, []byte("totp secret")) {
		t.Fatalf("seal: %v", err)
	}
	if got, err := k1.Open(sealed, []byte("totp:u1")); err != nil || string(got) != "totp secret" {
		t.Fatalf("open: %q %v", got, err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"other aad":    func() ([]byte, error) { return k1.Open(sealed, []byte("totp:u2")) },
		"other master": func() ([]byte, error) { return k2.Open(sealed, []byte("totp:u1")) },
		"truncated":    func() ([]byte, error) { return k1.Open(sealed[:5], []byte("totp:u1")) },
	} {
		if _, err := open(); !errors.Is(err, store.ErrDecrypt) {
			t.Errorf("%s: err = %v, want ErrDecrypt", name, err)
		}
	}
	a, b := k1.HashString("apikey", "sk_test_x"), k1.HashString("otp", "sk_test_x")
	if a == b || a != k1.HashString("apikey", "sk_test_x") || a == k2.HashString("apikey", "sk_test_x") {
		t.Fatal("hashes must be keyed and domain-separated")
	}
}

func TestLoadMasterKey(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "latchkey.db.key")
	key, created, err := store.LoadMasterKey("", file)
	if err != nil || !created || len(key) != store.MasterKeySize {
		t.Fatalf("create: %v %v", created, err)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v", fi.Mode().Perm())
	}
	again, created, err := store.LoadMasterKey("", file)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatal("second load differs")
	}
	if _, _, err := store.LoadMasterKey("bm90IDMyIGJ5dGVz", file); err == nil {
		t.Fatal("short env key accepted")
	}
	os.WriteFile(file, []byte("garbage"), 0o600)
	if _, _, err := store.LoadMasterKey("", file); err == nil || strings.Contains(err.Error(), "garbage") {
		t.Fatalf("bad file: %v", err)
	}
}
