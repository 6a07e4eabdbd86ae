package storetest

import (
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// OIDCFlows tests the OpenID providers' authorization requests and
// grants (store.OIDCFlows). (Their sweep is in Expiry's kinds, their
// deletion with the project in Projects'.)
func (s Suite) OIDCFlows(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.oidcFlowsRoundTrip}, {"BySession", s.oidcGrantsBySession},
		{"ByClient", s.oidcGrantsByClient}})
}

// oidcFlowsRoundTrip: requests and grants round-trip exactly (one with
// every field set, one with only its key and expiry: a max_age of 0 is
// not none), are found by (project, id) only, are replaced whole (their
// place in the sweep's count follows), a request is deleted by key; ids
// that cannot be text find nothing and change nothing.
func (s Suite) oidcFlowsRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 123456789, time.UTC)
	full := &store.OIDCAuthRequest{ProjectID: "p", ID: "ar-full", ClientID: "c1", RedirectURI: "https://app.example/cb?x=1",
		Scopes: []string{"openid", "profile", "api:read"}, State: "st ✓", Nonce: "n\u00e9", ResponseType: "code",
		ResponseMode: "form_post", CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", CodeChallengeMethod: "S256",
		Prompt: []string{"login", "consent"}, MaxAge: ptrTo(int64(0)), LoginHint: "ada@example.com", UILocales: []string{"pt-BR", "en"},
		HintUserID: "u-hint", CreatedAt: at, UserID: "u1", SessionID: "s1", AuthTime: at.Add(time.Minute + time.Nanosecond),
		AMR: []string{"otp", "mfa"}, ACR: "urn:latchkey:loa:2", Done: true, CodeHash: []byte{0, 1, 0xfe, 0xff},
		CodeExpiresAt: at.Add(2 * time.Minute), GrantID: "g-full", ExpiresAt: at.Add(12 * time.Minute)}
	complete(t, full)
	bare := &store.OIDCAuthRequest{ProjectID: "p", ID: "ar-bare", ExpiresAt: at.Add(30 * time.Minute)}
	grant := &store.OIDCGrant{ProjectID: "p", ID: "g-full", ClientID: "c1", UserID: "u1", SessionID: "s1",
		Scopes: []string{"openid"}, AMR: []string{"otp"}, ACR: "urn:latchkey:loa:1", AuthTime: at, CreatedAt: at.Add(time.Second),
		ExpiresAt: at.Add(time.Hour), RevokedAt: at.Add(time.Minute), RevokedFor: "authorization code replayed"}
	complete(t, grant)
	bareGrant := &store.OIDCGrant{ProjectID: "p", ID: "g-bare", ExpiresAt: at.Add(time.Hour)}
	update(t, db, func(tx store.Tx) error {
		// A first version of each, replaced below.
		first := *full
		first.Done, first.MaxAge, first.Scopes, first.ExpiresAt = false, nil, []string{"openid"}, at.Add(30*time.Minute)
		firstGrant := *grant
		firstGrant.RevokedAt, firstGrant.RevokedFor = time.Time{}, ""
		for _, err := range []error{
			tx.PutOIDCAuthRequest(&first), tx.PutOIDCAuthRequest(bare),
			tx.PutOIDCAuthRequest(&store.OIDCAuthRequest{ProjectID: "p2", ID: "ar-full", ClientID: "p2's", ExpiresAt: at}),
			tx.PutOIDCGrant(&firstGrant), tx.PutOIDCGrant(bareGrant),
			tx.PutOIDCGrant(&store.OIDCGrant{ProjectID: "p2", ID: "g-full", ClientID: "p2's", ExpiresAt: at}),
		} {
			if err != nil {
				return err
			}
		}
		if err := tx.PutOIDCAuthRequest(full); err != nil {
			return err
		}
		return tx.PutOIDCGrant(grant)
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range []*store.OIDCAuthRequest{full, bare} {
			got, err := tx.OIDCAuthRequest(want.ProjectID, want.ID)
			if err != nil {
				return fmt.Errorf("request %s: %w", want.ID, err)
			}
			if err := diff("request "+want.ID, got, want); err != nil {
				return err
			}
		}
		for _, want := range []*store.OIDCGrant{grant, bareGrant} {
			got, err := tx.OIDCGrant(want.ProjectID, want.ID)
			if err != nil {
				return fmt.Errorf("grant %s: %w", want.ID, err)
			}
			if err := diff("grant "+want.ID, got, want); err != nil {
				return err
			}
		}
		if got, err := tx.OIDCAuthRequest("p2", "ar-full"); err != nil || got.ClientID != "p2's" {
			return fmt.Errorf("OIDCAuthRequest(p2, ar-full)=%+v %v, want p2's own", got, err)
		}
		if got, err := tx.OIDCGrant("p2", "g-full"); err != nil || got.ClientID != "p2's" {
			return fmt.Errorf("OIDCGrant(p2, g-full)=%+v %v, want p2's own", got, err)
		}
		for name, err := range map[string]error{
			"request of another project": wantNotFound(tx.OIDCAuthRequest("p3", "ar-full")),
			"request, id prefix":         wantNotFound(tx.OIDCAuthRequest("p", "ar-ful")),
			"request, project prefix":    wantNotFound(tx.OIDCAuthRequest("", "ar-full")),
			"request named as a grant":   wantNotFound(tx.OIDCAuthRequest("p", "g-full")),
			"grant of another project":   wantNotFound(tx.OIDCGrant("p3", "g-full")),
			"grant named as a request":   wantNotFound(tx.OIDCGrant("p", "ar-full")),
		} {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		return nil
	})
	if n := expiring(t, db, store.ExpiringOIDCAuthRequests); n != 3 {
		t.Fatalf("%d requests in the sweep's count, want 3", n)
	}
	if n := expiring(t, db, store.ExpiringOIDCGrants); n != 3 {
		t.Fatalf("%d grants in the sweep's count, want 3", n)
	}
	// The replaced request is due at its new time only.
	if got := sweepAll(t, db, store.ExpiringOIDCAuthRequests, at.Add(12*time.Minute-time.Nanosecond), 10); len(got) != 1 || got[0] != 1 {
		t.Fatalf("swept %v requests before the full one is due, want [1] (p2's)", got)
	}
	update(t, db, func(tx store.Tx) error {
		if err := tx.DeleteOIDCAuthRequest("p", "ar-full"); err != nil {
			return err
		}
		return tx.DeleteOIDCAuthRequest("p", "no-such-request")
	})
	view(t, db, func(tx store.Tx) error {
		if err := wantNotFound(tx.OIDCAuthRequest("p", "ar-full")); err != nil {
			t.Errorf("deleted request: %v", err)
		}
		return second(tx.OIDCAuthRequest("p", "ar-bare"))
	})
	if n := expiring(t, db, store.ExpiringOIDCAuthRequests); n != 1 {
		t.Fatalf("%d requests in the sweep's count after a deletion, want 1", n)
	}
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.OIDCGrant("p", "g-full")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"OIDCAuthRequest (project)":       wantNotFound(tx.OIDCAuthRequest(bad, "ar-bare")),
			"OIDCAuthRequest (id)":            wantNotFound(tx.OIDCAuthRequest("p", bad)),
			"DeleteOIDCAuthRequest (project)": tx.DeleteOIDCAuthRequest(bad, "ar-bare"),
			"DeleteOIDCAuthRequest (id)":      tx.DeleteOIDCAuthRequest("p", bad),
			"OIDCGrant (project)":             wantNotFound(tx.OIDCGrant(bad, "g-full")),
			"OIDCGrant (id)":                  wantNotFound(tx.OIDCGrant("p", bad)),
		}
	})
	check(t, db)
}

// oidcGrantsBySession: OIDCSessionGrants finds a session's grants
// (revoked and expired ones too) in id order, only the project's, and
// follows a grant replaced under another session; the sweep and the
// project's deletion take grants out of it; an unknown session or ids
// that cannot be text find none.
func (s Suite) oidcGrantsBySession(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	g := func(p, id, sid string, exp time.Duration) *store.OIDCGrant {
		return &store.OIDCGrant{ProjectID: p, ID: id, ClientID: "c-" + id, UserID: "u1", SessionID: sid, CreatedAt: at, ExpiresAt: at.Add(exp)}
	}
	revoked := g("p", "g-a", "s1", time.Hour)
	revoked.RevokedAt, revoked.RevokedFor = at, "replayed"
	update(t, db, func(tx store.Tx) error {
		for _, gr := range []*store.OIDCGrant{g("p", "g-c", "s1", 2*time.Hour), revoked, g("p", "g-b", "s2", time.Hour),
			g("p", "g-moved", "s2", time.Hour), g("p2", "g-x", "s1", time.Hour), g("p", "g-s10", "s10", time.Hour)} {
			if err := tx.PutOIDCGrant(gr); err != nil {
				return err
			}
		}
		// Replaced under another session: found under that one only.
		return tx.PutOIDCGrant(g("p", "g-moved", "s1", time.Hour))
	})
	ids := func(p, sid string) []string {
		var out []string
		view(t, db, func(tx store.Tx) error {
			gs, err := tx.OIDCSessionGrants(p, sid)
			if err != nil {
				return err
			}
			if gs == nil {
				return fmt.Errorf("OIDCSessionGrants(%q, %q) = nil, want a list", p, sid)
			}
			out = []string{}
			for _, gr := range gs {
				if gr.ProjectID != p || gr.SessionID != sid {
					return fmt.Errorf("OIDCSessionGrants(%q, %q) gave %+v", p, sid, gr)
				}
				out = append(out, gr.ID)
			}
			return nil
		})
		return out
	}
	for _, c := range []struct {
		p, sid string
		want   []string
	}{
		{"p", "s1", []string{"g-a", "g-c", "g-moved"}},
		{"p", "s2", []string{"g-b"}},
		{"p2", "s1", []string{"g-x"}},
		{"p", "s", []string{}},
		{"p", "s3", []string{}},
		{"p3", "s1", []string{}},
		{"p", "", []string{}},
		{"p", "s1\x00", []string{}},
		{"p\x00s1", "", []string{}},
		{"p", "\xff", []string{}},
	} {
		same(t, fmt.Sprintf("grants of (%q, %q)", c.p, c.sid), ids(c.p, c.sid), c.want)
	}
	// The sweep takes the expired grants out of their session's list.
	if got := sweepAll(t, db, store.ExpiringOIDCGrants, at.Add(time.Hour), 10); len(got) != 1 || got[0] != 5 {
		t.Fatalf("swept %v grants an hour on, want [5]", got)
	}
	same(t, "grants of (p, s1) after the sweep", ids("p", "s1"), []string{"g-c"})
	same(t, "grants of (p, s2) after the sweep", ids("p", "s2"), []string{})
	check(t, db)
}
