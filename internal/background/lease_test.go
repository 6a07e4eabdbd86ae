package background

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeLeases is a LeaseStore with store.DB.Lease's rule (acquire when
// free or run out, renew for the holder, release with ttl 0) on a clock
// the test moves: the database's clock.
type fakeLeases struct {
	mu   sync.Mutex
	now  time.Time
	rows map[string]fakeLease
	down bool // unreachable: every call fails
}

type fakeLease struct {
	holder string
	until  time.Time
}

func (f *fakeLeases) Lease(_ context.Context, name, holder string, ttl time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		return false, errors.New("database unreachable")
	}
	r, ok := f.rows[name]
	if ttl <= 0 {
		if ok && r.holder == holder {
			f.rows[name] = fakeLease{holder, time.Time{}}
		}
		return false, nil
	}
	if ok && r.holder != holder && !r.until.Before(f.now) {
		return false, nil
	}
	f.rows[name] = fakeLease{holder, f.now.Add(ttl)}
	return true, nil
}

func (f *fakeLeases) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeLeases) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// TestLeasesTakeover: of two replicas, the first to try holds each
// lease, and renewing keeps it; the other's tries fail. Once the holder
// stops renewing (dead), its lease counts as held until TTL after its
// last renewal and no longer; the other takes it at its next try after
// that (within TTL + Renew of the last renewal), and is woken for it.
// Nothing sleeps: both replicas and the store share a fake clock.
func TestLeasesTakeover(t *testing.T) {
	db := &fakeLeases{now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), rows: map[string]fakeLease{}}
	const ttl = 15 * time.Second
	newReplica := func(name string, woken *atomic.Int64) *Leases {
		l := &Leases{Store: db, Holder: name, TTL: ttl, Clock: db.clock, Logger: slog.New(slog.DiscardHandler)}
		l.Add("sweep", nil)
		l.Add("mail", func() { woken.Add(1) })
		return l
	}
	var wokenA, wokenB atomic.Int64
	a, b := newReplica("a", &wokenA), newReplica("b", &wokenB)
	// The first round (as Start does): a acquires, b does not; nobody is
	// woken for a lease held from the start.
	if a.Renew != ttl/3 {
		t.Fatalf("Renew %v, want TTL/3", a.Renew)
	}
	for _, l := range []*Leases{a, b} {
		if err := l.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		l.started = true
	}
	if !a.Held("mail") || !a.Held("sweep") || b.Held("mail") || b.Held("sweep") {
		t.Fatalf("after the first round: a holds %v/%v, b %v/%v; want a both, b none", a.Held("mail"), a.Held("sweep"), b.Held("mail"), b.Held("sweep"))
	}
	// a renews every Renew: b never gets in.
	for range 6 {
		db.advance(a.Renew)
		a.RunOnce(ctx)
		b.RunOnce(ctx)
		if !a.Held("mail") || b.Held("mail") {
			t.Fatal("the lease moved while its holder renewed it")
		}
	}
	// a dies: it stops renewing. Until TTL after its last renewal it
	// still counts the lease as held (and the store agrees: b's tries
	// fail); from then on, neither holds it until b's next try.
	lastRenewal := db.clock()
	for db.clock().Before(lastRenewal.Add(ttl)) {
		db.advance(b.Renew)
		b.RunOnce(ctx)
		if a.Held("mail") && b.Held("mail") {
			t.Fatal("both replicas count the lease as held")
		}
		if b.Held("mail") && db.clock().Sub(lastRenewal) <= ttl {
			t.Fatalf("b took the lease %v after a's last renewal, before its TTL ran out", db.clock().Sub(lastRenewal))
		}
	}
	for !b.Held("mail") {
		if db.clock().Sub(lastRenewal) > ttl+b.Renew {
			t.Fatalf("b has not taken the lease %v after a's last renewal", db.clock().Sub(lastRenewal))
		}
		db.advance(b.Renew)
		b.RunOnce(ctx)
	}
	if a.Held("mail") {
		t.Fatal("the dead holder still counts the lease as held")
	}
	if wokenB.Load() != 1 || wokenA.Load() != 0 {
		t.Fatalf("woken: a %d, b %d; want b once, for the lease it took over", wokenA.Load(), wokenB.Load())
	}
	taken := db.clock().Sub(lastRenewal)
	if taken > 30*time.Second {
		t.Fatalf("takeover after %v; decided: within 30 s", taken)
	}
	t.Logf("default TTL %v: takeover %v after the holder's last renewal", ttl, taken)
}

// TestLeasesOutage: a holder that cannot reach the store keeps its lease
// only until TTL after its last renewal (another replica may take it
// then), and gets it back, woken, once the store answers and the lease
// is free. Close releases held leases for another replica to take at
// once.
func TestLeasesOutage(t *testing.T) {
	db := &fakeLeases{now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), rows: map[string]fakeLease{}}
	var woken atomic.Int64
	a := &Leases{Store: db, Holder: "a", TTL: 3 * time.Second, Clock: db.clock, Logger: slog.New(slog.DiscardHandler)}
	a.Add("webhooks", func() { woken.Add(1) })
	a.RunOnce(ctx)
	a.started = true
	db.mu.Lock()
	db.down = true
	db.mu.Unlock()
	db.advance(2 * time.Second)
	if err := a.RunOnce(ctx); err == nil || !a.Held("webhooks") {
		t.Fatalf("store down within the TTL: err %v, held %v; want the error and the lease still held", err, a.Held("webhooks"))
	}
	db.advance(time.Second)
	if a.Held("webhooks") {
		t.Fatal("lease held past its TTL without a renewal")
	}
	db.mu.Lock()
	db.down = false
	db.mu.Unlock()
	if err := a.RunOnce(ctx); err != nil || !a.Held("webhooks") || woken.Load() != 1 {
		t.Fatalf("store back: err %v, held %v, woken %d; want the lease again and one wake", err, a.Held("webhooks"), woken.Load())
	}

	b := &Leases{Store: db, Holder: "b", TTL: time.Hour, Clock: db.clock, Logger: slog.New(slog.DiscardHandler)}
	b.Add("webhooks", nil)
	if b.RunOnce(ctx); b.Held("webhooks") {
		t.Fatal("b took a held lease")
	}
	a.Close()
	if a.Held("webhooks") {
		t.Fatal("a still holds the lease after Close")
	}
	if b.RunOnce(ctx); !b.Held("webhooks") {
		t.Fatal("b could not take the lease a released")
	}
}

// TestLeasesFirm: Firm reports a lease held with at least half its TTL
// left: true after each renewal, false once a renewal is late by more
// than a sixth of the TTL (before the lease runs out), and false for a
// lease another replica holds.
func TestLeasesFirm(t *testing.T) {
	db := &fakeLeases{now: time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC), rows: map[string]fakeLease{}}
	a := &Leases{Store: db, Holder: "a", TTL: 12 * time.Second, Clock: db.clock, Logger: slog.New(slog.DiscardHandler)}
	a.Add("mail", nil)
	firm := a.Firm("mail")
	if firm() {
		t.Fatal("firm before the lease was ever taken")
	}
	a.RunOnce(ctx)
	if !firm() {
		t.Fatal("not firm just after taking the lease")
	}
	db.advance(5 * time.Second) // 7 s left
	if !firm() {
		t.Fatal("not firm with 7 s of 12 left")
	}
	db.advance(2 * time.Second) // 5 s left: still held, no longer firm
	if firm() || !a.Held("mail") {
		t.Fatalf("5 s of 12 left: firm %v, held %v; want held, not firm", firm(), a.Held("mail"))
	}
	a.RunOnce(ctx) // renewed
	if !firm() {
		t.Fatal("not firm after the renewal")
	}
	b := &Leases{Store: db, Holder: "b", TTL: 12 * time.Second, Clock: db.clock, Logger: slog.New(slog.DiscardHandler)}
	b.Add("mail", nil)
	b.RunOnce(ctx)
	if b.Firm("mail")() {
		t.Fatal("b is firm on a lease a holds")
	}
}

// TestTaskHold: a task whose Hold is false runs nothing when it ticks or
// is woken; once Hold is true it runs.
func TestTaskHold(t *testing.T) {
	var hold atomic.Bool
	var runs, asked atomic.Int64
	task := &Task{Name: "held", Interval: time.Hour, AtStart: true,
		Hold: func() bool { asked.Add(1); return hold.Load() },
		Run:  func(context.Context) error { runs.Add(1); return nil }}
	task.Start()
	defer task.Close()
	waitUntil(t, func() bool { return asked.Load() == 1 }) // the run at start
	task.Wake()
	waitUntil(t, func() bool { return asked.Load() == 2 }) // the wake-up
	if runs.Load() != 0 {
		t.Fatalf("ran %d times without holding its lease", runs.Load())
	}
	hold.Store(true)
	task.Wake()
	waitUntil(t, func() bool { return runs.Load() == 1 })
}

var ctx = context.Background()
