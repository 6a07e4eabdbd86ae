package auth

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"latchkey/store"
)

// The per-session limit and last-seen times (docs/api.md, "Rate limits").
const (
	// DefaultSessionRateLimit is how many calls that write or start a
	// ceremony one session may make per rolling minute, unless its
	// project says otherwise (sessionRateLimitPerMinute).
	DefaultSessionRateLimit = 120
	// MaxSessionRateLimit is the largest per-session limit a project may
	// set.
	MaxSessionRateLimit = 100_000
	activityShards      = 64
	// ActivityMaxTracked bounds the sessions tracked in memory: those
	// that made a request within the last minute or whose last-seen time
	// is not yet written. Past it, a shard first drops sessions idle for
	// a minute, then any (whose count then restarts and whose last-seen
	// time waits for their next request).
	ActivityMaxTracked = 1 << 18
	// lastSeenBatch is how many sessions one flush transaction writes
	// (a function of the group commit, like the sweep's: sweepRows).
	lastSeenBatch = 250
	// lastSeenLag is how far a shown lastSeenAt may lag (up to a
	// minute). A session used only within it of its sign-in is not
	// written: shown as last seen at its sign-in, it is within the lag.
	lastSeenLag = time.Minute
)

// sessionRateLimit returns p's per-session limit: its setting, or the
// default for a project stored before the setting existed.
func sessionRateLimit(p *store.Project) int {
	if p.SessionRateLimitPerMinute > 0 {
		return p.SessionRateLimitPerMinute
	}
	return DefaultSessionRateLimit
}

// activity keeps, per session, the time of its newest request not yet
// written to the store (lastSeenAt) and, for the calls that the
// per-session limit counts, those of the last rolling minute in
// one-second buckets.
//
// Every session check notes the session as seen. For a session already
// tracked that is a lock-free map lookup and, at most once a second, an
// atomic store into the session's own entry: checks of one busy session
// from many connections share no lock and, within a second, write
// nothing. Only the first check of a session (an insert into one of 64
// shards) and the limited calls (the session's own mutex) lock. The
// store is written by flush, off the request path.
type activity struct {
	seed   maphash.Seed
	max    int        // per shard
	share  *rateShare // the other replicas' counts; nil: none
	shards [activityShards]activityShard
}

type activityShard struct {
	m  sync.Map   // session id → *sessionActivity
	mu sync.Mutex // adding and dropping entries (lookups take no lock)
	n  int        // entries, under mu
	_  [40]byte   // keep shards on separate cache lines
}

// sessionActivity is one session's entry. A dropped entry (gone) is out
// of its shard's map: a request that finds it so after noting itself
// there tracks the session anew, so nothing it noted is lost.
type sessionActivity struct {
	seen   atomic.Int64 // unix second of the newest request not yet flushed; 0 when flushed
	used   atomic.Int64 // unix second of the newest request of any kind
	issued atomic.Int64 // unix second the session was signed in (its token's iat); 0 if unknown
	gone   atomic.Bool  // dropped from the shard (set under the shard's lock and mu)

	mu  sync.Mutex  // win, and gone for the limited calls
	win *rateWindow // the limited calls of the last minute; nil until the first
}

// rateWindow is a session's limited calls over the last rolling minute.
type rateWindow struct {
	newest int64      // the unix second of the newest counted call
	counts [60]uint16 // calls per second, ring indexed by second % 60
	total  uint32     // sum of counts
	dirty  bool       // counts changed since the last collect
}

func newActivity(maxTracked int) *activity {
	return &activity{seed: maphash.MakeSeed(), max: max(1, maxTracked/activityShards)}
}

func (a *activity) shard(id string) *activityShard {
	return &a.shards[maphash.String(a.seed, id)%activityShards]
}

// lookup returns session id's entry, or nil.
func (sh *activityShard) lookup(id string) *sessionActivity {
	if v, ok := sh.m.Load(id); ok {
		return v.(*sessionActivity)
	}
	return nil
}

// entry returns session id's entry, adding one (signed in at unix second
// issued) when there is none.
func (a *activity) entry(id string, issued, now int64) *sessionActivity {
	sh := a.shard(id)
	if st := sh.lookup(id); st != nil && !st.gone.Load() {
		return st
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if st := sh.lookup(id); st != nil { // added meanwhile (dropped ones leave the map under mu)
		return st
	}
	if sh.n >= a.max {
		sh.evict(now)
	}
	st := &sessionActivity{}
	st.issued.Store(issued)
	sh.m.Store(id, st)
	sh.n++
	return st
}

// seen notes a request of session id, signed in at unix second issued
// (0 if unknown), at unix second now. It is the whole bookkeeping of a
// call the per-session limit does not count.
//
// A session not tracked and seen within lastSeenLag of its sign-in is
// not tracked for it: take would mark such a request flushed without
// returning it, and a read counts nothing, so the entry would hold
// nothing. The commonest use, a sign-in and then the app's check, then
// adds nothing to the tracked sessions; under a million-user sign-in
// load those entries (several heap objects each, in maps read without a
// lock) were what the garbage collector spent most of its marking on.
func (a *activity) seen(id string, issued, now int64) {
	if issued != 0 && now-issued < int64(lastSeenLag/time.Second) {
		st := a.shard(id).lookup(id)
		if st == nil || st.gone.Load() {
			return
		}
		// Tracked: note it on the entry just found, unless it was
		// dropped meanwhile (then as below).
		st.note(issued, now)
		if !st.gone.Load() {
			return
		}
	}
	for {
		st := a.entry(id, issued, now)
		st.note(issued, now)
		if !st.gone.Load() {
			return
		}
	}
}

// note marks st as used and seen at now, writing only what changes.
func (st *sessionActivity) note(issued, now int64) {
	if issued != 0 && st.issued.Load() != issued {
		st.issued.Store(issued)
	}
	raise(&st.used, now)
	raise(&st.seen, now)
}

// raise sets v to x when x is later.
func raise(v *atomic.Int64, x int64) {
	for {
		old := v.Load()
		if old >= x || v.CompareAndSwap(old, x) {
			return
		}
	}
}

// hit notes a request of session id as seen does and counts it against
// limit per rolling minute. A refused request is not counted; retry is
// then the wait in whole seconds until the oldest counted request leaves
// the minute. The other replicas' requests count too, as of the last
// sync.
func (a *activity) hit(id string, issued, now int64, limit int) (ok bool, retry int) {
	others, othersOldest := a.share.count(id, now)
	for {
		st := a.entry(id, issued, now)
		st.mu.Lock()
		if st.gone.Load() {
			st.mu.Unlock()
			continue
		}
		st.note(issued, now)
		if st.win == nil {
			st.win = &rateWindow{newest: now}
		}
		ok, retry = st.win.count(now, limit, others, othersOldest)
		st.mu.Unlock()
		return ok, retry
	}
}

// count counts a call at now against limit, others being the other
// replicas' calls in the minute and othersOldest the start of the
// oldest slot holding any (0: none).
func (w *rateWindow) count(now int64, limit, others int, othersOldest int64) (bool, int) {
	w.advance(now)
	if int64(w.total)+int64(others) >= int64(limit) || w.counts[w.newest%60] == ^uint16(0) {
		retry := w.oldestAge(now)
		if othersOldest != 0 && (w.total == 0 || int(othersOldest+60-now) < retry) {
			retry = max(1, int(othersOldest+60-now))
		}
		return false, retry
	}
	w.counts[w.newest%60]++
	w.total++
	w.dirty = true
	return true, 0
}

// advance moves the window so it ends at now, emptying the buckets of
// the seconds that left it. A clock that went back counts in the newest
// bucket.
func (w *rateWindow) advance(now int64) {
	if now <= w.newest {
		return
	}
	if now-w.newest >= 60 {
		w.counts = [60]uint16{}
		w.total = 0
	} else {
		for s := w.newest + 1; s <= now; s++ {
			w.total -= uint32(w.counts[s%60])
			w.counts[s%60] = 0
		}
	}
	w.newest = now
}

// oldestAge returns the seconds until the oldest counted call leaves the
// minute (at least 1).
func (w *rateWindow) oldestAge(now int64) int {
	for s := w.newest - 59; s <= w.newest; s++ {
		if w.counts[s%60] > 0 {
			return max(1, int(s+60-now))
		}
	}
	return 1
}

// idle reports, under st.mu, whether st made no request in the minute
// before now and counts none.
func (st *sessionActivity) idle(now int64) bool {
	return now-st.used.Load() >= 60 && (st.win == nil || st.win.total == 0 || now-st.win.newest >= 60)
}

// dropIf takes st, session id's entry, out of sh (under sh.mu) when
// cond, checked under st.mu, holds; it reports whether it did.
func (sh *activityShard) dropIf(id string, st *sessionActivity, cond func() bool) bool {
	st.mu.Lock()
	ok := cond()
	if ok {
		st.gone.Store(true)
	}
	st.mu.Unlock()
	if ok {
		sh.m.Delete(id)
		sh.n--
	}
	return ok
}

// evict frees an eighth of the shard (under sh.mu), from a quarter of
// it (the map's order is its keys' hashes, so a sample): sessions idle
// for a minute whose last-seen time is written first, then any.
func (sh *activityShard) evict(now int64) {
	want, look := sh.n/8, sh.n/4
	type entry struct {
		id string
		st *sessionActivity
	}
	var others []entry
	sh.m.Range(func(k, v any) bool {
		id, st := k.(string), v.(*sessionActivity)
		if sh.dropIf(id, st, func() bool { return st.seen.Load() == 0 && st.idle(now) }) {
			want--
		} else if len(others) < want {
			others = append(others, entry{id, st})
		}
		look--
		return want > 0 && look > 0
	})
	for _, e := range others[:min(len(others), max(want, 0))] {
		sh.dropIf(e.id, e.st, func() bool { return true })
	}
}

// collect is Limiter.collect for the sessions' counts.
func (a *activity) collect(now, since int64, all bool, ns string, put []store.RateCount, keys []string) ([]store.RateCount, []string) {
	for i := range a.shards {
		a.shards[i].m.Range(func(k, v any) bool {
			st := v.(*sessionActivity)
			st.mu.Lock()
			defer st.mu.Unlock()
			w := st.win
			if w == nil || w.total == 0 || now-w.newest >= 60 {
				return true
			}
			c := slotCounts{first: since, cur: now / store.RateSlot}
			for sec := max(w.newest-59, now-59); sec <= w.newest; sec++ {
				if n := w.counts[sec%60]; n > 0 {
					c.add(sec, int(n))
				}
			}
			key := ns + k.(string)
			if w.dirty || all {
				put = c.appendTo(put, key)
			}
			w.dirty = false
			keys = append(keys, key)
			return true
		})
	}
	return put, keys
}

// lastSeen returns the unflushed last-seen second of session id, or 0.
func (a *activity) lastSeen(id string) int64 {
	if st := a.shard(id).lookup(id); st != nil {
		return st.seen.Load()
	}
	return 0
}

// seenEntry is one session's last-seen time taken for a flush.
type seenEntry struct {
	id   string
	seen int64
}

// take returns the sessions seen since the last flush, marking them
// flushed, and drops sessions idle for a minute. A session seen only
// within lastSeenLag of its sign-in is marked flushed without being
// returned: the store would not write it (TouchSession's grace), so the
// flush need not read it. This is exact: sessions start on a whole
// second (the token's iat), and a stored lastSeenAt is always at least
// lastSeenLag after the sign-in, so an earlier time never replaces one.
// A session checked only within its first minute (a sign-in, then the
// app's check: the commonest use) costs the flush nothing.
//
// An entry is dropped before its last-seen time is taken, and a request
// checks that its entry was not dropped after noting itself there, so a
// request running meanwhile is either taken here or noted anew.
func (a *activity) take(now int64) []seenEntry {
	var out []seenEntry
	lag := int64(lastSeenLag / time.Second)
	for i := range a.shards {
		sh := &a.shards[i]
		sh.mu.Lock()
		sh.m.Range(func(k, v any) bool {
			id, st := k.(string), v.(*sessionActivity)
			sh.dropIf(id, st, func() bool { return st.idle(now) })
			if seen := st.seen.Swap(0); seen != 0 {
				if issued := st.issued.Load(); issued == 0 || seen-issued >= lag {
					out = append(out, seenEntry{id, seen})
				}
			}
			return true
		})
		sh.mu.Unlock()
	}
	return out
}

// restore puts back last-seen times a flush could not write, unless the
// session was seen again meanwhile (or its shard is full).
func (a *activity) restore(entries []seenEntry) {
	for _, e := range entries {
		sh := a.shard(e.id)
		sh.mu.Lock() // no entry is dropped meanwhile
		st := sh.lookup(e.id)
		if st == nil && sh.n < a.max {
			st = &sessionActivity{}
			sh.m.Store(e.id, st)
			sh.n++
		}
		if st != nil {
			raise(&st.seen, e.seen)
		}
		sh.mu.Unlock()
	}
}

// tracked returns how many sessions are held (for tests).
func (a *activity) tracked() int {
	n := 0
	for i := range a.shards {
		a.shards[i].mu.Lock()
		n += a.shards[i].n
		a.shards[i].mu.Unlock()
	}
	return n
}

// unixTime returns the time of a unix second, UTC.
func unixTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
