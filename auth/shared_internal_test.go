package auth

import (
	"bytes"
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// replicas returns n services on one shared store (n handles on one
// PostgreSQL database: n replicas) on one clock. On bbolt, which one
// process owns, the test is skipped: it ran on the postgres pass.
func replicas(t *testing.T, n int, now func() time.Time) []*Service {
	t.Helper()
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("limits across replicas need a shared store: this test runs on the postgres pass (LATCHKEY_TEST_STORE=postgres)")
	}
	dsn := storetest.New(t)
	keys, err := store.NewKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var out []*Service
	for range n {
		db, _, err := store.Open(context.Background(), dsn, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s, err := New(db, keys, Config{BaseURL: "https://auth.example.com", AdminToken: "adm_replica_test_token_0123", Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if s.shared == nil {
			t.Fatal("a PostgreSQL store does not share limits")
		}
		out = append(out, s)
	}
	return out
}

// TestVelocityExactAcrossReplicas: concurrent wrong guesses from one
// address on three replicas: exactly RiskMaxFailures+1 are evaluated, as
// one process would (TestRiskReserveIsAtomic), then every replica
// refuses.
func TestVelocityExactAcrossReplicas(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rs := replicas(t, 3, func() time.Time { return now })
	k := ipKey("project", netip.MustParseAddr("2001:db8::1"))
	var evaluated atomic.Int64
	var wg sync.WaitGroup
	for g := range 24 {
		s := rs[g%len(rs)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 4 {
				ok, err := s.reserveVelocity(ctx, k)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					evaluated.Add(1)
					s.settleVelocity(ctx, k, true, true)
				}
			}
		}()
	}
	wg.Wait()
	if got := evaluated.Load(); got != RiskMaxFailures+1 {
		t.Fatalf("%d wrong guesses evaluated across replicas, want exactly %d", got, RiskMaxFailures+1)
	}
	// The same /64 on another replica is blocked too.
	other := ipKey("project", netip.MustParseAddr("2001:db8::ffff"))
	for _, s := range rs {
		if ok, err := s.reserveVelocity(ctx, other); ok || err != nil {
			t.Fatalf("reserve on a blocked /64: %v, %v", ok, err)
		}
	}
}

// TestRateLimitAcrossReplicas: a key over its limit on three replicas,
// requests spread over them, each syncing every half second: in every
// rolling minute the replicas together allow no more than the limit
// plus 10% plus a second of the key's traffic per replica, and not much
// less than the limit either. Without the sync each would allow the
// limit on its own (three times it).
func TestRateLimitAcrossReplicas(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	rs := replicas(t, 3, clock)
	const limit, perTick, ticks = 100, 1, 2 * 180 // one request per replica every half second, three minutes
	// allowed[0][i] is what the replicas allowed the API key in half
	// second i, allowed[1][i] the session.
	var allowed [2][ticks]int
	for i := range ticks {
		for _, s := range rs {
			for range perTick {
				if s.limiter.Allow("key1", limit).Allowed {
					allowed[0][i]++
				}
				if ok, _ := s.activity.hit("session1", 0, clock().Unix(), limit); ok {
					allowed[1][i]++
				}
			}
			if err := s.SyncLimits(ctx); err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		now = now.Add(500 * time.Millisecond)
		mu.Unlock()
	}
	perSecond := 2 * perTick // one replica's traffic in a second
	bound := limit + limit/10 + len(rs)*perSecond
	lo := limit - limit/10
	for which, name := range []string{"API key", "session"} {
		for end := 120; end <= ticks; end++ {
			sum := 0
			for i := end - 120; i < end; i++ {
				sum += allowed[which][i]
			}
			if sum > bound {
				t.Fatalf("%s: %d allowed in the minute ending at tick %d, bound %d", name, sum, end, bound)
			}
			if sum < lo {
				t.Fatalf("%s: %d allowed in the minute ending at tick %d, want at least %d", name, sum, end, lo)
			}
		}
	}
}

// TestRateLimitSyncKeepsOneReplicaExact: with one replica on a shared
// store the limit is what it is on bbolt (the others' counts are none).
func TestRateLimitSyncKeepsOneReplicaExact(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s := replicas(t, 1, func() time.Time { return now })[0]
	for i := range 150 {
		res := s.limiter.Allow("k", 100)
		if res.Allowed != (i < 100) {
			t.Fatalf("request %d: allowed %v", i, res.Allowed)
		}
		if i%10 == 0 {
			if err := s.SyncLimits(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestInitOnceAcrossReplicas: replicas starting together on an empty
// database create the first-start state once; the others learn the
// generated admin token's hash, so every replica accepts it.
func TestInitOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rs := replicas(t, 3, func() time.Time { return now })
	for _, s := range rs {
		s.adminToken = "" // the token is generated, not configured
	}
	boots := make([]*Bootstrap, len(rs))
	var wg sync.WaitGroup
	for i, s := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := s.Init(ctx)
			if err != nil {
				t.Error(err)
			}
			boots[i] = b
		}()
	}
	wg.Wait()
	var token string
	for _, b := range boots {
		if b != nil {
			if token != "" {
				t.Fatal("two replicas created the first-start state")
			}
			token = b.AdminToken
		}
	}
	if token == "" {
		t.Fatal("no replica created the first-start state")
	}
	var n int
	if err := rs[0].db.View(ctx, func(tx store.Tx) error {
		ps, err := tx.Projects()
		n = len(ps)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d projects after three first starts, want 1", n)
	}
	for i, s := range rs {
		if err := s.CheckAdmin("Bearer " + token); err != nil {
			t.Fatalf("replica %d refuses the generated admin token: %v", i, err)
		}
	}
}
