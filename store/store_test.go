package store_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"latchkey/store"
	"latchkey/store/storetest"
)

// The tests of this package that open their store with storetest.Open
// run on the backend LATCHKEY_TEST_STORE names; those about what only a
// bbolt file does (its lock, its pages, its group commit, CheckFile)
// open a file with openFile and run on bbolt whatever it names.

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

// openDSN opens the store at dsn (storetest.New), closed when the test
// ends.
func openDSN(t *testing.T, dsn string, opt store.Options) store.DB {
	t.Helper()
	db, _, err := store.Open(ctx, dsn, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// reopen closes db and opens dsn again with opt.
func reopen(t *testing.T, db store.DB, dsn string, opt store.Options) store.DB {
	t.Helper()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return openDSN(t, dsn, opt)
}

// must returns v, failing the test (by a panic) on err: for reads whose
// error no test expects.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
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

// TestClosed: after Close, transactions return ErrClosed.
func TestClosed(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	none := func(store.Tx) error { return nil }
	for name, call := range map[string]func() error{
		"View":   func() error { return db.View(ctx, none) },
		"Update": func() error { return db.Update(ctx, none) },
		"Batch":  func() error { return db.Batch(ctx, none) },
	} {
		if err := call(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestCanceled: a context already done refuses a write, changing nothing.
func TestCanceled(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	done, cancel := context.WithCancel(ctx)
	cancel()
	put := func(tx store.Tx) error { return tx.SetAdminTokenHash([]byte("h")) }
	if err := db.Update(done, put); !errors.Is(err, context.Canceled) {
		t.Fatalf("Update: %v, want context.Canceled", err)
	}
	if err := db.Batch(done, put); !errors.Is(err, context.Canceled) {
		t.Fatalf("Batch: %v, want context.Canceled", err)
	}
	db.View(ctx, func(tx store.Tx) error {
		if h, err := tx.AdminTokenHash(); err != nil || h != nil {
			t.Fatalf("stored %q (%v) after refused writes", h, err)
		}
		return nil
	})
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

// TestBatch: concurrent Batch calls all commit; a failing call gets its
// own error and does not undo the others.
func TestBatch(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	var wg sync.WaitGroup
	errs := make([]error, 200)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = db.Batch(ctx, func(tx store.Tx) error {
				if i%50 == 7 {
					return fmt.Errorf("call %d refuses", i)
				}
				return tx.AddAuthEvent(&store.AuthEvent{ID: fmt.Sprintf("ev%03d", i), ProjectID: "p", CreatedAt: time.Unix(int64(i), 0)})
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if i%50 == 7 {
			if err == nil || err.Error() != fmt.Sprintf("call %d refuses", i) {
				t.Fatalf("call %d: err = %v", i, err)
			}
		} else if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	var n int
	db.View(ctx, func(tx store.Tx) error {
		evs, _, err := tx.AuthEvents(store.AuthEventFilter{ProjectID: "p", Limit: 1000})
		n = len(evs)
		return err
	})
	if n != 196 {
		t.Fatalf("%d events committed, want 196", n)
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

// TestDueJobs: each webhook's due jobs come earliest first, a webhook
// without room is skipped, jobs in flight are skipped, future jobs wait.
func TestDueJobs(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	t0 := time.Unix(1_800_000_000, 0)
	db.Update(ctx, func(tx store.Tx) error {
		for i := 0; i < 5; i++ {
			tx.EnqueueJob(&store.Job{WebhookID: "hook-a", EventID: fmt.Sprint("a", i), NextAttemptAt: t0.Add(time.Duration(i) * time.Second)})
			tx.EnqueueJob(&store.Job{WebhookID: "hook-b", EventID: fmt.Sprint("b", i), NextAttemptAt: t0.Add(time.Duration(i) * time.Second)})
		}
		return nil
	})
	due := func(now time.Time, limit int, after string, room map[string]int, skip map[string]bool) []string {
		var ids []string
		db.View(ctx, func(tx store.Tx) error {
			seqs := map[uint64]bool{}
			jobs, err := tx.DueJobs(now, 100, "", 100, func(string, int) int { return 100 }, nil2)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if skip[j.EventID] {
					seqs[j.Seq] = true
				}
			}
			jobs, err = tx.DueJobs(now, limit, after, 100, func(h string, _ int) int { return room[h] }, func(s uint64) bool { return seqs[s] })
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				ids = append(ids, j.EventID)
			}
			return nil
		})
		return ids
	}
	got := fmt.Sprint(due(t0.Add(2*time.Second), 10, "", map[string]int{"hook-a": 2, "hook-b": 10}, map[string]bool{"b0": true}))
	if got != "[a0 a1 b1 b2]" {
		t.Fatalf("due = %s", got)
	}
	if got := fmt.Sprint(due(t0.Add(time.Hour), 3, "", map[string]int{"hook-a": 0, "hook-b": 10}, nil)); got != "[b0 b1 b2]" {
		t.Fatalf("due = %s", got)
	}
	// Round robin: after hook-a comes hook-b, then hook-a again; a
	// one-job scan after hook-a serves hook-b, after hook-b serves hook-a.
	all := map[string]int{"hook-a": 10, "hook-b": 10}
	for _, tt := range []struct{ after, want string }{
		{"hook-a", "[b0]"}, {"hook-b", "[a0]"}, {"hook-0", "[a0]"}, {"hook-z", "[a0]"}, {"", "[a0]"},
	} {
		if got := fmt.Sprint(due(t0.Add(time.Hour), 1, tt.after, all, nil)); got != tt.want {
			t.Fatalf("due after %q = %s, want %s", tt.after, got, tt.want)
		}
	}
	if got := fmt.Sprint(due(t0.Add(time.Second), 10, "hook-a", all, nil)); got != "[b0 b1 a0 a1]" {
		t.Fatalf("due after hook-a = %s, want [b0 b1 a0 a1]", got)
	}
	var next time.Time
	db.View(ctx, func(tx store.Tx) (err error) { next, _, err = tx.NextJobAt(); return err })
	if !next.Equal(t0) {
		t.Fatalf("NextJobAt = %v", next)
	}
}

// TestDueJobsPeek: room hears how many of a webhook's due jobs are not
// skipped, counted up to peek; a webhook without room even at peek is
// passed over without counting.
func TestDueJobsPeek(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	t0 := time.Unix(1_800_000_000, 0)
	var skipSeq uint64
	db.Update(ctx, func(tx store.Tx) error {
		for i := 0; i < 5; i++ {
			j := &store.Job{WebhookID: "hook-a", EventID: fmt.Sprint("a", i), NextAttemptAt: t0}
			tx.EnqueueJob(j)
			if i == 0 {
				skipSeq = j.Seq
			}
		}
		tx.EnqueueJob(&store.Job{WebhookID: "hook-b", EventID: "b0", NextAttemptAt: t0})
		tx.EnqueueJob(&store.Job{WebhookID: "hook-b", EventID: "b1", NextAttemptAt: t0.Add(time.Second)})
		tx.EnqueueJob(&store.Job{WebhookID: "hook-b", EventID: "b2", NextAttemptAt: t0.Add(time.Hour)})
		tx.EnqueueJob(&store.Job{WebhookID: "hook-c", EventID: "c0", NextAttemptAt: t0})
		return nil
	})
	heard := map[string][]int{}
	var ids []string
	db.View(ctx, func(tx store.Tx) error {
		jobs, err := tx.DueJobs(t0.Add(time.Minute), 10, "", 3, func(h string, due int) int {
			heard[h] = append(heard[h], due)
			switch h {
			case "hook-a":
				return due - 1
			case "hook-b":
				return 10
			}
			return 0
		}, func(seq uint64) bool { return seq == skipSeq })
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			ids = append(ids, j.EventID)
		}
		return nil
	})
	if got := fmt.Sprint(ids); got != "[a1 a2 b0 b1]" {
		t.Fatalf("due = %s", got)
	}
	if got := fmt.Sprint(heard); got != "map[hook-a:[3 3] hook-b:[3 2] hook-c:[3]]" {
		t.Fatalf("room heard %s, want each webhook asked at peek, then with its count up to peek", got)
	}
}

func nil2(uint64) bool { return false }
