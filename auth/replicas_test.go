package auth

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestReplicasFollowTheFeed: two services on one PostgreSQL database
// (two replicas, each with its own store and caches). A key revoked and
// a project changed on one are seen by the other within a second,
// though the other had them cached: its caches follow the store's
// invalidation feed. On bbolt one process owns the file: skipped.
func TestReplicasFollowTheFeed(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	// The key's creation reaches b through the feed too, and drops what
	// b cached of it: b caches the key only once it has seen that.
	created := make(chan string, 16)
	stop := b.db.Watch(func(c store.Change) {
		if c.Kind == store.ChangeAPIKey {
			select {
			case created <- c.ID:
			default:
			}
		}
	})
	defer stop()
	boot, err := a.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix, id := boot.APIKey[:KeyPrefixLen], boot.Project.ID
	for seen := ""; seen != prefix; {
		select {
		case seen = <-created:
		case <-time.After(time.Second):
			t.Fatal("the key's creation did not reach the other replica within 1 s")
		}
	}
	start := time.Now()
	for {
		if _, err := b.AuthenticateKey(ctx, "Bearer "+boot.APIKey); err != nil {
			t.Fatal(err)
		}
		if _, ok := b.apiKeys.get(prefix); ok {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatal("b did not cache the key")
		}
	}
	const origin = "https://app.example.com"
	if b.OriginAllowed(ctx, origin, "") {
		t.Fatal("origin allowed before it was added")
	}
	within := func(what string, ok func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !ok() {
			if time.Since(start) > time.Second {
				t.Fatalf("%s: not seen by the other replica within 1 s", what)
			}
			time.Sleep(2 * time.Millisecond)
		}
		return time.Since(start)
	}

	if err := a.RevokeKey(ctx, prefix); err != nil {
		t.Fatal(err)
	}
	lag := within("key revoked", func() bool {
		_, err := b.AuthenticateKey(ctx, "Bearer "+boot.APIKey)
		return err == ErrAPIKeyRevoked
	})
	t.Logf("revocation seen by the other replica after %v (poll interval 20 ms)", lag)

	rate, origins := 7, append(boot.Project.AllowedOrigins, origin)
	if _, err := a.UpdateProject(ctx, id, ProjectInput{RateLimitPerMinute: &rate, AllowedOrigins: &origins}); err != nil {
		t.Fatal(err)
	}
	within("project changed", func() bool {
		p, err := b.project(ctx, id)
		return err == nil && p.RateLimitPerMinute == rate
	})
	within("origin added", func() bool { return b.OriginAllowed(ctx, origin, "") })
}

// TestStaleFeedFreezesCaches: while the store says its feed is stale,
// the key and project caches keep nothing (every request reads the
// store) and the origin index is rebuilt for each call; once fresh,
// they cache again. (The feed's own test makes it stale for real:
// store/postgres TestFeedStale.)
func TestStaleFeedFreezesCaches(t *testing.T) {
	t.Parallel()
	s, boot := newCacheService(t)
	prefix, id := boot.APIKey[:KeyPrefixLen], boot.Project.ID
	if _, err := s.AuthenticateKey(ctx, "Bearer "+boot.APIKey); err != nil {
		t.Fatal(err)
	}
	s.OriginAllowed(ctx, "http://localhost:3000", "")
	s.onChange(store.Change{Kind: store.ChangeStale})
	if _, ok := s.apiKeys.get(prefix); ok {
		t.Fatal("the key stayed cached when the feed went stale")
	}
	for range 2 {
		if _, err := s.AuthenticateKey(ctx, "Bearer "+boot.APIKey); err != nil {
			t.Fatal(err)
		}
		if !s.OriginAllowed(ctx, "http://localhost:3000", "") {
			t.Fatal("first-start origin refused")
		}
	}
	if _, ok := s.apiKeys.get(prefix); ok {
		t.Fatal("a key was cached while the feed is stale")
	}
	if _, ok := s.projects.get(id); ok {
		t.Fatal("a project was cached while the feed is stale")
	}
	if idx := s.origins.Load(); idx != nil && idx.version == s.projectsVersion.Load() {
		t.Fatal("the origin index was kept while the feed is stale")
	}
	s.onChange(store.Change{Kind: store.ChangeFresh})
	if _, err := s.AuthenticateKey(ctx, "Bearer "+boot.APIKey); err != nil {
		t.Fatal(err)
	}
	s.OriginAllowed(ctx, "http://localhost:3000", "")
	if _, ok := s.apiKeys.get(prefix); !ok {
		t.Fatal("the key is not cached once the feed is fresh")
	}
	if idx := s.origins.Load(); idx == nil || idx.version != s.projectsVersion.Load() {
		t.Fatal("the origin index is not kept once the feed is fresh")
	}
}

// TestReplicasShowSessionProofs: the session check answers from each
// replica's memory, and what it carries for GET /session (Proofs)
// follows the other replica's changes within a second: a TOTP factor
// enrolled on the user (the session's second factor now pending), then a
// step-up by TOTP on the session (amr grows, nothing pending), then a
// logout. On bbolt one process owns the file: skipped.
func TestReplicasShowSessionProofs(t *testing.T) {
	a, b := twoReplicas(t)
	boot, err := a.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := boot.Project
	now := time.Now().UTC()
	u := &store.User{ID: newID(), ProjectID: p.ID, Email: "proofs@example.com", CreatedAt: now}
	sess := a.newSession(p, u, "email_otp")
	if err := a.db.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutUser(u); err != nil {
			return err
		}
		return tx.PutSession(sess)
	}); err != nil {
		t.Fatal(err)
	}
	tok, _, err := a.signSession(p, sess)
	if err != nil {
		t.Fatal(err)
	}
	header := "Bearer " + tok
	proofs := func(s *Service) (SessionProofs, error) {
		_, sp, err := s.AuthenticateSessionProofs(ctx, header)
		return sp, err
	}
	for _, s := range []*Service{a, b} {
		for range 2 { // the second from memory
			if sp, err := proofs(s); err != nil || !slices.Equal(sp.AMR, []string{"otp"}) || sp.SecondFactorPending {
				t.Fatalf("signed in: %+v, %v", sp, err)
			}
		}
	}
	follows := func(what string, want func(SessionProofs, error) bool) {
		t.Helper()
		if sp, err := proofs(a); !want(sp, err) {
			t.Fatalf("%s: the replica that made it answers %+v, %v", what, sp, err)
		}
		start := time.Now()
		for {
			sp, err := proofs(b)
			if want(sp, err) {
				break
			}
			if time.Since(start) > time.Second {
				t.Fatalf("%s: the other replica answers %+v, %v after 1 s", what, sp, err)
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Logf("%s: seen by the other replica after %v (poll interval 20 ms)", what, time.Since(start))
	}

	if err := a.db.Update(ctx, func(tx store.Tx) error {
		return tx.PutFactor(&store.Factor{UserID: u.ID, ProjectID: p.ID, Kind: factorTOTP, Status: factorEnrolled,
			CreatedAt: now, EnrolledAt: &now})
	}); err != nil {
		t.Fatal(err)
	}
	follows("TOTP enrolled", func(sp SessionProofs, err error) bool {
		return err == nil && slices.Equal(sp.AMR, []string{"otp"}) && sp.SecondFactorPending
	})
	if err := a.db.Update(ctx, func(tx store.Tx) error { return a.markProof(tx, sess.ID, amrTOTP, now) }); err != nil {
		t.Fatal(err)
	}
	follows("a TOTP step-up", func(sp SessionProofs, err error) bool {
		return err == nil && slices.Equal(sp.AMR, []string{"otp", "totp"}) && !sp.SecondFactorPending
	})
	pr, err := a.AuthenticateSession(ctx, header)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Logout(ctx, pr, LogoutThis); err != nil {
		t.Fatal(err)
	}
	follows("logout", func(_ SessionProofs, err error) bool { return err == ErrInvalidSession })
}

// twoReplicas returns two services on one new PostgreSQL database, each
// with its own store and caches, their feeds read every 20 ms (closed
// when the test ends); on bbolt, where one process owns the file, it
// skips t.
func twoReplicas(t *testing.T) (a, b *Service) {
	t.Helper()
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("replicas share a PostgreSQL database: LATCHKEY_TEST_STORE=postgres runs this")
	}
	dsn := storetest.New(t)
	keys, err := store.NewKeyring(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	replica := func() *Service {
		db, _, err := store.Open(ctx, dsn, store.Options{FeedInterval: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s, err := New(db, keys, Config{BaseURL: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return replica(), replica()
}
