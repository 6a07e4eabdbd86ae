package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// OIDCDevices tests the OpenID providers' device authorizations
// (store.OIDCDevices). (Their sweep is in Expiry's kinds, their deletion
// with the project in Projects'.)
func (s Suite) OIDCDevices(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.oidcDevicesRoundTrip}, {"UserCodes", s.oidcDevicesUserCodes}})
}

// oidcDevicesRoundTrip: device authorizations round-trip exactly (one
// with every field set, one with only its keys and expiry), are found
// by (project, hash) and by (project, user code) only, are replaced
// whole (their place in the sweep's count follows), and go with their
// user code when swept; keys that cannot be text find nothing.
func (s Suite) oidcDevicesRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	full := &store.OIDCDeviceAuth{ProjectID: "p", Hash: []byte{0, 1, 0xfe, 0xff}, UserCode: "BCDF-GHJK", ClientID: "c1",
		Scopes: []string{"openid", "offline_access"}, State: store.DeviceAuthApproved, UserID: "u1", SessionID: "s1",
		AuthTime: at.Add(-time.Minute), AMR: []string{"otp", "mfa"}, ACR: "urn:latchkey:loa:2", GrantID: "g1",
		CreatedAt: at, LastPollAt: at.Add(5*time.Second + time.Nanosecond), ExpiresAt: at.Add(10 * time.Minute)}
	complete(t, full)
	bare := &store.OIDCDeviceAuth{ProjectID: "p", Hash: []byte("bare"), UserCode: "LMNP-QRST", ExpiresAt: at.Add(time.Minute)}
	update(t, db, func(tx store.Tx) error {
		first := *full
		first.State, first.UserID, first.SessionID, first.AMR, first.GrantID = store.DeviceAuthPending, "", "", nil, ""
		first.LastPollAt, first.ExpiresAt = time.Time{}, at.Add(time.Hour)
		for _, err := range []error{
			tx.PutOIDCDeviceAuth(&first), tx.PutOIDCDeviceAuth(bare),
			tx.PutOIDCDeviceAuth(&store.OIDCDeviceAuth{ProjectID: "p2", Hash: full.Hash, UserCode: full.UserCode, ClientID: "p2's", ExpiresAt: at}),
		} {
			if err != nil {
				return err
			}
		}
		return tx.PutOIDCDeviceAuth(full)
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range []*store.OIDCDeviceAuth{full, bare} {
			got, err := tx.OIDCDeviceAuth(want.ProjectID, want.Hash)
			if err != nil {
				return fmt.Errorf("device authorization %x: %w", want.Hash, err)
			}
			if err := diff(fmt.Sprintf("device authorization %x", want.Hash), got, want); err != nil {
				return err
			}
			got, err = tx.OIDCDeviceAuthByUserCode(want.ProjectID, want.UserCode)
			if err != nil {
				return fmt.Errorf("device authorization %s: %w", want.UserCode, err)
			}
			if err := diff("device authorization "+want.UserCode, got, want); err != nil {
				return err
			}
		}
		if got, err := tx.OIDCDeviceAuthByUserCode("p2", full.UserCode); err != nil || got.ClientID != "p2's" {
			return fmt.Errorf("OIDCDeviceAuthByUserCode(p2)=%+v %v, want p2's own", got, err)
		}
		for name, err := range map[string]error{
			"another project":         wantNotFound(tx.OIDCDeviceAuth("p3", full.Hash)),
			"hash prefix":             wantNotFound(tx.OIDCDeviceAuth("p", full.Hash[:3])),
			"no hash":                 wantNotFound(tx.OIDCDeviceAuth("p", nil)),
			"user code, other case":   wantNotFound(tx.OIDCDeviceAuthByUserCode("p", "bcdf-ghjk")),
			"user code, prefix":       wantNotFound(tx.OIDCDeviceAuthByUserCode("p", "BCDF")),
			"user code, another proj": wantNotFound(tx.OIDCDeviceAuthByUserCode("p3", full.UserCode)),
			"user code, none":         wantNotFound(tx.OIDCDeviceAuthByUserCode("p", "")),
		} {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		return nil
	})
	if n := expiring(t, db, store.ExpiringOIDCDeviceAuths); n != 3 {
		t.Fatalf("%d device authorizations in the sweep's count, want 3", n)
	}
	// Before the full one is due, the sweep takes p2's and the bare one,
	// and their user codes are free again.
	if got := sweepAll(t, db, store.ExpiringOIDCDeviceAuths, at.Add(10*time.Minute-time.Nanosecond), 10); len(got) != 1 || got[0] != 2 {
		t.Fatalf("swept %v device authorizations before the full one is due, want [2]", got)
	}
	view(t, db, func(tx store.Tx) error {
		if err := second(tx.OIDCDeviceAuthByUserCode("p", full.UserCode)); err != nil {
			return fmt.Errorf("the full one after the sweep: %w", err)
		}
		return wantNotFound(tx.OIDCDeviceAuthByUserCode("p", bare.UserCode))
	})
	update(t, db, func(tx store.Tx) error {
		return tx.PutOIDCDeviceAuth(&store.OIDCDeviceAuth{ProjectID: "p", Hash: []byte("again"), UserCode: bare.UserCode, ExpiresAt: at.Add(time.Hour)})
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.OIDCDeviceAuth("p", full.Hash)) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"OIDCDeviceAuth (project)":                 wantNotFound(tx.OIDCDeviceAuth(bad, full.Hash)),
			"OIDCDeviceAuthByUserCode (project)":       wantNotFound(tx.OIDCDeviceAuthByUserCode(bad, full.UserCode)),
			"OIDCDeviceAuthByUserCode (the user code)": wantNotFound(tx.OIDCDeviceAuthByUserCode("p", bad)),
		}
	})
	check(t, db)
}

// oidcDevicesUserCodes: a user code is unique within a project: a row
// with another's user code is ErrConflict and changes nothing, the same
// row may be written again with its own, and a row that changes its
// user code frees the old one.
func (s Suite) oidcDevicesUserCodes(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := &store.OIDCDeviceAuth{ProjectID: "p", Hash: []byte("a"), UserCode: "AAAA-AAAA", ClientID: "c", State: store.DeviceAuthPending, ExpiresAt: at}
	update(t, db, func(tx store.Tx) error { return tx.PutOIDCDeviceAuth(a) })
	var conflict error
	update(t, db, func(tx store.Tx) error {
		conflict = tx.PutOIDCDeviceAuth(&store.OIDCDeviceAuth{ProjectID: "p", Hash: []byte("b"), UserCode: a.UserCode, ExpiresAt: at})
		if !errors.Is(conflict, store.ErrConflict) {
			return nil
		}
		// The transaction goes on after the refusal.
		a.State = store.DeviceAuthDenied
		return tx.PutOIDCDeviceAuth(a)
	})
	if !errors.Is(conflict, store.ErrConflict) {
		t.Fatalf("another row with a's user code: %v, want ErrConflict", conflict)
	}
	view(t, db, func(tx store.Tx) error {
		if err := wantNotFound(tx.OIDCDeviceAuth("p", []byte("b"))); err != nil {
			return fmt.Errorf("the refused row: %w", err)
		}
		got, err := tx.OIDCDeviceAuthByUserCode("p", a.UserCode)
		if err != nil {
			return err
		}
		return diff("a", got, a)
	})
	a.UserCode = "BBBB-BBBB"
	update(t, db, func(tx store.Tx) error { return tx.PutOIDCDeviceAuth(a) })
	update(t, db, func(tx store.Tx) error {
		return tx.PutOIDCDeviceAuth(&store.OIDCDeviceAuth{ProjectID: "p", Hash: []byte("c"), UserCode: "AAAA-AAAA", ExpiresAt: at})
	})
	view(t, db, func(tx store.Tx) error {
		if got, err := tx.OIDCDeviceAuthByUserCode("p", "AAAA-AAAA"); err != nil || string(got.Hash) != "c" {
			return fmt.Errorf("the freed user code: %+v %v, want row c", got, err)
		}
		if got, err := tx.OIDCDeviceAuthByUserCode("p", "BBBB-BBBB"); err != nil || string(got.Hash) != "a" {
			return fmt.Errorf("a's new user code: %+v %v, want row a", got, err)
		}
		return nil
	})
	check(t, db)
}
