package bolt_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"latchkey/store"
)

// The group commit's own tests (bbolt only).

// TestBatchCallerNotHeld: a Batch call returns once the commit holding
// its function is done, while the committer goes on with later calls
// (with a leader chosen among callers, the first caller ran the later
// commits too and was held until the queue was empty).
func TestBatchCallerNotHeld(t *testing.T) {
	t.Parallel()
	db, _ := openFile(t, store.Options{})
	aRunning, releaseA := make(chan struct{}), make(chan struct{})
	bRunning, releaseB := make(chan struct{}), make(chan struct{})
	aDone, bDone := make(chan error, 1), make(chan error, 1)
	first := true
	go func() {
		aDone <- db.Batch(ctx, func(tx store.Tx) error {
			if first { // a function may run twice: block only the first time
				first = false
				close(aRunning)
				<-releaseA
			}
			return tx.SetAdminTokenHash([]byte("a"))
		})
	}()
	<-aRunning
	bFirst := true
	go func() {
		bDone <- db.Batch(ctx, func(tx store.Tx) error {
			if bFirst {
				bFirst = false
				close(bRunning)
				<-releaseB
			}
			return tx.SetAdminTokenHash([]byte("b"))
		})
	}()
	waitQueued(t, db)
	close(releaseA)
	<-bRunning // the committer runs B's commit now
	select {
	case err := <-aDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("A's Batch is still held while B's commit runs")
	}
	close(releaseB)
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
}

// waitQueued waits (polling, for at most 10 s) until a Batch call is
// queued behind the running commit.
func waitQueued(t *testing.T, db store.DB) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !db.(interface{ BatchQueued() bool }).BatchQueued() {
		if time.Now().After(deadline) {
			t.Fatal("the second Batch call was never queued")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBatchClose: calls queued when Close begins are committed; later
// calls get ErrClosed.
func TestBatchClose(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "latchkey.db")
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	running, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 2)
	once := true
	go func() {
		done <- db.Batch(ctx, func(tx store.Tx) error {
			if once {
				once = false
				close(running)
				<-release
			}
			return tx.SetAdminTokenHash([]byte("first"))
		})
	}()
	<-running
	go func() {
		done <- db.Batch(ctx, func(tx store.Tx) error { return tx.SetAdminTokenHash([]byte("queued")) })
	}()
	waitQueued(t, db)
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("a call queued before Close: %v", err)
		}
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if err := db.Batch(ctx, func(store.Tx) error { return nil }); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Batch after Close: %v, want ErrClosed", err)
	}
	db, _, err = store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(ctx, func(tx store.Tx) error {
		if got, _ := tx.AdminTokenHash(); string(got) != "queued" {
			t.Fatalf("stored %q, want the queued call's write", got)
		}
		return nil
	})
}
