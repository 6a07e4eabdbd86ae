package store_test

import (
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestLeaseOneHolder: on either backend a holder gets a free lease and
// renews it, and a release reports it no longer held. On a bbolt file,
// which one process owns, every holder holds every lease; on PostgreSQL
// a second holder is refused while the first's lease runs
// (store/postgres tests the rest: expiry, release, races).
func TestLeaseOneHolder(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	for _, ttl := range []time.Duration{time.Minute, time.Minute} {
		if held, err := db.Lease(ctx, "sweep", "a", ttl); err != nil || !held {
			t.Fatalf("Lease by a: %v, %v; want held", held, err)
		}
	}
	held, err := db.Lease(ctx, "sweep", "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := storetest.Backend(t) == storetest.Bolt; held != want {
		t.Fatalf("Lease by b while a holds it: %v, want %v on %s", held, want, storetest.Backend(t))
	}
	if held, err := db.Lease(ctx, "sweep", "a", 0); err != nil || held {
		t.Fatalf("release: %v, %v; want not held", held, err)
	}
}

// TestWatchCancel: Watch returns a cancel function on either backend;
// a bbolt file never calls the watcher (its own process made every
// change, and its callers drop their copies themselves).
func TestWatchCancel(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	called := make(chan store.Change, 16)
	cancel := db.Watch(func(c store.Change) { called <- c })
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.SetAdminTokenHash([]byte("h")) }); err != nil {
		t.Fatal(err)
	}
	cancel()
	if storetest.Backend(t) == storetest.Bolt && len(called) != 0 {
		t.Fatalf("a bbolt file told a watcher %v", <-called)
	}
}
