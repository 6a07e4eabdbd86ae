package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// ExternalMethods tests the external-method registrations and their
// grants (store.ExternalMethods): exact round trips, lookups by name,
// lists in order, and grants deleted by external user.
func (s Suite) ExternalMethods(t *testing.T) {
	parallel(t, []subtest{
		{"Methods", s.externalMethods},
		{"Grants", s.externalGrants},
	})
}

// externalMethods: every field comes back; by name, the first of equal
// names in id order; a project's list oldest first, equal times in id
// order, nil when it has none.
func (s Suite) externalMethods(t *testing.T) {
	db := s.open(t, store.Options{})
	ms := []*store.ExternalMethod{
		{ID: "m3", ProjectID: "p1", Method: "bank", Pattern: "webhook", Status: "active", Secret: []byte{1, 0, 0xff}, CreatedAt: t0},
		{ID: "m2", ProjectID: "p1", Method: "bank", Pattern: "redirect", Status: "inactive", Secret: []byte{2}, CreatedAt: t0},
		{ID: "m1", ProjectID: "p1", Method: "kiosk", Pattern: "webhook", Status: "active", CreatedAt: t0.Add(time.Second)},
		{ID: "m0", ProjectID: "p1", Method: "desk", Pattern: "webhook", Status: "active", Secret: []byte{}},
		{ID: "m4", ProjectID: "p2", Method: "bank", Pattern: "webhook", Status: "active", Secret: []byte{}, CreatedAt: t0},
	}
	complete(t, ms[0])
	update(t, db, func(tx store.Tx) error {
		for _, m := range ms {
			if err := tx.PutExternalMethod(m); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range ms {
			got, err := tx.ExternalMethod(want.ID)
			if err != nil {
				return err
			}
			if err := diff("method", got, want); err != nil {
				return err
			}
		}
		got, err := tx.ExternalMethodByName("p1", "bank")
		if err != nil {
			return err
		}
		if err := diff("by name (lowest id)", got, ms[1]); err != nil {
			return err
		}
		for name, err := range map[string]error{
			"another project's name": wantNotFound(tx.ExternalMethodByName("p2", "kiosk")),
			"an unknown id":          wantNotFound(tx.ExternalMethod("m9")),
		} {
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		list, err := tx.ExternalMethods("p1")
		if err != nil {
			return err
		}
		if err := diff("p1's methods", list, []*store.ExternalMethod{ms[3], ms[1], ms[0], ms[2]}); err != nil {
			return err
		}
		if list, err := tx.ExternalMethods("p3"); err != nil || list != nil {
			return fmt.Errorf("ExternalMethods of a project without any = %#v, %v; want nil", list, err)
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.ExternalMethod("m1")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"ExternalMethod":            wantNotFound(tx.ExternalMethod(bad)),
			"ExternalMethodByName":      wantNotFound(tx.ExternalMethodByName(bad, "bank")),
			"ExternalMethodByName/name": wantNotFound(tx.ExternalMethodByName("p1", bad)),
			"ExternalMethods":           wantNone(tx.ExternalMethods(bad)),
			"DeleteGrants":              wantZero(tx.DeleteGrants(bad, "x")),
			"DeleteGrants/user":         wantZero(tx.DeleteGrants("p1", bad)),
		}
	})
	// Replaced whole, renamed: found by its new name only.
	renamed := &store.ExternalMethod{ID: "m2", ProjectID: "p1", Method: "vault", Pattern: "webhook", Status: "active", CreatedAt: t0}
	update(t, db, func(tx store.Tx) error { return tx.PutExternalMethod(renamed) })
	view(t, db, func(tx store.Tx) error {
		got, err := tx.ExternalMethodByName("p1", "vault")
		if err != nil {
			return err
		}
		if err := diff("renamed", got, renamed); err != nil {
			return err
		}
		got, err = tx.ExternalMethodByName("p1", "bank")
		if err != nil || got.ID != "m3" {
			return fmt.Errorf("by the old name: %+v, %v; want m3", got, err)
		}
		return nil
	})
}

// externalGrants: every field comes back, used or not; DeleteGrants
// removes a project's grants for an external user and counts them, not
// another user's or project's.
func (s Suite) externalGrants(t *testing.T) {
	db := s.open(t, store.Options{})
	grants := []*store.Grant{
		{Hash: []byte("g1"), MethodID: "m1", ProjectID: "p1", ExternalUserID: "x", Email: "a@example.com", CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute), UsedAt: ptrTo(t0)},
		{Hash: []byte("g2"), MethodID: "m1", ProjectID: "p1", ExternalUserID: "x", CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)},
		{Hash: []byte("g3"), MethodID: "m1", ProjectID: "p1", ExternalUserID: "y"},
		{Hash: []byte{0, 0xff}, MethodID: "m2", ProjectID: "p2", ExternalUserID: "x", UsedAt: ptrTo(time.Time{})},
	}
	complete(t, grants[0])
	update(t, db, func(tx store.Tx) error {
		for _, g := range grants {
			if err := tx.PutGrant(g); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		for _, want := range grants {
			got, err := tx.Grant(want.Hash)
			if err != nil {
				return err
			}
			if err := diff("grant", got, want); err != nil {
				return err
			}
		}
		if _, err := tx.Grant([]byte("nope")); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("unknown grant: err=%v", err)
		}
		if n, err := tx.DeleteGrants("p1", "x"); err != nil || n != 2 {
			return fmt.Errorf("DeleteGrants=%d, %v; want 2", n, err)
		}
		if n, err := tx.DeleteGrants("p1", "x"); err != nil || n != 0 {
			return fmt.Errorf("DeleteGrants again=%d, %v; want 0", n, err)
		}
		for _, h := range [][]byte{[]byte("g1"), []byte("g2")} {
			if _, err := tx.Grant(h); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("deleted grant %s: %v", h, err)
			}
		}
		for _, h := range [][]byte{[]byte("g3"), {0, 0xff}} {
			if _, err := tx.Grant(h); err != nil {
				return fmt.Errorf("grant %q: %v", h, err)
			}
		}
		return nil
	})
}
