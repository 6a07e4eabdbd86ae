package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// OAuthFlows tests the sign-ins with providers in flight
// (store.OAuthFlows): exact round trips, what is not there, deletions,
// and their sweep, apart from the WebAuthn challenges.
func (s Suite) OAuthFlows(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.oauthFlowsRoundTrip},
		{"Sweep", s.oauthFlowsSweep},
	})
}

// oauthFlowsRoundTrip: every field comes back, the payload's bytes as
// given (JSON whitespace, bytes that are not text); a put replaces the
// flow whole; an unknown id or one that cannot be text is ErrNotFound;
// deleting twice is no error; a WebAuthn challenge with the same id is
// another row.
func (s Suite) oauthFlowsRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	flows := []*store.OAuthFlow{
		{ID: "9f2c", ProjectID: "p1", Kind: store.OAuthFlowState, Payload: []byte("{\"providerId\": \"g\",\n \"verifier\":\"v\"}"), ExpiresAt: t0},
		{ID: "b7e1", ProjectID: "p2", Kind: store.OAuthFlowCode, Payload: []byte{0, 0xff, '{', ' '}, ExpiresAt: t0.Add(time.Nanosecond)},
		{ID: "c0", ProjectID: "p1", Kind: store.OAuthFlowCode}, // no payload, the zero time
	}
	complete(t, flows[0])
	update(t, db, func(tx store.Tx) error {
		for _, f := range flows {
			if err := tx.PutOAuthFlow(f); err != nil {
				return err
			}
		}
		return tx.PutChallenge(&store.Challenge{ID: "9f2c", ProjectID: "p1", Kind: "login", Session: []byte(`{}`), ExpiresAt: t0})
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range flows {
			got, err := tx.OAuthFlow(want.ID)
			if err != nil {
				return fmt.Errorf("flow %s: %w", want.ID, err)
			}
			if err := diff("flow", got, want); err != nil {
				return err
			}
		}
		return wantNotFound(tx.OAuthFlow("9f2d"))
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.OAuthFlow("9f2c")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"OAuthFlow":       wantNotFound(tx.OAuthFlow(bad)),
			"DeleteOAuthFlow": tx.DeleteOAuthFlow(bad),
		}
	})
	// Replaced whole: the state becomes a code of another project, due
	// later.
	replaced := &store.OAuthFlow{ID: "9f2c", ProjectID: "p3", Kind: store.OAuthFlowCode, Payload: []byte(`{"email":"a@example.com"}`), ExpiresAt: t0.Add(time.Hour)}
	update(t, db, func(tx store.Tx) error { return tx.PutOAuthFlow(replaced) })
	update(t, db, func(tx store.Tx) error {
		got, err := tx.OAuthFlow("9f2c")
		if err != nil {
			return err
		}
		if err := diff("replaced flow", got, replaced); err != nil {
			return err
		}
		for range 2 {
			if err := tx.DeleteOAuthFlow("9f2c"); err != nil {
				return fmt.Errorf("deleting a flow (twice): %w", err)
			}
		}
		if err := wantNotFound(tx.OAuthFlow("9f2c")); err != nil {
			return fmt.Errorf("deleted flow: %w", err)
		}
		// The challenge of the same id is another row: still there.
		if _, err := tx.Challenge("9f2c"); err != nil {
			return fmt.Errorf("the challenge with the deleted flow's id: %w", err)
		}
		return second(tx.OAuthFlow("b7e1"))
	})
	if n := expiring(t, db, store.ExpiringOAuthFlows); n != 2 {
		t.Fatalf("%d flows indexed for the sweep, want 2", n)
	}
	check(t, db)
}

// oauthFlowsSweep: the sweep of ExpiringOAuthFlows deletes flows due at
// its time, earliest due first and at most its maximum, and not a
// nanosecond early; it leaves WebAuthn challenges due as early, and the
// challenges' sweep leaves the flows.
func (s Suite) oauthFlowsSweep(t *testing.T) {
	db := s.open(t, store.Options{})
	update(t, db, func(tx store.Tx) error {
		// Ids in the opposite order of their expiry: the sweep goes by
		// time.
		for i := range 4 {
			f := &store.OAuthFlow{ID: fmt.Sprint("f", 4-i), ProjectID: "p", Kind: store.OAuthFlowState, Payload: []byte(`{}`),
				ExpiresAt: t0.Add(time.Duration(i) * time.Minute)}
			if err := tx.PutOAuthFlow(f); err != nil {
				return err
			}
		}
		return tx.PutChallenge(&store.Challenge{ID: "c1", ProjectID: "p", Kind: "login", ExpiresAt: t0})
	})
	view(t, db, func(tx store.Tx) error {
		early, err := tx.ExpiryDue(store.ExpiringOAuthFlows, t0.Add(-time.Nanosecond))
		if err != nil {
			return err
		}
		onTime, err := tx.ExpiryDue(store.ExpiringOAuthFlows, t0)
		if err != nil {
			return err
		}
		if early || !onTime {
			return fmt.Errorf("ExpiryDue a nanosecond early = %v, on time = %v", early, onTime)
		}
		return nil
	})
	if got := sweepAll(t, db, store.ExpiringOAuthFlows, t0.Add(-time.Nanosecond), 100); len(got) != 0 {
		t.Fatalf("swept %v a nanosecond early", got)
	}
	update(t, db, func(tx store.Tx) error {
		n, err := tx.SweepExpired(store.ExpiringOAuthFlows, t0.Add(2*time.Minute), 2)
		if err != nil || n != 2 {
			return fmt.Errorf("SweepExpired(max 2) = %d, %v; want 2", n, err)
		}
		for _, id := range []string{"f4", "f3"} {
			if _, err := tx.OAuthFlow(id); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("flow %s, due first, not swept: %v", id, err)
			}
		}
		if _, err := tx.OAuthFlow("f2"); err != nil {
			return fmt.Errorf("flow f2, due but over the maximum: %w", err)
		}
		if _, err := tx.Challenge("c1"); err != nil {
			return fmt.Errorf("the flows' sweep took a challenge: %w", err)
		}
		return nil
	})
	if got := sweepAll(t, db, store.ExpiringChallenges, t0.Add(time.Hour), 100); fmt.Sprint(got) != "[1]" {
		t.Fatalf("the challenges' sweep deleted %v, want [1] (the challenge alone)", got)
	}
	if n := expiring(t, db, store.ExpiringOAuthFlows); n != 2 {
		t.Fatalf("%d flows after the challenges' sweep, want 2", n)
	}
	if got := sweepAll(t, db, store.ExpiringOAuthFlows, t0.Add(3*time.Minute), 100); fmt.Sprint(got) != "[2]" {
		t.Fatalf("swept %v at the last flow's time, want [2]", got)
	}
	check(t, db)
}
