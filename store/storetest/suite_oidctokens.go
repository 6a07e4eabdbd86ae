package storetest

import (
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// OIDCTokens tests the OpenID providers' refresh tokens and revoked
// access tokens (store.OIDCTokens). (Their sweep is in Expiry's kinds,
// their deletion with the project in Projects'.)
func (s Suite) OIDCTokens(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.oidcTokensRoundTrip}})
}

// oidcTokensRoundTrip: refresh tokens and revoked tokens round-trip
// exactly (one with every field set, one with only its key and expiry),
// are found by (project, key) only (a hash that is a prefix or an
// extension of another finds nothing; a hash with a zero byte is a
// key like any), are replaced whole (their place in the sweep's count
// follows); keys that cannot be text find nothing and change nothing.
func (s Suite) oidcTokensRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 123456789, time.UTC)
	full := &store.OIDCRefreshToken{ProjectID: "p", Hash: []byte{0, 1, 0xfe, 0xff}, GrantID: "g1", ClientID: "c1",
		Scopes: []string{"openid", "offline_access", "api:read"}, CreatedAt: at, RotatedAt: at.Add(time.Minute + time.Nanosecond),
		ExpiresAt: at.Add(7 * 24 * time.Hour)}
	complete(t, full)
	bare := &store.OIDCRefreshToken{ProjectID: "p", Hash: []byte("bare"), ExpiresAt: at.Add(time.Hour)}
	revoked := &store.OIDCRevokedToken{ProjectID: "p", JTI: "g1.1790000000.abc", ClientID: "c1", RevokedAt: at,
		ExpiresAt: at.Add(time.Hour)}
	complete(t, revoked)
	bareRevoked := &store.OIDCRevokedToken{ProjectID: "p", JTI: "g2.1.x", ExpiresAt: at.Add(2 * time.Hour)}
	update(t, db, func(tx store.Tx) error {
		// A first version of the full ones, replaced below.
		first := *full
		first.RotatedAt, first.Scopes, first.ExpiresAt = time.Time{}, nil, at.Add(30*time.Minute)
		firstRevoked := *revoked
		firstRevoked.ExpiresAt = at.Add(time.Minute)
		for _, err := range []error{
			tx.PutOIDCRefreshToken(&first), tx.PutOIDCRefreshToken(bare),
			tx.PutOIDCRefreshToken(&store.OIDCRefreshToken{ProjectID: "p2", Hash: full.Hash, ClientID: "p2's", ExpiresAt: at}),
			tx.PutOIDCRevokedToken(&firstRevoked), tx.PutOIDCRevokedToken(bareRevoked),
			tx.PutOIDCRevokedToken(&store.OIDCRevokedToken{ProjectID: "p2", JTI: revoked.JTI, ClientID: "p2's", ExpiresAt: at}),
		} {
			if err != nil {
				return err
			}
		}
		if err := tx.PutOIDCRefreshToken(full); err != nil {
			return err
		}
		return tx.PutOIDCRevokedToken(revoked)
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range []*store.OIDCRefreshToken{full, bare} {
			got, err := tx.OIDCRefreshToken(want.ProjectID, want.Hash)
			if err != nil {
				return fmt.Errorf("refresh token %x: %w", want.Hash, err)
			}
			if err := diff(fmt.Sprintf("refresh token %x", want.Hash), got, want); err != nil {
				return err
			}
		}
		for _, want := range []*store.OIDCRevokedToken{revoked, bareRevoked} {
			got, err := tx.OIDCRevokedToken(want.ProjectID, want.JTI)
			if err != nil {
				return fmt.Errorf("revoked token %s: %w", want.JTI, err)
			}
			if err := diff("revoked token "+want.JTI, got, want); err != nil {
				return err
			}
		}
		if got, err := tx.OIDCRefreshToken("p2", full.Hash); err != nil || got.ClientID != "p2's" {
			return fmt.Errorf("OIDCRefreshToken(p2)=%+v %v, want p2's own", got, err)
		}
		if got, err := tx.OIDCRevokedToken("p2", revoked.JTI); err != nil || got.ClientID != "p2's" {
			return fmt.Errorf("OIDCRevokedToken(p2)=%+v %v, want p2's own", got, err)
		}
		for name, err := range map[string]error{
			"refresh token of another project": wantNotFound(tx.OIDCRefreshToken("p3", full.Hash)),
			"refresh token, hash prefix":       wantNotFound(tx.OIDCRefreshToken("p", full.Hash[:3])),
			"refresh token, hash extended":     wantNotFound(tx.OIDCRefreshToken("p", append([]byte("bare"), 0))),
			"refresh token, no hash":           wantNotFound(tx.OIDCRefreshToken("p", nil)),
			"refresh token, project prefix":    wantNotFound(tx.OIDCRefreshToken("", full.Hash)),
			"revoked token of another project": wantNotFound(tx.OIDCRevokedToken("p3", revoked.JTI)),
			"revoked token, jti prefix":        wantNotFound(tx.OIDCRevokedToken("p", revoked.JTI[:5])),
			"revoked token never revoked":      wantNotFound(tx.OIDCRevokedToken("p", "g9.1.x")),
		} {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		return nil
	})
	if n := expiring(t, db, store.ExpiringOIDCRefreshTokens); n != 3 {
		t.Fatalf("%d refresh tokens in the sweep's count, want 3", n)
	}
	if n := expiring(t, db, store.ExpiringOIDCRevokedTokens); n != 3 {
		t.Fatalf("%d revoked tokens in the sweep's count, want 3", n)
	}
	// The replaced rows are due at their new time only: before the
	// full token is due, the sweep takes p2's and the bare one.
	if got := sweepAll(t, db, store.ExpiringOIDCRefreshTokens, at.Add(7*24*time.Hour-time.Nanosecond), 10); len(got) != 1 || got[0] != 2 {
		t.Fatalf("swept %v refresh tokens before the full one is due, want [2]", got)
	}
	if got := sweepAll(t, db, store.ExpiringOIDCRevokedTokens, at.Add(time.Hour-time.Nanosecond), 10); len(got) != 1 || got[0] != 1 {
		t.Fatalf("swept %v revoked tokens before the full one is due, want [1] (p2's)", got)
	}
	view(t, db, func(tx store.Tx) error {
		if err := second(tx.OIDCRefreshToken("p", full.Hash)); err != nil {
			return fmt.Errorf("the full refresh token after the sweep: %w", err)
		}
		return second(tx.OIDCRevokedToken("p", revoked.JTI))
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.OIDCRefreshToken("p", full.Hash)) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"OIDCRefreshToken (project)": wantNotFound(tx.OIDCRefreshToken(bad, full.Hash)),
			"OIDCRevokedToken (project)": wantNotFound(tx.OIDCRevokedToken(bad, revoked.JTI)),
			"OIDCRevokedToken (jti)":     wantNotFound(tx.OIDCRevokedToken("p", bad)),
		}
	})
	check(t, db)
}
