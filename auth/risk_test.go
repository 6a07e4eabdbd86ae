package auth

import (
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/internal/testkit"
)

func TestRiskVelocity(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in the in-memory risk engine")
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := NewRisk(func() time.Time { return now })
	ip := netip.MustParseAddr("203.0.113.9")
	for i := 0; i < RiskMaxFailures; i++ {
		r.Fail("p", ip)
		now = now.Add(10 * time.Second)
	}
	if r.Blocked("p", ip) {
		t.Fatal("blocked at 30 failures, want only above 30")
	}
	r.Fail("p", ip)
	if !r.Blocked("p", ip) {
		t.Fatal("not blocked after 31 failures in 10 minutes")
	}
	if r.Blocked("other", ip) {
		t.Fatal("block leaked to another project")
	}
	now = now.Add(RiskBlockFor)
	if r.Blocked("p", ip) {
		t.Fatal("still blocked after 15 minutes")
	}
}

func TestRiskWindowSlides(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in the in-memory risk engine")
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := NewRisk(func() time.Time { return now })
	ip := netip.MustParseAddr("2001:db8::1")
	for i := 0; i < 60; i++ { // 60 failures, one every 30 s: at most 20 per window
		r.Fail("p", ip)
		now = now.Add(30 * time.Second)
	}
	if r.Blocked("p", ip) {
		t.Fatal("blocked by failures spread over 30 minutes")
	}
}

func TestRiskMemoryBounded(t *testing.T) {
	testkit.EngineFree(t, "measures the risk engine's memory")
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := NewRisk(func() time.Time { return now })
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	base := netip.MustParseAddr("10.0.0.0").As4()
	for i := 0; i < 1_000_000; i++ {
		b := base
		b[1], b[2], b[3] = byte(i>>16), byte(i>>8), byte(i)
		r.Fail("p", netip.AddrFrom4(b))
	}
	if n := r.Tracked(); n > RiskMaxTracked {
		t.Fatalf("tracking %d pairs, bound is %d", n, RiskMaxTracked)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<20 {
		t.Fatalf("heap grew %d MiB for one million IPs", grown>>20)
	}
	// A real attacker among them is still caught.
	bad := netip.MustParseAddr("198.51.100.1")
	for i := 0; i <= RiskMaxFailures; i++ {
		r.Fail("p", bad)
	}
	if !r.Blocked("p", bad) {
		t.Fatal("attacker not blocked under load")
	}
}

// TestRiskAttackerSurvivesFlood: an address that keeps failing is still
// blocked while a flood of one-shot addresses fills the tracker, because
// eviction drops single-failure entries first.
func TestRiskAttackerSurvivesFlood(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "floods the in-memory risk engine")
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := NewRisk(func() time.Time { return now })
	bad := netip.MustParseAddr("198.51.100.1")
	base := netip.MustParseAddr("10.0.0.0").As4()
	flood := 0
	for attempt := 0; attempt <= RiskMaxFailures; attempt++ {
		r.Fail("p", bad)
		for j := 0; j < 20_000; j++ { // 620,000 one-shot addresses in all
			b := base
			b[1], b[2], b[3] = byte(flood>>16), byte(flood>>8), byte(flood)
			r.Fail("p", netip.AddrFrom4(b))
			flood++
		}
	}
	if n := r.Tracked(); n > RiskMaxTracked {
		t.Fatalf("tracking %d pairs, bound is %d", n, RiskMaxTracked)
	}
	if !r.Blocked("p", bad) {
		t.Fatal("a repeat offender was evicted by a flood of one-shot addresses")
	}
}

// TestRiskBoundWithBlockedAddresses: even a tracker full of blocked
// addresses cannot grow past its bound.
func TestRiskBoundWithBlockedAddresses(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "fills the in-memory risk engine")
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := NewRisk(func() time.Time { return now })
	n := 0
	for i := range r.shards { // fill every shard with blocked entries
		for len(r.shards[i].m) < RiskMaxTracked/riskShards {
			ip := netip.AddrFrom4([4]byte{10, byte(n >> 16), byte(n >> 8), byte(n)})
			r.shards[i].m[riskKey{project: "p", ip: ip}] = &ipState{last: now, blockedUntil: now.Add(RiskBlockFor)}
			n++
		}
	}
	for i := 0; i < 100_000; i++ {
		r.Fail("p", netip.AddrFrom4([4]byte{172, byte(i >> 16), byte(i >> 8), byte(i)}))
	}
	if got := r.Tracked(); got > RiskMaxTracked {
		t.Fatalf("tracking %d pairs, bound is %d", got, RiskMaxTracked)
	}
}

// TestRiskReserveIsAtomic: 200 concurrent verifications from one key,
// all wrong. Reserving a slot before the check and settling after lets
// exactly as many be evaluated as one at a time would: RiskMaxFailures+1
// (the failure that makes "more than 30"); the rest are refused. The old
// check-then-count let 94 to 148 through.
func TestRiskReserveIsAtomic(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in the in-memory risk engine")
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := NewRisk(func() time.Time { return now })
	k := ipKey("p", netip.MustParseAddr("203.0.113.9"))
	var evaluated atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if !r.reserve(k) {
				return
			}
			evaluated.Add(1)
			runtime.Gosched() // the credential check
			r.settle(k, true, true)
		}()
	}
	close(start)
	wg.Wait()
	if got := evaluated.Load(); got != RiskMaxFailures+1 {
		t.Fatalf("%d wrong guesses evaluated, want exactly %d", got, RiskMaxFailures+1)
	}
	if !r.Blocked("p", netip.MustParseAddr("203.0.113.9")) {
		t.Fatal("not blocked after the evaluated failures")
	}
}

// TestRiskReserveSuccessFreesSlot: verifications that succeed take a
// slot only while in flight; they never count and never block.
func TestRiskReserveSuccessFreesSlot(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in the in-memory risk engine")
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := NewRisk(func() time.Time { return now })
	k := riskKey{project: "p", kind: riskByEmail, account: "a@example.com"}
	for i := 0; i < 1000; i++ {
		if !r.reserve(k) {
			t.Fatalf("success %d refused", i)
		}
		r.settle(k, true, false)
	}
	// 31 slots in flight at once: a 32nd waits for one of them.
	for i := 0; i <= RiskMaxFailures; i++ {
		if !r.reserve(k) {
			t.Fatalf("slot %d refused", i)
		}
	}
	if r.reserve(k) {
		t.Fatal("a 32nd verification in flight was admitted")
	}
	r.settle(k, true, false)
	if !r.reserve(k) {
		t.Fatal("a freed slot was not reusable")
	}
}

// TestRiskIPv6CountsPerSlash64: an attacker rotating addresses inside
// their /64 is one key; the next /64 is another.
func TestRiskIPv6CountsPerSlash64(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in the in-memory risk engine")
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	r := NewRisk(func() time.Time { return now })
	for i := 0; i <= RiskMaxFailures; i++ {
		r.Fail("p", netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 0, 0, 0, 0, 0, 0, byte(i >> 8), byte(i)}))
	}
	if !r.Blocked("p", netip.MustParseAddr("2001:db8:1:2:ffff::1")) {
		t.Fatal("rotating inside one /64 escaped the block")
	}
	if r.Blocked("p", netip.MustParseAddr("2001:db8:1:3::1")) {
		t.Fatal("the neighbouring /64 is blocked too")
	}
	if r.Blocked("p", netip.MustParseAddr("203.0.113.9")) {
		t.Fatal("an IPv4 address is blocked")
	}
}
