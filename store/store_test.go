package store_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// The store's contract is tested by package storetest's suites, which
// store/bolt and store/postgres run on their own stores. The tests of
// this package are of its own code (the keyring, the event positions,
// the Mover contract's kinds) and, through storetest.Open, of what the
// contract says on the backend LATCHKEY_TEST_STORE names.

func TestMain(m *testing.M) { os.Exit(storetest.RunMain(m)) }

// ctx is the context of the tests' store calls: never cancelled.
var ctx = context.Background()

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
