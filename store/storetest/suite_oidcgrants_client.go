package storetest

import (
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// oidcGrantsByClient: OIDCClientGrants finds a client's grants (revoked
// and expired ones too) in id order, only the project's, and follows a
// grant replaced under another client; deleting the client leaves its
// grants (the service revokes them in the same transaction); the sweep
// takes grants out of it; an unknown client or ids that cannot be text
// find none.
func (s Suite) oidcGrantsByClient(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	g := func(p, id, cid string, exp time.Duration) *store.OIDCGrant {
		return &store.OIDCGrant{ProjectID: p, ID: id, ClientID: cid, UserID: "u-" + id, SessionID: "s-" + id, CreatedAt: at, ExpiresAt: at.Add(exp)}
	}
	revoked := g("p", "g-a", "c1", time.Hour)
	revoked.RevokedAt, revoked.RevokedFor = at, "consent revoked"
	update(t, db, func(tx store.Tx) error {
		for _, gr := range []*store.OIDCGrant{g("p", "g-c", "c1", 2*time.Hour), revoked, g("p", "g-b", "c2", time.Hour),
			g("p", "g-moved", "c2", time.Hour), g("p2", "g-x", "c1", time.Hour), g("p", "g-c10", "c10", time.Hour)} {
			if err := tx.PutOIDCGrant(gr); err != nil {
				return err
			}
		}
		// Replaced under another client: found under that one only.
		return tx.PutOIDCGrant(g("p", "g-moved", "c1", time.Hour))
	})
	ids := func(p, cid string) []string {
		var out []string
		view(t, db, func(tx store.Tx) error {
			gs, err := tx.OIDCClientGrants(p, cid)
			if err != nil {
				return err
			}
			if gs == nil {
				return fmt.Errorf("OIDCClientGrants(%q, %q) = nil, want a list", p, cid)
			}
			out = []string{}
			for _, gr := range gs {
				if gr.ProjectID != p || gr.ClientID != cid {
					return fmt.Errorf("OIDCClientGrants(%q, %q) gave %+v", p, cid, gr)
				}
				if gr.ID == "g-a" && (!gr.RevokedAt.Equal(at) || gr.RevokedFor != "consent revoked") {
					return fmt.Errorf("OIDCClientGrants(%q, %q) gave the revoked grant as %+v", p, cid, gr)
				}
				out = append(out, gr.ID)
			}
			return nil
		})
		return out
	}
	cases := []struct {
		p, cid string
		want   []string
	}{
		{"p", "c1", []string{"g-a", "g-c", "g-moved"}},
		{"p", "c2", []string{"g-b"}},
		{"p", "c10", []string{"g-c10"}},
		{"p2", "c1", []string{"g-x"}},
		{"p", "c", []string{}},
		{"p", "c3", []string{}},
		{"p3", "c1", []string{}},
		{"p", "", []string{}},
		{"p", "c1\x00", []string{}},
		{"p\x00c1", "", []string{}},
		{"p", "\xff", []string{}},
	}
	for _, c := range cases {
		same(t, fmt.Sprintf("grants of (%q, %q)", c.p, c.cid), ids(c.p, c.cid), c.want)
	}
	// The client's row goes; its grants stay listed (revoked by the
	// service in the same transaction, swept at their expiry).
	update(t, db, func(tx store.Tx) error { return tx.DeleteOIDCClient("p", "c1") })
	same(t, "grants of (p, c1) after the client's deletion", ids("p", "c1"), []string{"g-a", "g-c", "g-moved"})
	check(t, db)
	// The sweep takes the expired grants out of their client's list.
	if got := sweepAll(t, db, store.ExpiringOIDCGrants, at.Add(time.Hour), 10); len(got) != 1 || got[0] != 5 {
		t.Fatalf("swept %v grants an hour on, want [5]", got)
	}
	same(t, "grants of (p, c1) after the sweep", ids("p", "c1"), []string{"g-c"})
	same(t, "grants of (p, c2) after the sweep", ids("p", "c2"), []string{})
	same(t, "grants of (p2, c1) after the sweep", ids("p2", "c1"), []string{})
	check(t, db)
}
