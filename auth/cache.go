package auth

import (
	"sync"
	"sync/atomic"
)

// cache is a read-mostly map in front of the store (projects, API keys).
// A miss reads the store and fills the entry; a change to the store
// invalidates the entry after its commit. A fill carries the generation
// it read under, and a fill whose generation is older than the latest
// invalidation is dropped: a request that read the row before a change
// committed cannot store that old row back after the change removed it,
// so every change takes effect for the next request, whatever requests
// run meanwhile. Hits take no lock; fills and invalidations share a
// mutex that is never held across I/O.
//
// Replicas on one database: other replicas' changes arrive through the
// store's invalidation feed (Service.watch), which invalidates the same
// way. While the feed is not trusted the cache is frozen: emptied, and
// filled by nobody, so every request reads the store. A hit costs what
// it did: only fills check the freeze.
type cache[V any] struct {
	m      sync.Map // key → V
	mu     sync.Mutex
	gen    atomic.Uint64 // bumped under mu by every invalidation
	frozen bool          // under mu: fills are refused (feed not trusted)
}

// get returns the cached value for key.
func (c *cache[V]) get(key string) (V, bool) {
	v, ok := c.m.Load(key)
	if !ok {
		var zero V
		return zero, false
	}
	return v.(V), true
}

// generation returns the generation a fill must carry. Read it before
// reading the store.
func (c *cache[V]) generation() uint64 { return c.gen.Load() }

// fill stores v for key unless an invalidation happened since gen was
// read (v may then predate the change).
func (c *cache[V]) fill(key string, v V, gen uint64) {
	if testHookBeforeFill != nil {
		testHookBeforeFill(key)
	}
	c.mu.Lock()
	if c.gen.Load() == gen && !c.frozen {
		c.m.Store(key, v)
	}
	c.mu.Unlock()
}

// reset drops every entry and voids every fill in progress; with freeze,
// no fill is kept until a reset without it.
func (c *cache[V]) reset(freeze bool) {
	c.mu.Lock()
	c.gen.Add(1)
	c.frozen = freeze
	c.m.Clear()
	c.mu.Unlock()
}

// invalidate drops keys and voids every fill in progress. Call it after
// the change committed.
func (c *cache[V]) invalidate(keys ...string) {
	c.mu.Lock()
	c.gen.Add(1)
	for _, k := range keys {
		c.m.Delete(k)
	}
	c.mu.Unlock()
}

// testHookBeforeFill, when set by a test, runs between a cache miss's
// store read and its fill: it widens the race window the generation
// closes, deterministically.
var testHookBeforeFill func(key string)
