package bolt

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"latchkey/store"
)

// The bbolt file's session cache: SessionState is the check of every
// call with a user's token and the answer of GET /session, and a bbolt
// read transaction, cheap as it is, takes the file's meta lock twice (to
// begin and to end), a mutex that every transaction of the process
// shares: under many concurrent checks it serialised them. So
// SessionState answers from memory for sessions known to exist, from two
// bounded caches read without a lock:
//
//   - per session id, whose the session is and its proofs. Every
//     deletion of a session row (DeleteSession, DeleteUserSessions, and
//     through them DeleteUser and DeleteProject; the sweep) goes through
//     the sessions' expiry entry, whose remove drops the id, and
//     PutSession of an existing session (a step-up's proof) drops it
//     too, once the writing transaction has committed, before its
//     Update or Batch returns;
//   - per user id, whether the user has TOTP or SMS enrolled and who
//     the user is (address, name, groups): PutFactor, DeleteFactors and
//     PutUser drop it the same way.
//
// A session's entry points at its user's factor entry, so that a check
// looks up one key: a factor entry dropped (or evicted) is marked so, and
// the sessions that point at it miss until read again.
//
// A miss reads the session and the factors in one read transaction and
// fills each entry only if no drop happened in its shard since before the
// read began, so an entry never outlives what it copies past the commit
// that changed it. The miss learns the session's user only from its
// read, so it notes every factor shard's generation before it.

// sessionCacheSize bounds the sessions cached, and the users whose
// factors are.
const sessionCacheSize = 1 << 16

const sessionShards = 32

// sessionCache is the file's two caches.
type sessionCache struct {
	seed     maphash.Seed
	perShard int
	sessions [sessionShards]stateShard
	factors  [sessionShards]stateShard
}

// factorGens are the factor shards' generations, as a fill must carry
// them.
type factorGens [sessionShards]uint64

// stateShard is one shard of either cache: session id → *sessionEntry,
// or user id → *factorEntry.
type stateShard struct {
	m   sync.Map
	gen atomic.Uint64 // bumped by every drop: fills read before it are void
	mu  sync.Mutex    // fills and drops
	n   int           // entries, under mu
	_   [32]byte      // keep shards on separate cache lines
}

// sessionEntry is what the cache keeps of a session row: its state as
// read, its user's factors included, valid while the user's factor entry
// it was filled with is (nil: none).
type sessionEntry struct {
	factors *factorEntry
	state   store.SessionState // returned by address: never changed
}

// factorEntry is what the cache keeps of a user's factors: factorTOTP and
// factorSMS, set when that factor is enrolled. Once dropped it is never
// read again.
type factorEntry struct {
	bits    factorBits
	dropped atomic.Bool
}

// factorBits are a user's enrolled factors.
type factorBits uint8

const (
	factorTOTP factorBits = 1 << iota
	factorSMS
)

func newSessionCache(size int) *sessionCache {
	return &sessionCache{seed: maphash.MakeSeed(), perShard: max(1, size/sessionShards)}
}

func (c *sessionCache) index(key string) uint64 {
	return maphash.String(c.seed, key) % sessionShards
}

// has reports whether session id is cached (known to exist).
func (c *sessionCache) has(id string) bool {
	_, ok := c.sessions[c.index(id)].m.Load(id)
	return ok
}

// state returns session id's state when both the session and its user's
// factors are cached.
func (c *sessionCache) state(id string) (*store.SessionState, bool) {
	v, ok := c.sessions[c.index(id)].m.Load(id)
	if !ok {
		return nil, false
	}
	e := v.(*sessionEntry)
	if f := e.factors; f == nil || f.dropped.Load() {
		return nil, false
	}
	return &e.state, true
}

// generations returns what a fill of session id must carry: read them
// before the read that fills.
func (c *sessionCache) generations(id string) (session uint64, factors factorGens) {
	for i := range c.factors {
		factors[i] = c.factors[i].gen.Load()
	}
	return c.sessions[c.index(id)].gen.Load(), factors
}

// fill caches session id's state, each entry unless a drop happened in
// its shard since its generation was read. A full shard loses an
// arbitrary entry.
func (c *sessionCache) fill(id string, st *store.SessionState, sessionGen uint64, factorGen *factorGens) {
	var bits factorBits
	if st.TOTP {
		bits |= factorTOTP
	}
	if st.SMS {
		bits |= factorSMS
	}
	i := c.index(st.UserID)
	fs := &c.factors[i]
	var f *factorEntry
	fs.mu.Lock()
	if fs.gen.Load() == factorGen[i] {
		if v, ok := fs.m.Load(st.UserID); ok && v.(*factorEntry).bits == bits {
			f = v.(*factorEntry) // the sessions of one user share it
		} else {
			f = &factorEntry{bits: bits}
			c.store(fs, st.UserID, f)
		}
	}
	fs.mu.Unlock()
	sh := &c.sessions[c.index(id)]
	sh.mu.Lock()
	if sh.gen.Load() == sessionGen {
		c.store(sh, id, &sessionEntry{factors: f, state: *st})
	}
	sh.mu.Unlock()
}

// store sets key in sh (locked), evicting an arbitrary entry from a full
// shard. A factor entry replaced or evicted is dropped: the sessions
// that point at it could not tell when it changes.
func (c *sessionCache) store(sh *stateShard, key string, v any) {
	old, loaded := sh.m.Swap(key, v)
	if loaded {
		forget(old)
		return
	}
	sh.n++
	if sh.n <= c.perShard {
		return
	}
	sh.m.Range(func(k, v any) bool {
		if k.(string) == key {
			return true
		}
		sh.m.Delete(k)
		forget(v)
		sh.n--
		return false
	})
}

// forget marks a factor entry that left its cache as dropped.
func forget(v any) {
	if f, ok := v.(*factorEntry); ok {
		f.dropped.Store(true)
	}
}

// drop forgets session id and voids the fills in progress in its shard.
func (c *sessionCache) drop(id string) { c.sessions[c.index(id)].drop(id) }

// dropFactors forgets userID's factors and voids the fills in progress
// in its shard.
func (c *sessionCache) dropFactors(userID string) { c.factors[c.index(userID)].drop(userID) }

// drop forgets key and voids the fills in progress in sh.
func (sh *stateShard) drop(key string) {
	sh.mu.Lock()
	sh.gen.Add(1)
	if v, ok := sh.m.LoadAndDelete(key); ok {
		forget(v)
		sh.n--
	}
	sh.mu.Unlock()
}

// SessionState returns session id's state: from the cache for a session
// known to exist, else with one read transaction, whose answer fills the
// cache.
func (db *DB) SessionState(ctx context.Context, id string) (*store.SessionState, error) {
	if db.closed.Load() {
		return nil, store.ErrClosed
	}
	c := db.sessions
	if st, ok := c.state(id); ok {
		return st, nil
	}
	sessionGen, factorGen := c.generations(id)
	var st *store.SessionState
	err := db.View(ctx, func(tx store.Tx) (err error) {
		st, err = tx.(txn).sessionState(id)
		return err
	})
	if err != nil {
		return nil, err
	}
	c.fill(id, st, sessionGen, &factorGen)
	return st, nil
}

// sessionState reads session id's state: ErrNotFound without the row.
func (tx txn) sessionState(id string) (*store.SessionState, error) {
	s, err := tx.Session(id)
	if err != nil {
		return nil, err
	}
	st := &store.SessionState{UserID: s.UserID, Proofs: s.Proofs}
	switch u, err := tx.User(s.UserID); err {
	case nil:
		st.Email, st.Name, st.Groups = u.Email, u.FirstName, u.Groups
	case store.ErrNotFound:
	default:
		return nil, err
	}
	factors := tx.bucket(bucketFactors)
	if st.TOTP, err = factorEnrolled(factors.Get(compound(s.UserID, "totp"))); err != nil {
		return nil, err
	}
	if st.SMS, err = factorEnrolled(factors.Get(compound(s.UserID, "sms"))); err != nil {
		return nil, err
	}
	return st, nil
}

// sessionChanged drops session id from the session cache once tx
// commits (a rolled-back change changed nothing): its row was deleted,
// or rewritten by PutSession.
func (tx txn) sessionChanged(id []byte) {
	db := tx.db()
	if db == nil { // a file opened by a migration or a tool
		return
	}
	s := string(id)
	tx.OnCommit(func() { db.sessions.drop(s) })
}

// factorsChanged drops userID's factors (and what the session cache
// keeps of the user) from the cache once tx commits.
func (tx txn) factorsChanged(userID string) {
	db := tx.db()
	if db == nil {
		return
	}
	tx.OnCommit(func() { db.sessions.dropFactors(userID) })
}
