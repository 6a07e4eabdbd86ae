package httpapi

import (
	"errors"
	"latchkey/internal/testkit"
	"testing"
)

// TestProvidersCacheBounded: the providers' cache makes a project's
// provider once, keeps at most its bound, drops the least recently used
// first, and keeps nothing for a failed build.
func TestProvidersCacheBounded(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "fills an in-memory cache")
	c := &oidcProviders{max: 2}
	built := map[string]int{}
	get := func(id string) *projectOP {
		t.Helper()
		p, err := c.get(id, func() (*projectOP, error) {
			built[id]++
			return &projectOP{issuer: id}, nil
		})
		if err != nil || p.issuer != id {
			t.Fatalf("get(%s) = %+v, %v", id, p, err)
		}
		return p
	}
	a := get("a")
	get("b")
	if get("a") != a || built["a"] != 1 {
		t.Fatalf("a was made %d times, want once", built["a"])
	}
	get("c") // drops b, the least recently used
	if c.len() != 2 {
		t.Fatalf("%d providers kept, want 2", c.len())
	}
	get("a")
	get("b")
	if built["a"] != 1 || built["b"] != 2 || built["c"] != 1 {
		t.Fatalf("made %v: want a once, b twice (dropped), c once", built)
	}
	if _, err := c.get("x", func() (*projectOP, error) { return nil, errors.New("boom") }); err == nil || c.len() != 2 {
		t.Fatalf("failed build: %v, %d kept", err, c.len())
	}
}
