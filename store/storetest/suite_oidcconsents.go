package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// OIDCConsents tests the users' consents to the OpenID providers'
// third-party clients (store.OIDCConsents), and the listing of a user's
// grants (OIDCUserGrants) that revoking a consent reads.
func (s Suite) OIDCConsents(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.oidcConsentsRoundTrip},
		{"GoWithUserClientProject", s.oidcConsentsGo},
		{"UserGrants", s.oidcUserGrants},
	})
}

// consentClients returns the client ids of list, space-separated.
func consentClients(list []*store.OIDCConsent) string {
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ProjectID+"/"+c.UserID+"/"+c.ClientID)
	}
	return strings.Join(ids, " ")
}

// oidcConsentsRoundTrip: a consent round-trips exactly, is found by
// (project, user, client) only, is replaced whole, lists per (project,
// user) in client byte order (never nil) and is deleted by key.
func (s Suite) oidcConsentsRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 123456789, time.UTC)
	full := &store.OIDCConsent{ProjectID: "p", UserID: "u", ClientID: "c-b", Scopes: []string{"openid", "email", "offline_access"},
		GrantedAt: at, UpdatedAt: at.Add(time.Minute)}
	complete(t, full)
	bare := &store.OIDCConsent{ProjectID: "p", UserID: "u", ClientID: "c-a"}
	update(t, db, func(tx store.Tx) error {
		first := *full
		first.Scopes = []string{"openid"}
		for _, c := range []*store.OIDCConsent{&first, bare, full, {ProjectID: "p", UserID: "u2", ClientID: "c-b"},
			{ProjectID: "p2", UserID: "u", ClientID: "c-b"}, {ProjectID: "p", UserID: "uu", ClientID: "c-c"}} {
			if err := tx.PutOIDCConsent(c); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		got, err := tx.OIDCConsent("p", "u", "c-b")
		if err != nil {
			return err
		}
		if err := diff("replaced consent", got, full); err != nil {
			return err
		}
		if got, err = tx.OIDCConsent("p", "u", "c-a"); err != nil {
			return err
		}
		if err := diff("bare consent", got, bare); err != nil {
			return err
		}
		for _, k := range [][3]string{{"p", "u", "c-"}, {"p", "uu", "c-b"}, {"p2", "u2", "c-b"}, {"p", "U", "c-b"}, {"", "u", "c-b"}} {
			if _, err := tx.OIDCConsent(k[0], k[1], k[2]); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("OIDCConsent(%q)=%v, want ErrNotFound", k, err)
			}
		}
		list, err := tx.OIDCUserConsents("p", "u")
		if err != nil {
			return err
		}
		if got, want := consentClients(list), "p/u/c-a p/u/c-b"; got != want {
			return fmt.Errorf("OIDCUserConsents(p, u)=%s, want %s", got, want)
		}
		if err := diff("listed consent", list[1], full); err != nil {
			return err
		}
		if none, err := tx.OIDCUserConsents("p", "nobody"); err != nil || none == nil || len(none) != 0 {
			return fmt.Errorf("OIDCUserConsents(nobody)=%v %v, want empty, non-nil", none, err)
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.OIDCConsent("p", "u", "c-b")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"OIDCConsent":              wantNotFound(tx.OIDCConsent(bad, "u", "c-b")),
			"OIDCConsent/user":         wantNotFound(tx.OIDCConsent("p", bad, "c-b")),
			"OIDCConsent/client":       wantNotFound(tx.OIDCConsent("p", "u", bad)),
			"OIDCUserConsents":         wantNone(tx.OIDCUserConsents(bad, "u")),
			"OIDCUserConsents/user":    wantNone(tx.OIDCUserConsents("p", bad)),
			"DeleteOIDCConsent":        tx.DeleteOIDCConsent(bad, "u", "c-b"),
			"DeleteOIDCConsent/user":   tx.DeleteOIDCConsent("p", bad, "c-b"),
			"DeleteOIDCConsent/client": tx.DeleteOIDCConsent("p", "u", bad),
			"OIDCUserGrants":           wantNone(tx.OIDCUserGrants(bad, "u")),
			"OIDCUserGrants/user":      wantNone(tx.OIDCUserGrants("p", bad)),
		}
	})
	update(t, db, func(tx store.Tx) error {
		if err := tx.DeleteOIDCConsent("p", "u", "c-a"); err != nil {
			return err
		}
		if err := tx.DeleteOIDCConsent("p", "u", "c-a"); err != nil {
			return fmt.Errorf("deleting a deleted consent: %w", err)
		}
		if _, err := tx.OIDCConsent("p", "u", "c-a"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleted consent: %v", err)
		}
		list, err := tx.OIDCUserConsents("p", "u")
		if got := consentClients(list); err != nil || got != "p/u/c-b" {
			return fmt.Errorf("after a delete: %s %v, want p/u/c-b", got, err)
		}
		return nil
	})
	check(t, db)
}

// oidcConsentsGo: a user's consents go with DeleteUser (others' stay), a
// client's with DeleteOIDCClient (other clients' and projects' stay),
// a project's with DeleteProject.
func (s Suite) oidcConsentsGo(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	users := map[string]*store.User{}
	update(t, db, func(tx store.Tx) error {
		for _, p := range []string{"p", "p2"} {
			if err := tx.PutProject(&store.Project{ID: p, Name: p, CreatedAt: at}); err != nil {
				return err
			}
			for _, c := range []string{"c1", "c2"} {
				if err := tx.PutOIDCClient(&store.OIDCClient{ProjectID: p, ID: c, Name: c}); err != nil {
					return err
				}
			}
		}
		for _, u := range []*store.User{{ID: "u1", ProjectID: "p", Email: "a@x.test"}, {ID: "u2", ProjectID: "p", Email: "b@x.test"},
			{ID: "u3", ProjectID: "p2", Email: "a@x.test"}} {
			users[u.ID] = u
			if err := tx.PutUser(u); err != nil {
				return err
			}
		}
		for _, k := range [][3]string{{"p", "u1", "c1"}, {"p", "u1", "c2"}, {"p", "u2", "c1"}, {"p", "u2", "c2"}, {"p2", "u3", "c1"}} {
			if err := tx.PutOIDCConsent(&store.OIDCConsent{ProjectID: k[0], UserID: k[1], ClientID: k[2], Scopes: []string{"openid"}, GrantedAt: at}); err != nil {
				return err
			}
		}
		return nil
	})
	left := func(want string) {
		t.Helper()
		view(t, db, func(tx store.Tx) error {
			var all []*store.OIDCConsent
			for _, k := range [][2]string{{"p", "u1"}, {"p", "u2"}, {"p2", "u3"}} {
				list, err := tx.OIDCUserConsents(k[0], k[1])
				if err != nil {
					return err
				}
				all = append(all, list...)
			}
			if got := consentClients(all); got != want {
				return fmt.Errorf("consents left: %s, want %s", got, want)
			}
			return nil
		})
		check(t, db)
	}
	update(t, db, func(tx store.Tx) error { return tx.DeleteOIDCClient("p", "c1") })
	left("p/u1/c2 p/u2/c2 p2/u3/c1")
	update(t, db, func(tx store.Tx) error { return tx.DeleteUser(users["u1"]) })
	left("p/u2/c2 p2/u3/c1")
	update(t, db, func(tx store.Tx) error { return second(tx.DeleteProject("p")) })
	left("p2/u3/c1")
	// A consent put again after its client's delete is a row of its own.
	update(t, db, func(tx store.Tx) error {
		return tx.PutOIDCConsent(&store.OIDCConsent{ProjectID: "p2", UserID: "u3", ClientID: "c2"})
	})
	update(t, db, func(tx store.Tx) error { return tx.DeleteOIDCClient("p2", "c2") })
	left("p2/u3/c1")
}

// oidcUserGrants: a user's grants list in id byte order, revoked and
// expired ones too, never another user's or project's; a grant replaced
// (revoked) stays listed once; swept and deleted with the project, it
// is no longer listed.
func (s Suite) oidcUserGrants(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	grant := func(p, id, user, client string, exp time.Duration) *store.OIDCGrant {
		return &store.OIDCGrant{ProjectID: p, ID: id, ClientID: client, UserID: user, SessionID: "s", Scopes: []string{"openid"},
			CreatedAt: at, ExpiresAt: at.Add(exp)}
	}
	update(t, db, func(tx store.Tx) error {
		for _, p := range []string{"p", "p2"} {
			if err := tx.PutProject(&store.Project{ID: p, Name: p, CreatedAt: at}); err != nil {
				return err
			}
		}
		for _, g := range []*store.OIDCGrant{grant("p", "g2", "u", "c1", time.Hour), grant("p", "g1", "u", "c2", time.Minute),
			grant("p", "g3", "uu", "c1", time.Hour), grant("p2", "g4", "u", "c1", time.Hour), grant("p", "g0", "u", "c1", 2*time.Hour)} {
			if err := tx.PutOIDCGrant(g); err != nil {
				return err
			}
		}
		g, err := tx.OIDCGrant("p", "g2")
		if err != nil {
			return err
		}
		g.RevokedAt, g.RevokedFor = at, "consent revoked"
		return tx.PutOIDCGrant(g)
	})
	ids := func(p, u, want string) {
		t.Helper()
		view(t, db, func(tx store.Tx) error {
			list, err := tx.OIDCUserGrants(p, u)
			if err != nil {
				return err
			}
			if list == nil {
				return fmt.Errorf("OIDCUserGrants(%s, %s) is nil", p, u)
			}
			var got []string
			for _, g := range list {
				if g.UserID != u || g.ProjectID != p {
					return fmt.Errorf("OIDCUserGrants(%s, %s) lists %+v", p, u, g)
				}
				got = append(got, g.ID)
				if g.ID == "g2" && g.RevokedFor != "consent revoked" {
					return fmt.Errorf("listed grant g2 is not the replaced one: %+v", g)
				}
			}
			if strings.Join(got, " ") != want {
				return fmt.Errorf("OIDCUserGrants(%s, %s)=%v, want %s", p, u, got, want)
			}
			return nil
		})
	}
	ids("p", "u", "g0 g1 g2")
	ids("p", "uu", "g3")
	ids("p2", "u", "g4")
	ids("p", "nobody", "")
	update(t, db, func(tx store.Tx) error {
		return second(tx.SweepExpired(store.ExpiringOIDCGrants, at.Add(30*time.Minute), 100))
	})
	ids("p", "u", "g0 g2")
	check(t, db)
	update(t, db, func(tx store.Tx) error { return second(tx.DeleteProject("p")) })
	ids("p", "u", "")
	ids("p", "uu", "")
	ids("p2", "u", "g4")
	check(t, db)
}
