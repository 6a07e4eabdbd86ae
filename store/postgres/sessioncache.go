package postgres

import (
	"context"
	"errors"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"latchkey/store"
)

// The session cache: SessionState is on the path of every user call
// (GET /session, every call with a user's token), and on PostgreSQL a
// read of the sessions table is a round trip. So SessionState answers
// from memory, and read-only transactions answer SessionExists, for
// sessions known to exist: a bounded cache of what the session check
// needs of each (its user, its proofs), and beside it one of whether
// each user has TOTP or SMS enrolled (secondFactorPending needs no
// more) and who the user is (address, name, groups: store.ChangeUser
// drops it), each entry dropped by its exact key. They are kept coherent by
//
//   - this replica's own changes, dropped as soon as they commit
//     (txn.changed and dropOnCommit register the drop with OnCommit): a
//     session row deleted or rewritten (PutSession of an existing
//     session: a step-up's proof), a factor written or deleted;
//   - other replicas' changes, dropped when the invalidation feed tells
//     of them (every Options.FeedInterval): store.ChangeSession for a
//     session deleted or rewritten (PutSession writes it only for a
//     rewrite: a new session was in no cache), kindFactors for a factor
//     whose enrolment changed, store.ChangeUser for a user deleted with
//     its factors;
//   - the sweep of expired sessions, which writes kindSessionsSwept (the
//     due time it swept up to) to the feed: entries due by then go.
//
// While the feed is not trusted (unread for longer than
// Options.FeedStaleAfter) the caches are neither read nor filled. A miss
// reads the row (one primary-key probe; with SessionState, the factors'
// two probes in the same statement) and fills each entry only when that
// read took the transaction's snapshot, after the entry's shard's
// generation was read: a change that drops the entry in between voids
// the fill, so no entry outlives the row it stands for by more than the
// feed's delay. A miss learns the session's user only from its read, so
// it notes every factor shard's generation before it. A session's entry
// points at its user's factor entry, so that a check looks up one key: a
// factor entry dropped (or evicted) is marked so, and the sessions that
// point at it miss until read again.

// sessionCacheSize bounds the sessions cached, and the users whose
// factors are (per replica).
const sessionCacheSize = 1 << 16

const sessionShards = 32

// kindSessionsSwept is the feed's note of a sweep of expired sessions:
// ID is the due time swept up to, in Unix nanoseconds. It is the
// backend's own: subscribers are not told of it.
const kindSessionsSwept store.ChangeKind = "sessions_swept"

// kindFactors is the feed's note that user ID's TOTP or SMS factor
// became enrolled or stopped being (PutFactor): the session cache drops
// what it keeps of the user's factors. It is the backend's own:
// subscribers are not told of it.
const kindFactors store.ChangeKind = "factors"

// sessionEntry is what the cache keeps of a session: whose it is, its
// project and when the sweep deletes it (so that a user's, a project's
// and the sweep's deletions drop it), and its state as SessionState read
// it (nil when SessionExists filled the entry), valid while the user's
// factor entry it was filled with is.
type sessionEntry struct {
	user, project string
	due           int64
	state         *store.SessionState // shared with SessionState's callers: never changed
	factors       *factorEntry
}

// factorEntry is what the cache keeps of a user's factors. Once dropped
// it is never read again.
type factorEntry struct {
	bits    factorBits
	dropped atomic.Bool
}

// factorBits are a user's enrolled factors: factorTOTP and factorSMS,
// set when that factor is enrolled.
type factorBits uint8

const (
	factorTOTP factorBits = 1 << iota
	factorSMS
)

type sessionCache struct {
	seed     maphash.Seed
	perShard int
	shards   [sessionShards]sessionShard
	factors  [sessionShards]factorShard
}

type sessionShard struct {
	mu  sync.RWMutex
	gen uint64 // bumped by every drop: fills read before it are void
	m   map[string]sessionEntry
	_   [32]byte // keep shards on separate cache lines
}

// factorShard is a shard of the factor cache.
type factorShard struct {
	mu  sync.Mutex
	gen uint64 // bumped by every drop: fills read before it are void
	m   map[string]*factorEntry
	_   [32]byte
}

// factorGens are the factor shards' generations, as a fill must carry
// them.
type factorGens [sessionShards]uint64

func newSessionCache(size int) *sessionCache {
	c := &sessionCache{seed: maphash.MakeSeed(), perShard: max(1, size/sessionShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]sessionEntry)
		c.factors[i].m = make(map[string]*factorEntry)
	}
	return c
}

func (c *sessionCache) index(key string) uint64 {
	return maphash.String(c.seed, key) % sessionShards
}

func (c *sessionCache) shard(id string) *sessionShard { return &c.shards[c.index(id)] }

// has reports whether session id is cached (known to exist).
func (c *sessionCache) has(id string) bool {
	_, ok := c.entry(id)
	return ok
}

// entry returns what is cached of session id.
func (c *sessionCache) entry(id string) (sessionEntry, bool) {
	sh := c.shard(id)
	sh.mu.RLock()
	e, ok := sh.m[id]
	sh.mu.RUnlock()
	return e, ok
}

// state returns session id's state when both the session and its user's
// factors are cached.
func (c *sessionCache) state(id string) (*store.SessionState, bool) {
	sh := c.shard(id)
	sh.mu.RLock()
	e, ok := sh.m[id]
	sh.mu.RUnlock()
	if !ok || e.state == nil || e.factors == nil || e.factors.dropped.Load() {
		return nil, false
	}
	return e.state, true
}

// generation returns what a fill of session id must carry: read it
// before the read that fills.
func (c *sessionCache) generation(id string) uint64 {
	sh := c.shard(id)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	return sh.gen
}

// factorGenerations returns what a fill of factors must carry: read it
// before the read that fills.
func (c *sessionCache) factorGenerations() (gens factorGens) {
	for i := range c.factors {
		fs := &c.factors[i]
		fs.mu.Lock()
		gens[i] = fs.gen
		fs.mu.Unlock()
	}
	return gens
}

// fill caches session id unless a drop happened in its shard since gen
// was read. A full shard loses an arbitrary entry.
func (c *sessionCache) fill(id string, e sessionEntry, gen uint64) {
	sh := c.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen != gen {
		return
	}
	if _, ok := sh.m[id]; !ok && len(sh.m) >= c.perShard {
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	sh.m[id] = e
}

// fillFactors caches userID's factors unless a drop happened in its
// shard since gens were read, and returns the entry for the sessions of
// the user to point at (nil when void). A full shard loses an arbitrary
// entry; an entry that leaves the cache is dropped, since the sessions
// that point at it could not tell when it changes.
func (c *sessionCache) fillFactors(userID string, bits factorBits, gens *factorGens) *factorEntry {
	i := c.index(userID)
	fs := &c.factors[i]
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.gen != gens[i] {
		return nil
	}
	old, ok := fs.m[userID]
	if ok && old.bits == bits {
		return old // the sessions of one user share it
	} else if ok {
		old.dropped.Store(true)
	} else if len(fs.m) >= c.perShard {
		for k, f := range fs.m {
			f.dropped.Store(true)
			delete(fs.m, k)
			break
		}
	}
	f := &factorEntry{bits: bits}
	fs.m[userID] = f
	return f
}

// drop forgets session id.
func (c *sessionCache) drop(id string) {
	sh := c.shard(id)
	sh.mu.Lock()
	sh.gen++
	delete(sh.m, id)
	sh.mu.Unlock()
}

// dropFactors forgets userID's factors.
func (c *sessionCache) dropFactors(userID string) {
	fs := &c.factors[c.index(userID)]
	fs.mu.Lock()
	fs.gen++
	if f, ok := fs.m[userID]; ok {
		f.dropped.Store(true)
		delete(fs.m, userID)
	}
	fs.mu.Unlock()
}

// dropWhere forgets every session entry for which match is true (nil:
// every entry, and every user's factors too), shard by shard.
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
	if match == nil {
		for i := range c.factors {
			fs := &c.factors[i]
			fs.mu.Lock()
			fs.gen++
			for _, f := range fs.m {
				f.dropped.Store(true)
			}
			clear(fs.m)
			fs.mu.Unlock()
		}
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
	case kindFactors, store.ChangeUser:
		// A user deleted took its factors along (its sessions went
		// too: ChangeUserSessions).
		c.dropFactors(ch.ID)
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

// dropOnCommit has this replica's cache drop session id (factors false)
// or user id's factors (factors true) once tx commits. Other replicas
// learn of it through the feed, when the caller writes it there.
func (tx *txn) dropOnCommit(id string, factors bool) {
	c := tx.db.sessions
	if c == nil {
		return
	}
	if factors {
		tx.OnCommit(func() { c.dropFactors(id) })
	} else {
		tx.OnCommit(func() { c.drop(id) })
	}
}

// SessionState returns session id's state (see store.DB): from the
// caches while the feed is trusted (no transaction, no round trip), else
// in a read-only transaction with one statement (the session and its
// user's factors), whose answer fills the caches.
func (db *DB) SessionState(ctx context.Context, id string) (*store.SessionState, error) {
	if err := db.ready(ctx); err != nil {
		return nil, err
	}
	if !validText(id) {
		return nil, store.ErrNotFound
	}
	c := db.sessions
	cache := c != nil && db.feed.trusted()
	if cache {
		if st, ok := c.state(id); ok {
			return st, nil
		}
	}
	var gen uint64
	var gens factorGens
	if cache {
		gen, gens = c.generation(id), c.factorGenerations()
	}
	var e sessionEntry
	err := db.View(ctx, func(tx store.Tx) (err error) {
		e, err = tx.(*txn).sessionState(id)
		return err
	})
	if err != nil {
		return nil, err
	}
	if cache {
		var bits factorBits
		if e.state.TOTP {
			bits |= factorTOTP
		}
		if e.state.SMS {
			bits |= factorSMS
		}
		e.factors = c.fillFactors(e.user, bits, &gens)
		c.fill(id, e, gen)
	}
	return e.state, nil
}

// sqlSessionState is session $1's row, when the sweep deletes it,
// whether its user has TOTP or SMS enrolled, and the user's address,
// name and groups.
var sqlSessionState = sync.OnceValue(func() string {
	return `SELECT ` + sessionCols + `, s.due, ` +
		strings.ReplaceAll(sqlSecondFactors, "$1", "s.user_id") + `,
		COALESCE(u.email, ''), COALESCE(u.first_name, ''), u.groups
	FROM sessions s LEFT JOIN LATERAL (SELECT email, first_name, groups FROM users WHERE users.id = s.user_id) u ON true
	WHERE s.id = $1`
})

// sessionState reads what the cache keeps of session id (valid text) and
// of its user's factors, in one statement; ErrNotFound without the row.
func (tx *txn) sessionState(id string) (sessionEntry, error) {
	var r sessionRow
	var e sessionEntry
	st := &store.SessionState{}
	if err := tx.one(sqlSessionState(), []any{id}, append(r.dest(), &e.due, &st.TOTP, &st.SMS, &st.Email, &st.Name, &st.Groups)...); err != nil {
		return sessionEntry{}, err
	}
	s := r.session()
	e.user, e.project = s.UserID, s.ProjectID
	st.UserID, st.Proofs = s.UserID, s.Proofs
	e.state = st
	return e, nil
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
