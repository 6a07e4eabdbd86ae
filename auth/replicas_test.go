package auth

import (
	"bytes"
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
	a, b := replica(), replica()
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
