package store

import (
	"fmt"
	"testing"
)

// TestSessionCacheGeneration: a fill whose read began before a drop in
// its shard is void (the row it saw may be the one changed), for the
// session and for the user's factors alike; a later fill is kept; a drop
// forgets; and each cache holds at most its size.
func TestSessionCacheGeneration(t *testing.T) {
	c := newSessionCache(64)
	st := SessionState{UserID: "u", Proofs: []Proof{{Method: "otp"}}, TOTP: true}
	cached := func() (session, factors bool) {
		_, session = c.sessions[c.index("s")].m.Load("s")
		_, factors = c.factors[c.index("u")].m.Load("u")
		return session, factors
	}

	gen, gens := c.generations("s")
	c.drop("s") // the session rewritten while the read ran
	c.fill("s", st, gen, &gens)
	if s, f := cached(); s || !f {
		t.Fatalf("after a session drop: session cached %v (want false), factors %v (want true)", s, f)
	}
	gen, gens = c.generations("s")
	c.dropFactors("u") // a factor written while the read ran
	c.fill("s", st, gen, &gens)
	if s, f := cached(); !s || f {
		t.Fatalf("after a factor drop: session cached %v (want true), factors %v (want false)", s, f)
	}
	if _, ok := c.state("s"); ok {
		t.Fatal("a state without its factors was answered")
	}
	gen, gens = c.generations("s")
	c.fill("s", st, gen, &gens)
	got, ok := c.state("s")
	if !ok || got.UserID != "u" || !got.TOTP || got.SMS || len(got.Proofs) != 1 {
		t.Fatalf("state %+v, %v after a fill", got, ok)
	}
	c.drop("s")
	if _, ok := c.state("s"); ok || c.has("s") {
		t.Fatal("a dropped session is still known")
	}

	for i := range 1000 {
		id, user := fmt.Sprint("s", i), fmt.Sprint("u", i)
		gen, gens := c.generations(id)
		c.fill(id, SessionState{UserID: user}, gen, &gens)
	}
	for name, shards := range map[string]*[boltSessionShards]stateShard{"sessions": &c.sessions, "factors": &c.factors} {
		n := 0
		for i := range shards {
			sh := &shards[i]
			sh.m.Range(func(any, any) bool { n++; return true })
			if sh.n > c.perShard {
				t.Fatalf("%s shard %d holds %d, bound %d", name, i, sh.n, c.perShard)
			}
		}
		if n > 64 {
			t.Fatalf("%d %s cached, bound 64", n, name)
		}
	}
}
