package auth

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// discoveryServer is an OpenID Connect issuer on loopback that serves
// only its discovery document, counting the reads.
func discoveryServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var reads atomic.Int32
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		reads.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": srv.URL, "authorization_endpoint": srv.URL + "/authorize", "token_endpoint": srv.URL + "/token",
			"jwks_uri": srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"RS256"},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, &reads
}

// TestDiscoveryCache: a provider's discovery is read once and kept for
// DiscoveryTTL by the service's clock; removing the provider or its
// project drops its entry, and expired entries are dropped as others
// are filled.
func TestDiscoveryCache(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	keys, err := store.NewKeyring(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s, err := New(db, keys, Config{BaseURL: "http://127.0.0.1:1", Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := s.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pid := boot.Project.ID
	idp, reads := discoveryServer(t)
	add := func(projectID, name string) {
		t.Helper()
		if _, err := s.AddProvider(ctx, projectID, ProviderInput{Name: name, Type: "oidc", ClientID: "c", ClientSecret: "s", Issuer: idp.URL}); err != nil {
			t.Fatal(err)
		}
	}
	use := func(projectID, name string) {
		t.Helper()
		p, err := s.project(ctx, projectID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.client(ctx, projectID, findProvider(p, name)); err != nil {
			t.Fatal(err)
		}
	}
	want := func(n int32, entries int, when string) {
		t.Helper()
		s.oidc.mu.Lock()
		got := len(s.oidc.m)
		s.oidc.mu.Unlock()
		if reads.Load() != n || got != entries {
			t.Fatalf("%s: %d reads, %d entries; want %d and %d", when, reads.Load(), got, n, entries)
		}
	}

	add(pid, "a")
	use(pid, "a")
	use(pid, "a")
	want(1, 1, "two uses")
	advance(DiscoveryTTL - time.Nanosecond)
	use(pid, "a")
	want(1, 1, "a use just within the TTL")
	advance(time.Nanosecond)
	use(pid, "a")
	want(2, 1, "a use at the TTL")

	add(pid, "b")
	use(pid, "b")
	want(3, 2, "a second provider of the same issuer (its own entry)")
	if err := s.DeleteProvider(ctx, pid, "b"); err != nil {
		t.Fatal(err)
	}
	want(3, 1, "a provider removed (its entry goes)")
	use(pid, "a")
	want(3, 1, "the remaining provider")

	// An entry past its TTL goes when another is filled.
	name := "other"
	other, err := s.CreateProject(ctx, ProjectInput{Name: &name})
	if err != nil {
		t.Fatal(err)
	}
	add(other.ID, "c")
	advance(2 * DiscoveryTTL)
	use(other.ID, "c")
	want(4, 1, "a fill after the first entry expired")
	if err := s.DeleteProject(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	want(4, 0, "the project removed")
}
