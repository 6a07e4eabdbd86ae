package bolt

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"latchkey/store"
)

// TestWriteHealthLog: failing writes give one error line per minute with
// their count, writes that fail and succeed by turns no more, and a
// recovery line follows each error line once; WriteError tells the state.
func TestWriteHealthLog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	now := t0
	db := openTestDB(t, store.Options{})
	db.health.log = slog.New(slog.NewTextHandler(&buf, nil))
	db.health.now = func() time.Time { return now }
	lines := func() []string { return strings.Split(strings.TrimSpace(buf.String()), "\n") }
	for range 3 {
		db.health.failed(syscall.ENOSPC, 1)
	}
	if err := db.WriteError(); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("WriteError()=%v", err)
	}
	db.health.succeeded()
	if db.WriteError() != nil {
		t.Fatal("WriteError after a success")
	}
	now = now.Add(30 * time.Second)
	for range 5 { // flapping within the minute: counted, not logged
		db.health.failed(syscall.EIO, 2)
		db.health.succeeded()
	}
	now = now.Add(31 * time.Second)
	db.health.failed(syscall.EIO, 1)
	got := lines()
	if len(got) != 3 {
		t.Fatalf("log lines:\n%s", buf.String())
	}
	for i, want := range []string{"failed_writes=1 ", "failed_writes_since_last_line=2", "failed_writes=11 "} {
		if !strings.Contains(got[i], want) {
			t.Fatalf("line %d %q lacks %q", i, got[i], want)
		}
	}
}

// TestWriteFailedOnlyForTheStore: a transaction function's own error
// comes back as it is, not as a failed write, and so does a closed
// file's (the disk-full test in the root package makes real ones).
func TestWriteFailedOnlyForTheStore(t *testing.T) {
	t.Parallel()
	db, _, err := openDB(t.TempDir()+"/w.db", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mine := errors.New("mine")
	if err := db.updateTx(func(txn) error { return mine }); err != mine {
		t.Fatalf("Update=%v, want fn's error as is", err)
	}
	if err := db.batchTx(func(txn) error { return mine }); err != mine {
		t.Fatalf("Batch=%v, want fn's error as is", err)
	}
	if db.WriteError() != nil {
		t.Fatal("a function's error counted as a failed write")
	}
	db.Close()
	if err := db.updateTx(func(txn) error { return nil }); err == nil || errors.Is(err, store.ErrWriteFailed) {
		t.Fatalf("Update on a closed file=%v, want an error that is not ErrWriteFailed", err)
	}
}
