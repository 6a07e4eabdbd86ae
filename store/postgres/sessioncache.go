package postgres

import (
	"context"
	"errors"
	"hash/maphash"
	"strconv"
	"sync"
	"time"

	"latchkey/store"
)

// The session cache: SessionExists is on the path of every user call
// (GET /session, every call with a user's token), and on PostgreSQL a
// probe of the sessions table is a round trip. So read-only transactions
// answer it from memory for sessions known to exist: a positive cache of
// session ids, bounded, kept coherent by
//
//   - this replica's own deletions, dropped as soon as they commit
//     (txn.changed registers the drop with OnCommit);
//   - other replicas' deletions, dropped when the invalidation feed tells
//     of them (every Options.FeedInterval);
//   - the sweep of expired sessions, which writes kindSessionsSwept (the
//     due time it swept up to) to the feed: entries due by then go.
//
// While the feed is not trusted (unread for longer than
// Options.FeedStaleAfter) the cache is neither read nor filled. A miss
// reads the row (one primary-key probe) and fills the entry only when
// that read took the transaction's snapshot, after the cache's
// generation was read: a deletion that drops the entry in between voids
// the fill, so no entry outlives the row it stands for by more than the
// feed's delay.

// sessionCacheSize bounds the sessions cached (per replica).
const sessionCacheSize = 1 << 16

const sessionShards = 32

// kindSessionsSwept is the feed's note of a sweep of expired sessions:
// ID is the due time swept up to, in Unix nanoseconds. It is the
// backend's own: subscribers are not told of it.
const kindSessionsSwept store.ChangeKind = "sessions_swept"

// sessionEntry is what the cache keeps of a session: whose it is and
// when the sweep deletes it, so that a user's, a project's and the
// sweep's deletions drop it.
type sessionEntry struct {
	user, project string
	due           int64
}

type sessionCache struct {
	seed     maphash.Seed
	perShard int
	shards   [sessionShards]sessionShard
}

type sessionShard struct {
	mu  sync.RWMutex
	gen uint64 // bumped by every drop: fills read before it are void
	m   map[string]sessionEntry
	_   [32]byte // keep shards on separate cache lines
}

func newSessionCache(size int) *sessionCache {
	c := &sessionCache{seed: maphash.MakeSeed(), perShard: max(1, size/sessionShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]sessionEntry)
	}
	return c
}

func (c *sessionCache) shard(id string) *sessionShard {
	return &c.shards[maphash.String(c.seed, id)%sessionShards]
}

// has reports whether session id is cached (known to exist).
func (c *sessionCache) has(id string) bool {
	sh := c.shard(id)
	sh.mu.RLock()
	_, ok := sh.m[id]
	sh.mu.RUnlock()
	return ok
}

// generation returns what a fill of id must carry: read it before the
// read that fills.
func (c *sessionCache) generation(id string) uint64 {
	sh := c.shard(id)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.gen
}

// fill caches id unless a drop happened in its shard since gen was read.
// A full shard loses an arbitrary entry.
func (c *sessionCache) fill(id string, e sessionEntry, gen uint64) {
	sh := c.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen != gen {
		return
	}
	if len(sh.m) >= c.perShard {
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	sh.m[id] = e
}

// drop forgets id.
func (c *sessionCache) drop(id string) {
	sh := c.shard(id)
	sh.mu.Lock()
	sh.gen++
	delete(sh.m, id)
	sh.mu.Unlock()
}

// dropWhere forgets every entry for which match is true (nil: every
// entry), shard by shard.
func (c *sessionCache) dropWhere(match func(sessionEntry) bool) {
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		sh.gen++
		if match == nil {
			clear(sh.m)
		} else {
			for id, e := range sh.m {
				if match(e) {
					delete(sh.m, id)
				}
			}
		}
		sh.mu.Unlock()
	}
}

// apply drops what change c makes stale. A nil cache (a DB opened
// without its feed, in tests) has nothing to drop.
func (c *sessionCache) apply(ch store.Change) {
	if c == nil {
		return
	}
	switch ch.Kind {
	case store.ChangeSession:
		c.drop(ch.ID)
	case store.ChangeUserSessions:
		c.dropWhere(func(e sessionEntry) bool { return e.user == ch.ID })
	case store.ChangeProject:
		c.dropWhere(func(e sessionEntry) bool { return e.project == ch.ID })
	case kindSessionsSwept:
		upTo, err := strconv.ParseInt(ch.ID, 10, 64)
		if err != nil {
			c.dropWhere(nil)
			return
		}
		c.dropWhere(func(e sessionEntry) bool { return e.due <= upTo })
	case store.ChangeStale, store.ChangeFresh:
		c.dropWhere(nil)
	}
}

// SessionLive reports whether session id's row exists: from the session
// cache while the feed is trusted (no transaction, no round trip), else
// as SessionExists in a read-only transaction (one probe, which fills
// the cache).
func (db *DB) SessionLive(ctx context.Context, id string) (bool, error) {
	if err := db.ready(ctx); err != nil {
		return false, err
	}
	if !validText(id) {
		return false, nil
	}
	if c := db.sessions; c != nil && db.feed.trusted() && c.has(id) {
		return true, nil
	}
	var live bool
	err := db.View(ctx, func(tx store.Tx) error {
		var err error
		live, err = tx.SessionExists(id)
		return err
	})
	return live, err
}

// cachedSessionExists answers SessionExists for session id (valid
// text): from the cache in a read-only transaction while the feed is
// trusted, else with one probe of the primary key, whose answer fills
// the cache when that probe began the transaction (its snapshot is then
// younger than the generation read before it).
func (tx *txn) cachedSessionExists(id string) (bool, error) {
	c := tx.db.sessions
	cache := c != nil && tx.readOnly && tx.db.feed.trusted()
	if cache && c.has(id) {
		return true, nil
	}
	var gen uint64
	if cache {
		gen = c.generation(id)
	}
	first := !tx.begun()
	var e sessionEntry
	err := tx.one(`SELECT user_id, project_id, due FROM sessions WHERE id = $1`, []any{id}, &e.user, &e.project, &e.due)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if cache && first {
		c.fill(id, e, gen)
	}
	return true, nil
}

// begun reports whether a statement began the transaction (took its
// snapshot).
func (tx *txn) begun() bool {
	l, ok := tx.ptx.(*lazyTx)
	return !ok || l.begunOnce() || tx.pending != nil
}

// sweptSessions notes, in a transaction that swept the sessions due at
// now, that session caches must drop them: at once here after the
// commit, elsewhere through the feed. An entry whose due time (as the
// sweep compares it: dueNanos) is at or before now's goes.
func (tx *txn) sweptSessions(now time.Time) error {
	return tx.changed(kindSessionsSwept, strconv.FormatInt(dueNanos(now), 10))
}
