package postgres

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"latchkey/store"
)

// feedRows counts the feed's rows of kind for id.
func feedRows(t *testing.T, db *DB, kind store.ChangeKind, id string) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(bg, `SELECT count(*) FROM changes WHERE kind = $1 AND id = $2`, string(kind), id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// readState returns db's SessionState(id), failing t on an error other than
// ErrNotFound (found false).
func readState(t *testing.T, db *DB, id string) (st store.SessionState, found bool) {
	t.Helper()
	p, err := db.SessionState(bg, id)
	if errors.Is(err, store.ErrNotFound) {
		return st, false
	} else if err != nil {
		t.Fatal(err)
	}
	return *p, true
}

// methods returns the proofs' methods.
func methods(proofs []store.Proof) []string {
	var out []string
	for _, p := range proofs {
		out = append(out, p.Method)
	}
	return out
}

// TestSessionStateAcrossReplicas: what SessionState answers from a
// replica's memory follows the changes another replica commits within a
// second, and the replica that commits them at once: a step-up's proof
// (PutSession of the existing session: a ChangeSession row), a factor
// becoming enrolled (a kindFactors row), the user's deletion. A new
// session, a pending factor and an enrolled factor's next code write no
// feed row.
func TestSessionStateAcrossReplicas(t *testing.T) {
	u := replicaDatabase(t)
	a, b := openReplica(t, u, fastFeed), openReplica(t, u, fastFeed)
	now := time.Now().UTC().Truncate(time.Second)
	s := &store.Session{ID: "s1", UserID: "u1", ProjectID: "p1", Method: "email_otp", IssuedAt: now,
		ExpiresAt: now.Add(time.Hour), Proofs: []store.Proof{{Method: "otp", At: now}}}
	mustUpdate(t, b, func(tx store.Tx) error {
		if err := tx.PutProject(&store.Project{ID: "p1", SigningKeyID: "k", EmailChange: "verify"}); err != nil {
			return err
		}
		if err := tx.PutUser(&store.User{ID: "u1", ProjectID: "p1", Email: "u1@example.com"}); err != nil {
			return err
		}
		return tx.PutSession(s)
	})
	if n := feedRows(t, b, store.ChangeSession, "s1"); n != 0 {
		t.Fatalf("a new session wrote %d feed rows, want none", n)
	}
	// Both replicas know the session, and answer it from memory.
	for _, db := range []*DB{a, b} {
		within(t, 2*time.Second, "s1 cached", func() bool {
			st, ok := readState(t, db, "s1")
			if !ok || st.UserID != "u1" || !slices.Equal(methods(st.Proofs), []string{"otp"}) || st.TOTP || st.SMS {
				t.Fatalf("SessionState(s1) = %+v, %v", st, ok)
			}
			_, cached := db.sessions.state("s1")
			return cached // a fill is void while the feed is not yet trusted
		})
	}
	var worst time.Duration
	follows := func(what string, cond func(st store.SessionState, found bool) bool) {
		t.Helper()
		if st, ok := readState(t, b, "s1"); !cond(st, ok) {
			t.Fatalf("%s: the replica that made it answers %+v, %v", what, st, ok)
		}
		worst = max(worst, within(t, time.Second, what+": seen by the other replica", func() bool {
			return cond(readState(t, a, "s1"))
		}))
	}

	// A step-up on b.
	mustUpdate(t, b, func(tx store.Tx) error {
		sess, err := tx.Session("s1")
		if err != nil {
			return err
		}
		sess.Proofs = append(sess.Proofs, store.Proof{Method: "passkey", At: now.Add(time.Second)})
		return tx.PutSession(sess)
	})
	follows("a step-up's proof", func(st store.SessionState, found bool) bool {
		return found && slices.Equal(methods(st.Proofs), []string{"otp", "passkey"}) && st.Proofs[1].At.Equal(now.Add(time.Second))
	})
	if n := feedRows(t, b, store.ChangeSession, "s1"); n != 1 {
		t.Fatalf("a session rewritten wrote %d feed rows, want 1", n)
	}

	// TOTP: pending (no change), then enrolled, then its next code.
	totp := &store.Factor{UserID: "u1", ProjectID: "p1", Kind: "totp", Status: "pending", CreatedAt: now}
	mustUpdate(t, b, func(tx store.Tx) error { return tx.PutFactor(totp) })
	if n := feedRows(t, b, kindFactors, "u1"); n != 0 {
		t.Fatalf("a pending factor wrote %d feed rows, want none", n)
	}
	totp.Status, totp.LastStep, totp.EnrolledAt = "enrolled", 1, &now
	mustUpdate(t, b, func(tx store.Tx) error { return tx.PutFactor(totp) })
	follows("TOTP enrolled", func(st store.SessionState, found bool) bool { return found && st.TOTP && !st.SMS })
	totp.LastStep = 2
	mustUpdate(t, b, func(tx store.Tx) error { return tx.PutFactor(totp) })
	if n := feedRows(t, b, kindFactors, "u1"); n != 1 {
		t.Fatalf("an enrolment and a later code wrote %d feed rows, want 1", n)
	}
	// SMS enrolled, in a Batch.
	if err := b.Batch(bg, func(tx store.Tx) error {
		return tx.PutFactor(&store.Factor{UserID: "u1", ProjectID: "p1", Kind: "sms", Status: "enrolled", Phone: "+15551230000", CreatedAt: now, EnrolledAt: &now})
	}); err != nil {
		t.Fatal(err)
	}
	follows("SMS enrolled", func(st store.SessionState, found bool) bool { return found && st.TOTP && st.SMS })
	if _, cached := a.sessions.state("s1"); !cached {
		t.Fatal("the other replica does not answer from memory again once it read the change")
	}

	mustUpdate(t, b, func(tx store.Tx) error { return tx.DeleteUser(&store.User{ID: "u1", ProjectID: "p1"}) })
	follows("user deleted", func(_ store.SessionState, found bool) bool { return !found })
	t.Logf("worst lag from a change on one replica to the other's answer: %v (poll interval 10 ms)", worst)
}

// TestSessionStateRoundTrips: SessionState of a session this replica
// knows costs no round trip (GET /session); one it does not, or whose
// user's factors it does not, costs one read (BEGIN with the statement,
// COMMIT), which fills the cache; while the feed is not trusted it reads
// every time.
func TestSessionStateRoundTrips(t *testing.T) {
	tr := openTraced(t)
	tr.db.opt.FeedInterval = time.Hour // the feed's reads would count as round trips
	if err := tr.db.startFeed(bg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.db.stopFeed)
	now := time.Now().UTC()
	s := &store.Session{ID: "s1", UserID: "u1", ProjectID: "p1", Method: "otp", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
	mustUpdate(t, tr.db, func(tx store.Tx) error { return tx.PutSession(s) })
	trips := func(what string, want int64) {
		t.Helper()
		before := tr.trips.Load()
		if st, ok := readState(t, tr.db, "s1"); !ok || st.UserID != "u1" {
			t.Fatalf("%s: SessionState(s1) = %+v, %v", what, st, ok)
		}
		if got := tr.trips.Load() - before; got != want {
			t.Fatalf("%s: %d round trips, want %d", what, got, want)
		}
	}
	readState(t, tr.db, "s1") // the first, which prepares the statement
	trips("a known session", 0)
	tr.db.sessions.drop("s1")
	trips("a session not in the cache", 2)
	trips("a session read once", 0)
	tr.db.sessions.dropFactors("u1")
	trips("a session whose user's factors are not in the cache", 2)
	trips("again", 0)
	tr.db.sessions.apply(store.Change{Kind: store.ChangeStale})
	tr.db.feed.stale.Store(true)
	trips("the feed not trusted", 2)
	trips("the feed not trusted, again", 2)
}

// TestSessionCacheFactorEntries: a session's entry answers with its
// user's factor entry only while that entry is in the cache: dropped
// (PutFactor, the feed's kindFactors or ChangeUser), evicted from a full
// shard, or emptied with the rest (ChangeStale), the session misses
// until read again; a fill whose read began before a drop of the user's
// factors leaves the session without them.
func TestSessionCacheFactorEntries(t *testing.T) {
	c := newSessionCache(64)
	fill := func(id, user string) {
		gen, gens := c.generation(id), c.factorGenerations()
		e := sessionEntry{user: user, project: "p", state: &store.SessionState{UserID: user, TOTP: true}}
		e.factors = c.fillFactors(user, factorTOTP, &gens)
		c.fill(id, e, gen)
	}
	cached := func(id string) bool { _, ok := c.state(id); return ok }
	fill("s", "u")
	if st, ok := c.state("s"); !ok || st.UserID != "u" || !st.TOTP || st.SMS {
		t.Fatalf("state %+v, %v after a fill", st, ok)
	}
	for _, ch := range []store.Change{{Kind: kindFactors, ID: "u"}, {Kind: store.ChangeUser, ID: "u"}, {Kind: store.ChangeStale}} {
		fill("s", "u")
		c.apply(ch)
		if cached("s") {
			t.Fatalf("a session answered with its user's factors after %v", ch)
		}
	}
	gen, gens := c.generation("s"), c.factorGenerations()
	c.dropFactors("u") // a factor written while the read ran
	if f := c.fillFactors("u", 0, &gens); f != nil {
		t.Fatal("a fill of factors read before their drop was kept")
	}
	c.fill("s", sessionEntry{user: "u", state: &store.SessionState{UserID: "u"}}, gen)
	if cached("s") || !c.has("s") {
		t.Fatal("the session's entry is not kept without its factors, or answered without them")
	}
	fill("s", "u")
	for i := range 1000 {
		fill(fmt.Sprint("s", i), fmt.Sprint("u", i))
	}
	if _, kept := c.factors[c.index("u")].m["u"]; !kept && cached("s") {
		t.Fatal("a session answered with its user's evicted factors")
	}
	for i := range c.factors {
		if n := len(c.factors[i].m); n > c.perShard {
			t.Fatalf("factor shard %d holds %d, bound %d", i, n, c.perShard)
		}
	}
}
