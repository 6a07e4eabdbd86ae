package auth

import (
	"hash/maphash"
	"sync"
	"time"

	"latchkey/store"
)

// Per-session request limit (docs/api.md, "Rate limits").
const (
	// DefaultSessionRateLimit is how many requests one session may make
	// per rolling minute on the user-JWT endpoints.
	DefaultSessionRateLimit = 120
	activityShards          = 64
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

// activity keeps, per session, its requests over the last rolling minute
// in one-second buckets (the per-session rate limit) and the time of its
// newest request not yet written to the store (lastSeenAt). The session
// check touches one shard's lock for a few array operations; the store is
// written by flush, off the request path.
type activity struct {
	seed   maphash.Seed
	max    int        // per shard
	share  *rateShare // the other replicas' counts; nil: none
	shards [activityShards]activityShard
}

type activityShard struct {
	mu sync.Mutex
	m  map[string]*sessionActivity
	_  [40]byte // keep shards on separate cache lines
}

type sessionActivity struct {
	newest int64      // the unix second of the newest counted request
	counts [60]uint16 // requests per second, ring indexed by second % 60
	total  uint32     // sum of counts
	seen   int64      // unix second of the newest request not yet flushed; 0 when flushed
	issued int64      // unix second the session was signed in (its token's iat); 0 if unknown
	dirty  bool       // counts changed since the last collect
}

func newActivity(maxTracked int) *activity {
	a := &activity{seed: maphash.MakeSeed(), max: max(1, maxTracked/activityShards)}
	for i := range a.shards {
		a.shards[i].m = make(map[string]*sessionActivity)
	}
	return a
}

func (a *activity) shard(id string) *activityShard {
	return &a.shards[maphash.String(a.seed, id)%activityShards]
}

// hit counts one request of session id, signed in at unix second issued
// (0 if unknown), at unix second now against limit per rolling minute
// and notes the session as seen. A refused request is not counted; retry
// is then the wait in whole seconds until the oldest counted request
// leaves the minute. The other replicas' requests count too, as of the
// last sync.
func (a *activity) hit(id string, issued, now int64, limit int) (ok bool, retry int) {
	others, othersOldest := a.share.count(id, now)
	sh := a.shard(id)
	sh.mu.Lock()
	st := sh.m[id]
	if st == nil {
		if len(sh.m) >= a.max {
			sh.evict(now)
		}
		st = &sessionActivity{newest: now}
		sh.m[id] = st
	}
	st.issued = issued
	st.advance(now)
	if now > st.seen {
		st.seen = now
	}
	if int64(st.total)+int64(others) >= int64(limit) || st.counts[st.newest%60] == ^uint16(0) {
		retry = st.oldestAge(now)
		if othersOldest != 0 && (st.total == 0 || int(othersOldest+60-now) < retry) {
			retry = max(1, int(othersOldest+60-now))
		}
		sh.mu.Unlock()
		return false, retry
	}
	st.counts[st.newest%60]++
	st.total++
	st.dirty = true
	sh.mu.Unlock()
	return true, 0
}

// advance moves the window so it ends at now, emptying the buckets of
// the seconds that left it. A clock that went back counts in the newest
// bucket.
func (st *sessionActivity) advance(now int64) {
	if now <= st.newest {
		return
	}
	if now-st.newest >= 60 {
		st.counts = [60]uint16{}
		st.total = 0
	} else {
		for s := st.newest + 1; s <= now; s++ {
			st.total -= uint32(st.counts[s%60])
			st.counts[s%60] = 0
		}
	}
	st.newest = now
}

// oldestAge returns the seconds until the oldest counted request leaves
// the minute (at least 1).
func (st *sessionActivity) oldestAge(now int64) int {
	for s := st.newest - 59; s <= st.newest; s++ {
		if st.counts[s%60] > 0 {
			return max(1, int(s+60-now))
		}
	}
	return 1
}

// evict frees an eighth of the shard: sessions whose minute is empty and
// whose last-seen time is written first, then any.
func (sh *activityShard) evict(now int64) {
	want := len(sh.m) / 8
	for pass := 0; pass < 2 && want > 0; pass++ {
		for id, st := range sh.m {
			if want <= 0 {
				return
			}
			if pass == 0 && (st.seen != 0 || now-st.newest < 60) {
				continue
			}
			delete(sh.m, id)
			want--
		}
	}
}

// collect is Limiter.collect for the sessions' counts.
func (a *activity) collect(now, since int64, all bool, ns string, put []store.RateCount, keys []string) ([]store.RateCount, []string) {
	for i := range a.shards {
		sh := &a.shards[i]
		sh.mu.Lock()
		for id, st := range sh.m {
			if st.total == 0 || now-st.newest >= 60 {
				continue
			}
			c := slotCounts{first: since, cur: now / store.RateSlot}
			for sec := max(st.newest-59, now-59); sec <= st.newest; sec++ {
				if n := st.counts[sec%60]; n > 0 {
					c.add(sec, int(n))
				}
			}
			key := ns + id
			if st.dirty || all {
				put = c.appendTo(put, key)
			}
			st.dirty = false
			keys = append(keys, key)
		}
		sh.mu.Unlock()
	}
	return put, keys
}

// lastSeen returns the unflushed last-seen second of session id, or 0.
func (a *activity) lastSeen(id string) int64 {
	sh := a.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if st := sh.m[id]; st != nil {
		return st.seen
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
func (a *activity) take(now int64) []seenEntry {
	var out []seenEntry
	lag := int64(lastSeenLag / time.Second)
	for i := range a.shards {
		sh := &a.shards[i]
		sh.mu.Lock()
		for id, st := range sh.m {
			if st.seen != 0 {
				if st.issued == 0 || st.seen-st.issued >= lag {
					out = append(out, seenEntry{id, st.seen})
				}
				st.seen = 0
			}
			if now-st.newest >= 60 {
				delete(sh.m, id)
			}
		}
		sh.mu.Unlock()
	}
	return out
}

// restore puts back last-seen times a flush could not write, unless the
// session was seen again meanwhile.
func (a *activity) restore(entries []seenEntry) {
	for _, e := range entries {
		sh := a.shard(e.id)
		sh.mu.Lock()
		st := sh.m[e.id]
		if st == nil && len(sh.m) < a.max {
			st = &sessionActivity{newest: e.seen - 60}
			sh.m[e.id] = st
		}
		if st != nil && st.seen < e.seen {
			st.seen = e.seen
		}
		sh.mu.Unlock()
	}
}

// tracked returns how many sessions are held (for tests).
func (a *activity) tracked() int {
	n := 0
	for i := range a.shards {
		a.shards[i].mu.Lock()
		n += len(a.shards[i].m)
		a.shards[i].mu.Unlock()
	}
	return n
}

// unixTime returns the time of a unix second, UTC.
func unixTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
