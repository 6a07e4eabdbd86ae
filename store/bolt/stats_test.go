package bolt_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/store"
)

// TestObserveCommit: every committed write transaction, by Update or
// Batch, is timed; a rolled-back one is not (bbolt only).
func TestObserveCommit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []time.Duration
	db, _, err := store.Open(ctx, filepath.Join(t.TempDir(), "latchkey.db"), store.Options{ObserveCommit: func(d time.Duration) {
		mu.Lock()
		seen = append(seen, d)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put := func(tx store.Tx) error { return tx.SetAdminTokenHash([]byte("h")) }
	if err := db.Update(ctx, put); err != nil {
		t.Fatal(err)
	}
	if err := db.Batch(ctx, put); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := db.Update(ctx, func(tx store.Tx) error { put(tx); return boom }); err != boom {
		t.Fatalf("err=%v, want boom", err)
	}
	func() {
		defer func() { recover() }()
		db.Update(ctx, func(tx store.Tx) error { put(tx); panic("in the transaction") })
	}()
	if err := db.Update(ctx, put); err != nil {
		t.Fatalf("update after a panic: %v (the writer was not released)", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 {
		t.Fatalf("%d commits observed, want 3", len(seen))
	}
	for _, d := range seen {
		if d <= 0 {
			t.Fatalf("commit time %v", d)
		}
	}
}

// TestUsable: an open file is usable; a closed one, or one deleted
// under the server, is not (bbolt only).
func TestUsable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Usable(ctx); err != nil {
		t.Fatalf("Usable=%v", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := db.Usable(ctx); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("Usable after delete=%v, want gone", err)
	}
	db.Close()
	if err := db.Usable(ctx); err == nil || !strings.Contains(err.Error(), "not open") {
		t.Fatalf("Usable after close=%v, want not open", err)
	}
}
