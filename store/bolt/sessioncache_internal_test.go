package bolt

import (
	"context"
	"fmt"
	"testing"

	"latchkey/store"
)

// TestSessionCacheGeneration: a fill whose read began before a drop in
// its shard is void (the row it saw may be the one changed), for the
// session and for the user's factors alike; a later fill is kept; a drop
// forgets, the user's factors' for the sessions that point at them too;
// and each cache holds at most its size, an evicted factor entry unused.
func TestSessionCacheGeneration(t *testing.T) {
	c := newSessionCache(64)
	st := &store.SessionState{UserID: "u", Proofs: []store.Proof{{Method: "otp"}}, TOTP: true}
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
	c.dropFactors("u") // a factor written: the session's entry points at what went
	if _, ok := c.state("s"); ok {
		t.Fatal("a session answered with its user's dropped factors")
	}
	gen, gens = c.generations("s")
	c.fill("s", st, gen, &gens)
	c.drop("s")
	if _, ok := c.state("s"); ok || c.has("s") {
		t.Fatal("a dropped session is still known")
	}

	gen, gens = c.generations("s")
	c.fill("s", st, gen, &gens)
	for i := range 1000 {
		id, user := fmt.Sprint("s", i), fmt.Sprint("u", i)
		gen, gens := c.generations(id)
		c.fill(id, &store.SessionState{UserID: user}, gen, &gens)
	}
	// u's factor entry was evicted (its shard holds at most 2): a later
	// drop of u's factors would not find it, so s must not use it.
	if _, ok := c.factors[c.index("u")].m.Load("u"); !ok {
		if _, ok := c.state("s"); ok {
			t.Fatal("a session answered with its user's evicted factors")
		}
	}
	for name, shards := range map[string]*[sessionShards]stateShard{"sessions": &c.sessions, "factors": &c.factors} {
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

// TestSessionStateTakesNoTransaction: on a bbolt file, SessionState of a
// session it knows begins no read transaction (each takes the file's
// meta lock twice), GET /session's answer included; one whose entry a
// change dropped (a step-up's proof, a factor) begins one, and is known
// again after it.
func TestSessionStateTakesNoTransaction(t *testing.T) {
	db := openTestDB(t, store.Options{})
	mustTx(t, db, func(tx txn) error {
		return tx.PutSession(&store.Session{ID: "s", UserID: "u", ProjectID: "p", Proofs: []store.Proof{{Method: "otp"}}})
	})
	reads := func(what string, want int) {
		t.Helper()
		before := db.bolt.Stats().TxN
		for range 100 {
			if st, err := db.SessionState(context.Background(), "s"); err != nil || st.UserID != "u" {
				t.Fatalf("%s: SessionState = %+v, %v", what, st, err)
			}
		}
		if got := db.bolt.Stats().TxN - before; got != want {
			t.Fatalf("%s: 100 calls began %d read transactions, want %d", what, got, want)
		}
	}
	reads("the first", 1)
	reads("a known session", 0)
	mustTx(t, db, func(tx txn) error {
		return tx.PutSession(&store.Session{ID: "s", UserID: "u", ProjectID: "p", Proofs: []store.Proof{{Method: "otp"}, {Method: "totp"}}})
	})
	reads("after a step-up", 1)
	mustTx(t, db, func(tx txn) error {
		return tx.PutFactor(&store.Factor{UserID: "u", ProjectID: "p", Kind: "totp", Status: "enrolled"})
	})
	reads("after a factor's change", 1)
	if st, _ := db.SessionState(context.Background(), "s"); !st.TOTP || len(st.Proofs) != 2 {
		t.Fatalf("state %+v", st)
	}
}
