package auth

import (
	"bytes"
	"latchkey/internal/testkit"
	"slices"
	"sync"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// newCacheService is a service on a fresh data file with its first-start
// project and key, and no cached entry yet.
func newCacheService(t *testing.T) (*Service, *Bootstrap) {
	t.Helper()
	db := storetest.Open(t)
	keys, err := store.NewKeyring(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s, err := New(db, keys, Config{BaseURL: "http://127.0.0.1:1", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := s.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s, boot
}

// raceFill makes the next cache fill of key wait, after its store read,
// until the returned release is called: the window in which a change
// commits and invalidates the entry is opened deterministically. read is
// closed once the stalled request has read the store.
func raceFill(t *testing.T, key string) (read <-chan struct{}, release func()) {
	t.Helper()
	readCh, releaseCh := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testHookBeforeFill = func(k string) {
		if k != key {
			return
		}
		once.Do(func() {
			close(readCh)
			<-releaseCh
		})
	}
	t.Cleanup(func() { testHookBeforeFill = nil })
	return readCh, func() { close(releaseCh) }
}

// TestProjectChangeNotLostToStaleFill is finding 7 made deterministic: a
// request reads the project (cache miss), an admin PATCH of its deny list
// commits and invalidates the cache, and only then does the request
// store what it read. Before the versioned cache, that pre-update project
// stayed cached and the new deny list was ignored until restart.
func TestProjectChangeNotLostToStaleFill(t *testing.T) {
	s, boot := newCacheService(t)
	id := boot.Project.ID
	read, release := raceFill(t, id)
	done := make(chan error)
	go func() {
		_, err := s.project(ctx, id) // a request's lookup, stalled before its fill
		done <- err
	}()
	<-read
	deny := []string{"198.51.100.0/24"}
	if _, err := s.UpdateProject(ctx, id, ProjectInput{DenyCIDRs: &deny}); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	p, err := s.project(ctx, id) // the next request
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.DenyCIDRs, deny) {
		t.Fatalf("next request sees denyCidrs %v, want %v: a stale project was cached back", p.DenyCIDRs, deny)
	}
}

// TestKeyRevokeNotLostToStaleFill: the API-key cache had the same race;
// a key revoked while a request was filling its entry must answer
// API_KEY_REVOKED on the next request.
func TestKeyRevokeNotLostToStaleFill(t *testing.T) {
	s, boot := newCacheService(t)
	prefix := boot.APIKey[:KeyPrefixLen]
	read, release := raceFill(t, prefix)
	done := make(chan error)
	go func() {
		_, err := s.AuthenticateKey(ctx, "Bearer "+boot.APIKey)
		done <- err
	}()
	<-read
	if err := s.RevokeKey(ctx, prefix); err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("the request in flight: %v (it read the key before the revocation)", err)
	}
	if _, err := s.AuthenticateKey(ctx, "Bearer "+boot.APIKey); err != ErrAPIKeyRevoked {
		t.Fatalf("next request: %v, want API_KEY_REVOKED: a stale key was cached back", err)
	}
}

// TestCacheStress: many goroutines miss, fill and invalidate at once;
// after each change, the next read sees it. The store is a plain map
// under a lock here, so only the cache's own protocol is tested.
func TestCacheStress(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "stresses an in-memory cache")
	var c cache[int]
	var mu sync.Mutex
	stored := map[string]int{}
	read := func(k string) int {
		if v, ok := c.get(k); ok {
			return v
		}
		g := c.generation()
		mu.Lock()
		v := stored[k]
		mu.Unlock()
		c.fill(k, v, g)
		return v
	}
	keys := []string{"a", "b", "c"}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				read(keys[(i+n)%len(keys)])
			}
		}(i)
	}
	for v := 1; v <= 2000; v++ {
		k := keys[v%len(keys)]
		mu.Lock()
		stored[k] = v
		mu.Unlock()
		c.invalidate(k)
		if got := read(k); got != v {
			close(stop)
			wg.Wait()
			t.Fatalf("change %d of %q: next read %d", v, k, got)
		}
	}
	close(stop)
	wg.Wait()
	for _, k := range keys {
		mu.Lock()
		want := stored[k]
		mu.Unlock()
		if got := read(k); got != want {
			t.Fatalf("%s: cached %d, stored %d", k, got, want)
		}
	}
}
