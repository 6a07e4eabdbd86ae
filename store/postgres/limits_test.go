package postgres_test

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/store"
)

// openTwo opens two handles on one new database: two replicas.
func openTwo(t *testing.T) (a, b store.Shared) {
	t.Helper()
	url := newDatabase(t)
	var dbs [2]store.DB
	for i := range dbs {
		db, _, err := store.Open(context.Background(), url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	return dbs[0].(store.Shared), dbs[1].(store.Shared)
}

var rule = store.VelocityRule{Max: 30, BlockFor: 15 * time.Minute, Hold: time.Minute}

// TestVelocityExactAcrossReplicas: many verifications at once on two
// replicas, each failing: exactly Max+1 are evaluated, as one process
// evaluating them one at a time would, then the key is blocked.
func TestVelocityExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	a, b := openTwo(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	key := []byte("project/ip")
	var evaluated, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		db := a
		if g%2 == 1 {
			db = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 8 {
				ok, err := db.ReserveVelocity(ctx, key, now, rule)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					refused.Add(1)
					continue
				}
				evaluated.Add(1)
				if err := db.SettleVelocity(ctx, key, now, true, true, rule); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := evaluated.Load(); got != int64(rule.Max+1) {
		t.Fatalf("%d verifications evaluated, want exactly %d", got, rule.Max+1)
	}
	if got := refused.Load(); got != 16*8-int64(rule.Max+1) {
		t.Fatalf("%d refused, want %d", got, 16*8-rule.Max-1)
	}
	// Blocked on both replicas, for BlockFor after the last failure.
	for _, db := range []store.Shared{a, b} {
		if ok, _ := db.ReserveVelocity(ctx, key, now.Add(rule.BlockFor-time.Second), rule); ok {
			t.Fatal("a slot while blocked")
		}
	}
	// After the block and the window, the key starts afresh.
	later := now.Add(rule.BlockFor + time.Second)
	if ok, err := a.ReserveVelocity(ctx, key, later, rule); err != nil || !ok {
		t.Fatalf("after the block: %v, %v", ok, err)
	}
}

// TestVelocityWindowSlides: failures leave the count ten minutes after
// their minute; a success frees its slot without counting.
func TestVelocityWindowSlides(t *testing.T) {
	t.Parallel()
	a, b := openTwo(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0) // a whole minute
	key := []byte("k")
	// Max failures spread over two minutes on two replicas: not blocked.
	for i := range rule.Max {
		db, at := a, now
		if i%2 == 1 {
			db, at = b, now.Add(time.Minute)
		}
		if ok, err := db.ReserveVelocity(ctx, key, at, rule); err != nil || !ok {
			t.Fatalf("reserve %d: %v %v", i, ok, err)
		}
		if err := db.SettleVelocity(ctx, key, at, true, true, rule); err != nil {
			t.Fatal(err)
		}
	}
	// Successes do not count.
	for range 5 {
		if ok, err := a.ReserveVelocity(ctx, key, now.Add(time.Minute), rule); err != nil || !ok {
			t.Fatalf("reserve: %v %v", ok, err)
		}
		if err := a.SettleVelocity(ctx, key, now.Add(time.Minute), true, false, rule); err != nil {
			t.Fatal(err)
		}
	}
	// One slot left (Max failures + 0 in flight <= Max): take it and hold it.
	at := now.Add(2 * time.Minute)
	if ok, _ := b.ReserveVelocity(ctx, key, at, rule); !ok {
		t.Fatal("the last slot was refused")
	}
	if ok, _ := a.ReserveVelocity(ctx, key, at, rule); ok {
		t.Fatal("a slot past Max+1 in flight")
	}
	// The held slot's process died: after Hold it no longer counts.
	if ok, _ := a.ReserveVelocity(ctx, key, at.Add(rule.Hold+time.Second), rule); !ok {
		t.Fatal("a dead process's slot still counts after Hold")
	}
	// Ten minutes after the first minute its failures are gone: the
	// count is the second minute's 15, and the slot taken after Hold is
	// stale by then too: 16 slots until 15 + 16 in flight pass Max+1.
	at = now.Add(10 * time.Minute)
	n := 0
	for {
		ok, err := a.ReserveVelocity(ctx, key, at, rule)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		n++
	}
	if want := rule.Max - rule.Max/2 + 1; n != want {
		t.Fatalf("%d slots after the first minute left the window, want %d", n, want)
	}
	// Sweep: rows untouched since before go.
	if got, err := a.SweepVelocity(ctx, at.Add(time.Second)); err != nil || got != 1 {
		t.Fatalf("swept %d, %v; want 1", got, err)
	}
}

// TestFailWithoutReserve: a failure counted for a key without a row
// creates it, and a Max of 0 blocks at once.
func TestFailWithoutReserve(t *testing.T) {
	t.Parallel()
	a, _ := openTwo(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	r := rule
	r.Max = 0
	if err := a.SettleVelocity(ctx, []byte("x"), now, false, true, r); err != nil {
		t.Fatal(err)
	}
	if ok, _ := a.ReserveVelocity(ctx, []byte("x"), now, r); ok {
		t.Fatal("not blocked after a failure past Max 0")
	}
}

// TestSyncRates: each replica reads the others' counts, never its own,
// and a count replaces the replica's earlier one.
func TestSyncRates(t *testing.T) {
	t.Parallel()
	a, b := openTwo(t)
	ctx := context.Background()
	if _, err := a.SyncRates(ctx, "A", []store.RateCount{{Key: "k:1", Slot: 10, N: 3}, {Key: "k:1", Slot: 11, N: 1}, {Key: "k:2", Slot: 11, N: 5}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SyncRates(ctx, "A", []store.RateCount{{Key: "k:1", Slot: 11, N: 4}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	got, err := b.SyncRates(ctx, "B", []store.RateCount{{Key: "k:1", Slot: 11, N: 2}}, []string{"k:1", "k:3"}, 11)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (store.RateCount{Key: "k:1", Slot: 11, N: 4}) {
		t.Fatalf("B read %v, want A's k:1 slot 11 = 4", got)
	}
	got, err = a.SyncRates(ctx, "A", nil, []string{"k:1", "k:2"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != (store.RateCount{Key: "k:1", Slot: 11, N: 2}) {
		t.Fatalf("A read %v, want B's k:1 slot 11 = 2", got)
	}
	if n, err := a.SweepRates(ctx, 11); err != nil || n != 1 {
		t.Fatalf("swept %d, %v; want 1", n, err)
	}
	got, _ = b.SyncRates(ctx, "C", nil, []string{"k:1", "k:2"}, 0)
	sort.Slice(got, func(i, j int) bool { return got[i].Key < got[j].Key })
	if len(got) != 2 || got[0].N != 6 || got[1].N != 5 {
		t.Fatalf("C read %v, want k:1 = 6 (A's 4 and B's 2), k:2 = 5", got)
	}
}
