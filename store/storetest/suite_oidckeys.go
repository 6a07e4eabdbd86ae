package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/store"
)

// OIDCKeys tests the signing keys of the projects' OpenID providers
// (store.OIDCKeys).
func (s Suite) OIDCKeys(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.oidcKeysRoundTrip},
		{"OneActivePerAlg", s.oidcKeysOneActivePerAlg},
		{"Race", s.oidcKeysRace},
	})
}

// oidcKey is a key of project pid as the suites make them.
func oidcKey(pid, id, alg string, created time.Time) *store.OIDCKey {
	return &store.OIDCKey{ProjectID: pid, ID: id, Alg: alg, PrivateKey: []byte("sealed\x00\xff" + id),
		PublicJWK: []byte(`{"kty":"EC","kid":"` + id + `"}`), CreatedAt: created}
}

// kids lists the ids of keys, in order.
func kids(keys []*store.OIDCKey) string {
	var out []string
	for _, k := range keys {
		out = append(out, k.ID)
	}
	return strings.Join(out, " ")
}

// oidcKeysRoundTrip: keys round-trip exactly, list per project oldest
// first (equal times in kid order, never nil), retire once (a second
// retirement keeps the first time), and go with their project.
func (s Suite) oidcKeysRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 123456789, time.UTC)
	retired := oidcKey("p", "k-old", "RS256", at.Add(-time.Hour))
	retired.RetiredAt = at.Add(-time.Minute)
	complete(t, retired)
	update(t, db, func(tx store.Tx) error {
		for _, id := range []string{"p", "p2", "pp"} {
			if err := tx.PutProject(&store.Project{ID: id, Name: id, CreatedAt: at}); err != nil {
				return err
			}
		}
		for _, k := range []*store.OIDCKey{
			oidcKey("p", "k-rs", "RS256", at), oidcKey("p", "k-es", "ES256", at), retired,
			oidcKey("p", "k-zero", "XX", time.Time{}), oidcKey("p2", "k-rs", "RS256", at), oidcKey("pp", "k1", "RS256", at),
		} {
			if err := tx.AddOIDCKey(k); err != nil {
				return fmt.Errorf("AddOIDCKey(%s/%s): %w", k.ProjectID, k.ID, err)
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		list, err := tx.OIDCKeys("p")
		if err != nil {
			return err
		}
		if got, want := kids(list), "k-zero k-old k-es k-rs"; got != want {
			return fmt.Errorf("OIDCKeys(p)=%s, want %s", got, want)
		}
		if err := diff("retired key", list[1], retired); err != nil {
			return err
		}
		if err := diff("active key", list[3], oidcKey("p", "k-rs", "RS256", at)); err != nil {
			return err
		}
		if none, err := tx.OIDCKeys("nope"); err != nil || none == nil || len(none) != 0 {
			return fmt.Errorf("OIDCKeys(nope)=%v %v, want empty, non-nil", none, err)
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.OIDCKeys("p")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"OIDCKeys":          wantNone(tx.OIDCKeys(bad)),
			"RetireOIDCKey":     wantNotFoundErr(tx.RetireOIDCKey(bad, "k-rs", at)),
			"RetireOIDCKey/kid": wantNotFoundErr(tx.RetireOIDCKey("p", bad, at)),
		}
	})
	update(t, db, func(tx store.Tx) error {
		if err := tx.RetireOIDCKey("p", "k-rs", at.Add(time.Hour)); err != nil {
			return err
		}
		if err := tx.RetireOIDCKey("p", "k-rs", at.Add(2*time.Hour)); err != nil {
			return fmt.Errorf("retiring a retired key: %w", err)
		}
		if err := tx.RetireOIDCKey("p", "nope", at); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("RetireOIDCKey(p, nope)=%v, want ErrNotFound", err)
		}
		if err := tx.RetireOIDCKey("p2", "k-es", at); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("RetireOIDCKey(p2, k-es)=%v (p's kid), want ErrNotFound", err)
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		list, err := tx.OIDCKeys("p")
		if err != nil {
			return err
		}
		want := oidcKey("p", "k-rs", "RS256", at)
		want.RetiredAt = at.Add(time.Hour)
		return diff("retired twice", list[3], want)
	})
	update(t, db, func(tx store.Tx) error {
		_, err := tx.DeleteProject("p")
		return err
	})
	view(t, db, func(tx store.Tx) error {
		for pid, want := range map[string]string{"p": "", "p2": "k-rs", "pp": "k1"} {
			if list, err := tx.OIDCKeys(pid); err != nil || kids(list) != want {
				return fmt.Errorf("OIDCKeys(%s) after DeleteProject(p)=%s %v, want %q", pid, kids(list), err, want)
			}
		}
		return nil
	})
}

// oidcKeysOneActivePerAlg: a project has one active key of each
// algorithm and one key of each kid: AddOIDCKey answers ErrConflict,
// changing nothing, for a second active key of an algorithm or a kid
// taken (retired or not), and takes a retired key of an algorithm that
// has an active one, an active key once the other is retired, and the
// same kid in another project.
func (s Suite) oidcKeysOneActivePerAlg(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	update(t, db, func(tx store.Tx) error {
		if err := tx.AddOIDCKey(oidcKey("p", "a", "RS256", at)); err != nil {
			return err
		}
		old := oidcKey("p", "old", "RS256", at.Add(-time.Hour))
		old.RetiredAt = at
		return tx.AddOIDCKey(old)
	})
	for _, c := range []struct {
		name string
		key  *store.OIDCKey
	}{
		{"second active RS256", oidcKey("p", "b", "RS256", at.Add(time.Second))},
		{"kid taken by the active key", oidcKey("p", "a", "ES256", at)},
		{"kid taken by a retired key", oidcKey("p", "old", "ES256", at)},
	} {
		update(t, db, func(tx store.Tx) error {
			if err := tx.AddOIDCKey(c.key); !errors.Is(err, store.ErrConflict) {
				return fmt.Errorf("%s: AddOIDCKey=%v, want ErrConflict", c.name, err)
			}
			// The transaction goes on.
			list, err := tx.OIDCKeys("p")
			if err != nil || kids(list) != "old a" {
				return fmt.Errorf("%s: OIDCKeys(p)=%s %v, want old a", c.name, kids(list), err)
			}
			return nil
		})
	}
	update(t, db, func(tx store.Tx) error {
		retired := oidcKey("p", "r2", "RS256", at.Add(time.Minute))
		retired.RetiredAt = at.Add(time.Minute)
		if err := tx.AddOIDCKey(retired); err != nil {
			return fmt.Errorf("a retired RS256 key beside the active one: %w", err)
		}
		if err := tx.AddOIDCKey(oidcKey("p2", "a", "RS256", at)); err != nil {
			return fmt.Errorf("p's kid in p2: %w", err)
		}
		if err := tx.RetireOIDCKey("p", "a", at.Add(time.Hour)); err != nil {
			return err
		}
		return tx.AddOIDCKey(oidcKey("p", "b", "RS256", at.Add(time.Hour)))
	})
	view(t, db, func(tx store.Tx) error {
		list, err := tx.OIDCKeys("p")
		if err != nil || kids(list) != "old a r2 b" {
			return fmt.Errorf("OIDCKeys(p)=%s %v, want old a r2 b", kids(list), err)
		}
		return nil
	})
}

// oidcKeysRace: writers that each add a project's active key of one
// algorithm at once, as replicas creating a project's first keys do:
// exactly one succeeds, the others answer ErrConflict.
func (s Suite) oidcKeysRace(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = db.Update(ctx, func(tx store.Tx) error {
				return tx.AddOIDCKey(oidcKey("p", fmt.Sprint("k", i), "ES256", at))
			})
		}()
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("writer %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers added an active ES256 key, want 1", won)
	}
	view(t, db, func(tx store.Tx) error {
		if list, err := tx.OIDCKeys("p"); err != nil || len(list) != 1 {
			return fmt.Errorf("OIDCKeys(p)=%s %v, want one key", kids(list), err)
		}
		return nil
	})
}

// wantNotFoundErr returns nil when err is ErrNotFound.
func wantNotFoundErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("%v; want ErrNotFound", err)
}
