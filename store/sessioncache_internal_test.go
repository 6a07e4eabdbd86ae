package store

import (
	"fmt"
	"testing"
)

// TestLiveSessionsGeneration: a fill whose read began before a drop in
// its shard is void (the row it saw may be the one deleted), a later
// fill is kept, a drop forgets, and the cache holds at most its size.
func TestLiveSessionsGeneration(t *testing.T) {
	t.Parallel()
	c := newLiveSessions(64)
	gen := c.generation("s")
	c.drop("s") // a deletion committed while the read ran
	c.fill("s", gen)
	if c.has("s") {
		t.Fatal("a fill read before a drop was kept")
	}
	c.fill("s", c.generation("s"))
	if !c.has("s") {
		t.Fatal("a fill was lost")
	}
	c.drop("s")
	if c.has("s") {
		t.Fatal("a dropped session is still known")
	}
	for i := range 1000 {
		id := fmt.Sprint("s", i)
		c.fill(id, c.generation(id))
	}
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.m.Range(func(any, any) bool { n++; return true })
		if sh.n > c.perShard {
			t.Fatalf("shard %d holds %d, bound %d", i, sh.n, c.perShard)
		}
	}
	if n > 64 {
		t.Fatalf("%d sessions cached, bound 64", n)
	}
}
