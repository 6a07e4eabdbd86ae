package store

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// The bbolt file's session cache: SessionLive is the check of every call
// with a user's token, and a bbolt read transaction, cheap as it is,
// takes the file's meta lock twice (to begin and to end), a mutex that
// every transaction of the process shares: under many concurrent checks
// it serialised them. So SessionLive answers from memory for sessions
// known to exist: a positive cache of session ids, bounded, read
// without a lock, kept coherent by the deletions themselves. Every
// deletion of a session row (DeleteSession, DeleteUserSessions, and
// through them DeleteUser and DeleteProject; the sweep) goes through the
// sessions' expiry entry, whose remove drops the id once the deleting
// transaction has committed, before its Update or Batch returns. A miss
// reads the row and fills the entry only if no drop happened in its
// shard since before the read began, so an entry never outlives its row
// past the commit that deleted it.

// boltSessionCacheSize bounds the sessions cached.
const boltSessionCacheSize = 1 << 16

const boltSessionShards = 32

type liveSessions struct {
	seed     maphash.Seed
	perShard int
	shards   [boltSessionShards]liveShard
}

type liveShard struct {
	m   sync.Map      // session id → struct{}
	gen atomic.Uint64 // bumped by every drop: fills read before it are void
	mu  sync.Mutex    // fills and drops
	n   int           // entries, under mu
	_   [32]byte      // keep shards on separate cache lines
}

func newLiveSessions(size int) *liveSessions {
	return &liveSessions{seed: maphash.MakeSeed(), perShard: max(1, size/boltSessionShards)}
}

func (c *liveSessions) shard(id string) *liveShard {
	return &c.shards[maphash.String(c.seed, id)%boltSessionShards]
}

// has reports whether session id is known to exist.
func (c *liveSessions) has(id string) bool {
	_, ok := c.shard(id).m.Load(id)
	return ok
}

// generation returns what a fill of id must carry: read it before the
// read that fills.
func (c *liveSessions) generation(id string) uint64 { return c.shard(id).gen.Load() }

// fill caches id unless a drop happened in its shard since gen was read.
// A full shard loses an arbitrary entry.
func (c *liveSessions) fill(id string, gen uint64) {
	sh := c.shard(id)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.gen.Load() != gen {
		return
	}
	if _, ok := sh.m.Load(id); ok {
		return
	}
	if sh.n >= c.perShard {
		sh.m.Range(func(k, _ any) bool {
			sh.m.Delete(k)
			sh.n--
			return false
		})
	}
	sh.m.Store(id, struct{}{})
	sh.n++
}

// drop forgets id and voids the fills in progress in its shard.
func (c *liveSessions) drop(id string) {
	sh := c.shard(id)
	sh.mu.Lock()
	sh.gen.Add(1)
	if _, ok := sh.m.LoadAndDelete(id); ok {
		sh.n--
	}
	sh.mu.Unlock()
}

// SessionLive reports whether session id's row exists: from the cache
// for a session known to exist, else with one read transaction, whose
// answer fills the cache.
func (db *boltDB) SessionLive(ctx context.Context, id string) (bool, error) {
	if db.closed.Load() {
		return false, ErrClosed
	}
	if db.sessions.has(id) {
		return true, nil
	}
	gen := db.sessions.generation(id)
	var live bool
	err := db.View(ctx, func(tx Tx) error {
		var err error
		live, err = tx.SessionExists(id)
		return err
	})
	if err != nil {
		return false, err
	}
	if live {
		db.sessions.fill(id, gen)
	}
	return live, nil
}

// sessionDeleted drops session id from the session cache once tx
// commits (a rolled-back deletion deleted nothing).
func (tx boltTx) sessionDeleted(id []byte) {
	db := tx.db()
	if db == nil { // a file opened by a migration or a tool
		return
	}
	s := string(id)
	tx.OnCommit(func() { db.sessions.drop(s) })
}
