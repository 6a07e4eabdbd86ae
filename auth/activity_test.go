package auth

import (
	"fmt"
	"latchkey/internal/testkit"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestActivityRollingMinute: 120 requests per rolling minute in
// one-second buckets; a refused request is not counted and learns when
// the oldest counted one leaves the minute.
func TestActivityRollingMinute(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in-memory session activity")
	a := newActivity(1024)
	const t0 = int64(1_800_000_000)
	for i := 0; i < 60; i++ { // 60 at t0, 60 at t0+30
		if ok, _ := a.hit("s", 0, t0, DefaultSessionRateLimit); !ok {
			t.Fatalf("request %d refused", i)
		}
	}
	for i := 0; i < 60; i++ {
		if ok, _ := a.hit("s", 0, t0+30, DefaultSessionRateLimit); !ok {
			t.Fatalf("request %d refused", 60+i)
		}
	}
	cases := []struct {
		at    int64
		ok    bool
		retry int
	}{
		{t0 + 30, false, 30},
		{t0 + 59, false, 1},
		{t0 + 59, false, 1}, // refusals are not counted
		{t0 + 60, true, 0},  // the first 60 left the minute
	}
	for _, c := range cases {
		if ok, retry := a.hit("s", 0, c.at, DefaultSessionRateLimit); ok != c.ok || retry != c.retry {
			t.Fatalf("at +%d: ok=%v retry=%d, want %v %d", c.at-t0, ok, retry, c.ok, c.retry)
		}
	}
	if ok, _ := a.hit("other", 0, t0+30, DefaultSessionRateLimit); !ok {
		t.Fatal("another session was limited")
	}
	// A clock that goes back counts in the newest bucket.
	for i := 0; i < 59; i++ {
		if ok, _ := a.hit("s", 0, t0+60, DefaultSessionRateLimit); !ok {
			t.Fatalf("request %d at +60 refused", i)
		}
	}
	if ok, _ := a.hit("s", 0, t0, DefaultSessionRateLimit); ok {
		t.Fatal("a request with an earlier clock escaped the limit")
	}
	// Long idle: the whole window is empty again.
	for i := 0; i < DefaultSessionRateLimit; i++ {
		if ok, _ := a.hit("s", 0, t0+3600, DefaultSessionRateLimit); !ok {
			t.Fatalf("after an hour, request %d refused", i)
		}
	}
}

// TestActivityTakeOncePerSession: however many requests a session made,
// a flush takes it once, with its newest time; a second flush takes
// nothing new; sessions idle for a minute are dropped.
func TestActivityTakeOncePerSession(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in-memory session activity")
	a := newActivity(1024)
	const t0 = int64(1_800_000_000)
	for i := 0; i < 100; i++ {
		a.hit(fmt.Sprint("s", i%3), 0, t0+int64(i%7), 1<<20)
	}
	got := a.take(t0 + 10)
	if len(got) != 3 {
		t.Fatalf("took %v, want 3 sessions", got)
	}
	for _, e := range got {
		if e.seen != t0+6 && e.seen != t0+5 {
			t.Fatalf("took %v: not the newest time", e)
		}
	}
	if again := a.take(t0 + 11); len(again) != 0 {
		t.Fatalf("second take %v, want nothing", again)
	}
	a.hit("s0", 0, t0+20, 1<<20)
	if got := a.take(t0 + 90); len(got) != 1 || got[0].seen != t0+20 {
		t.Fatalf("took %v, want s0 at +20", got)
	}
	if n := a.tracked(); n != 0 {
		t.Fatalf("%d sessions tracked after a minute idle, want 0", n)
	}
	a.restore([]seenEntry{{"s1", t0 + 95}})
	if got := a.lastSeen("s1"); got != t0+95 {
		t.Fatalf("restored last-seen %d, want %d", got, t0+95)
	}
}

// TestActivityTakeSkipsFirstMinute: a session seen only within
// lastSeenLag of its sign-in is marked flushed without being taken (the
// store would not write it); one seen later, or whose sign-in is
// unknown, is taken.
func TestActivityTakeSkipsFirstMinute(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in-memory session activity")
	a := newActivity(1024)
	const t0 = int64(1_800_000_000)
	a.hit("fresh", t0, t0, 1<<20)
	a.hit("fresh", t0, t0+59, 1<<20)
	a.hit("minute", t0, t0+60, 1<<20)
	a.hit("unknown", 0, t0+1, 1<<20)
	got := a.take(t0 + 60)
	slices.SortFunc(got, func(x, y seenEntry) int { return strings.Compare(x.id, y.id) })
	if want := []seenEntry{{"minute", t0 + 60}, {"unknown", t0 + 1}}; !slices.Equal(got, want) {
		t.Fatalf("took %v, want %v", got, want)
	}
	if s := a.lastSeen("fresh"); s != 0 {
		t.Fatalf("skipped session still waits for a flush at %d", s)
	}
	a.hit("fresh", t0, t0+61, 1<<20)
	if got := a.take(t0 + 61); len(got) != 1 || got[0] != (seenEntry{"fresh", t0 + 61}) {
		t.Fatalf("took %v, want fresh at +61", got)
	}
}

// TestActivityMemoryBounded: 400,000 sessions, each seen once within
// the minute, cost at most ActivityMaxTracked entries, whether they only
// read (the commonest) or also made limited calls (a window of counts
// each).
func TestActivityMemoryBounded(t *testing.T) {
	testkit.EngineFree(t, "counts in-memory session activity")
	if testing.Short() {
		t.Skip("allocates 400,000 session ids")
	}
	if raceEnabled {
		t.Skip("measures the heap: runs without the race detector")
	}
	ids := make([]string, 400_000)
	for i := range ids {
		ids[i] = fmt.Sprintf("0193e4f2-%04x-7000-8000-%012x", i>>16, i)
	}
	for _, c := range []struct {
		name  string
		bound int64 // heap growth, MiB
		note  func(a *activity, id string, now int64)
	}{
		{"reads", 48, func(a *activity, id string, now int64) { a.seen(id, 0, now) }},
		{"writes", 96, func(a *activity, id string, now int64) { a.hit(id, 0, now, DefaultSessionRateLimit) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			a := newActivity(ActivityMaxTracked)
			const t0 = int64(1_800_000_000)
			for i, id := range ids {
				c.note(a, id, t0+int64(i/10_000))
			}
			if n := a.tracked(); n > ActivityMaxTracked {
				t.Fatalf("tracking %d sessions, bound is %d", n, ActivityMaxTracked)
			}
			runtime.GC()
			runtime.ReadMemStats(&after)
			grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			t.Logf("%d sessions tracked, heap +%d MiB (%d bytes each, ids included)", a.tracked(), grown>>20, grown/int64(a.tracked()))
			if grown > c.bound<<20 {
				t.Fatalf("heap grew %d MiB, bound %d MiB", grown>>20, c.bound)
			}
			runtime.KeepAlive(a)
		})
	}
	runtime.KeepAlive(ids)
}

// TestActivityReadsNotCounted: a session that only reads is seen (its
// last-seen time is kept for the flush) but counts nothing: after a
// thousand reads in one second its limited calls still get the whole
// limit, and nothing of it is published to the other replicas.
func TestActivityReadsNotCounted(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in-memory session activity")
	a := newActivity(1024)
	const t0 = int64(1_800_000_000)
	for range 1000 {
		a.seen("s", t0-100, t0)
	}
	if got := a.lastSeen("s"); got != t0 {
		t.Fatalf("last seen %d, want %d", got, t0)
	}
	if put, keys := a.collect(t0, t0/10-6, true, "s:", nil, nil); len(put) != 0 || len(keys) != 0 {
		t.Fatalf("reads published %v %v", put, keys)
	}
	for i := range 3 {
		if ok, _ := a.hit("s", t0-100, t0, 3); !ok {
			t.Fatalf("limited call %d refused after reads", i)
		}
	}
	if ok, retry := a.hit("s", t0-100, t0, 3); ok || retry != 60 {
		t.Fatalf("fourth limited call: ok=%v retry=%d, want refused for 60 s", ok, retry)
	}
	a.seen("s", t0-100, t0+1) // reads go on while the writes are refused
	if got := a.take(t0 + 1); len(got) != 1 || got[0] != (seenEntry{"s", t0 + 1}) {
		t.Fatalf("took %v, want s at +1", got)
	}
}

// TestActivityNoSeenLost: sessions read by many goroutines while flushes
// run, each at a time when the sessions are idle (so each flush drops
// them): every session's newest time is taken by a flush or still held
// for the next, never lost with a dropped entry.
func TestActivityNoSeenLost(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in-memory session activity")
	a := newActivity(1024)
	const t0 = int64(1_800_000_000)
	ids := []string{"a", "b", "c", "d"}
	for round := range int64(200) {
		now := t0 + 120*round
		var wg sync.WaitGroup
		taken := map[string]int64{}
		var mu sync.Mutex
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 50 {
					a.seen(ids[(g+i)%len(ids)], 0, now)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				for _, e := range a.take(now + 60) { // every session idle: dropped
					mu.Lock()
					taken[e.id] = max(taken[e.id], e.seen)
					mu.Unlock()
				}
			}
		}()
		wg.Wait()
		for _, e := range a.take(now + 60) {
			taken[e.id] = max(taken[e.id], e.seen)
		}
		for _, id := range ids {
			if taken[id] != now {
				t.Fatalf("round %d: session %s taken at %d, want %d (a request's time was lost)", round, id, taken[id], now)
			}
		}
		if n := a.tracked(); n != 0 {
			t.Fatalf("round %d: %d sessions tracked after the flushes, want 0", round, n)
		}
	}
}

// TestActivityFirstMinuteReadsUntracked: reads of a session within
// lastSeenLag of its sign-in add no entry (take would write nothing of
// them); a read after it, a read of a session whose sign-in is unknown
// and a counted call do; a session already tracked notes its reads in
// the first minute as before.
func TestActivityFirstMinuteReadsUntracked(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "counts in-memory session activity")
	a := newActivity(1024)
	const t0 = int64(1_800_000_000)
	a.seen("fresh", t0, t0)
	a.seen("fresh", t0, t0+59)
	if n := a.tracked(); n != 0 {
		t.Fatalf("%d sessions tracked after reads in the first minute, want 0", n)
	}
	a.seen("fresh", t0, t0+60)
	a.seen("unknown", 0, t0+1)
	a.hit("counted", t0, t0+1, 1<<20)
	a.seen("counted", t0, t0+2)
	if n := a.tracked(); n != 3 {
		t.Fatalf("%d sessions tracked, want 3 (fresh after a minute, unknown, counted)", n)
	}
	if s := a.lastSeen("counted"); s != t0+2 {
		t.Fatalf("a tracked session's read in the first minute: last seen %d, want %d", s, t0+2)
	}
	got := a.take(t0 + 60)
	slices.SortFunc(got, func(x, y seenEntry) int { return strings.Compare(x.id, y.id) })
	if want := []seenEntry{{"fresh", t0 + 60}, {"unknown", t0 + 1}}; !slices.Equal(got, want) {
		t.Fatalf("took %v, want %v", got, want)
	}
}
