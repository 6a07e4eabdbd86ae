package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/internal/testkit"
	"latchkey/store"
	"latchkey/store/storetest"
)

// userinfoFixture is a project with a client, a signed-in user, a grant
// and an access token of it, on one service or two replicas.
type userinfoFixture struct {
	s      *Service // where the token is checked
	other  *Service // where changes are made (s unless two replicas)
	p      *store.Project
	u      *store.User
	client ClientView
	sessID string
	grant  string
	at     string
	clock  *atomic.Int64 // unix nanoseconds of the services' clock
}

// newUserinfoFixture makes the fixture; with replicas, on two replicas
// of one PostgreSQL database (the token checked on the second, changes
// made on the first), else on one service.
func newUserinfoFixture(t *testing.T, replicated bool) *userinfoFixture {
	t.Helper()
	f := &userinfoFixture{clock: &atomic.Int64{}}
	f.clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, f.clock.Load()) }
	if replicated {
		rs := replicas(t, 2, now)
		f.other, f.s = rs[0], rs[1]
	} else {
		keys, err := store.NewKeyring(bytes.Repeat([]byte{3}, 32))
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(storetest.Open(t), keys, Config{BaseURL: "https://auth.example.com", Now: now, SigningKey: testkit.SigningKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f.s, f.other = s, s
	}
	boot, err := f.other.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.p = boot.Project
	name, typ, uri := "App", ClientConfidential, "https://app.example.com/cb"
	grants := []string{GrantAuthorizationCode, GrantRefreshToken}
	if f.client, _, err = f.other.CreateClient(ctx, f.p.ID, ClientInput{Name: &name, Type: &typ, RedirectURIs: &[]string{uri}, GrantTypes: &grants}); err != nil {
		t.Fatal(err)
	}
	f.u = &store.User{ID: newID(), ProjectID: f.p.ID, Email: "userinfo@example.com", FirstName: "Ada", CreatedAt: now().UTC()}
	g := &store.OIDCGrant{ProjectID: f.p.ID, ID: newID(), ClientID: f.client.ID, UserID: f.u.ID,
		Scopes: []string{"openid", "email", "profile"}, CreatedAt: now().UTC(), ExpiresAt: now().UTC().Add(time.Hour)}
	var l *Login
	var c *store.OIDCClient
	if err := f.other.db.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutUser(f.u); err != nil {
			return err
		}
		if l, err = f.other.startLogin(tx, f.p, f.u, "email_otp", Meta{}); err != nil {
			return err
		}
		g.SessionID = l.Session.ID
		if c, err = tx.OIDCClient(f.p.ID, f.client.ID); err != nil {
			return err
		}
		return tx.PutOIDCGrant(g)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.other.finish(l); err != nil {
		t.Fatal(err)
	}
	f.sessID, f.grant = l.Session.ID, g.ID
	if f.at, _, err = f.other.OIDCStorage(f.p.ID).mintAccessToken(ctx, g, c, g.Scopes, time.Hour); err != nil {
		t.Fatal(err)
	}
	return f
}

// userinfo calls the userinfo endpoint's check on f.s with token at.
func (f *userinfoFixture) userinfo(at string) ([]byte, error) {
	st := f.s.OIDCStorage(f.p.ID)
	return st.userinfo(ctx, at, func() *op.AccessTokenVerifier {
		return op.NewAccessTokenVerifier(f.s.OIDCIssuer(f.p.ID), &op.OpenIDKeySet{Storage: st})
	})
}

// claims calls userinfo and decodes its answer, failing the test on a
// refusal.
func (f *userinfoFixture) claims(t *testing.T) map[string]any {
	t.Helper()
	body, err := f.userinfo(f.at)
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("userinfo's answer %q: %v", body, err)
	}
	return out
}

// TestUserinfoAnswer: the answer is the user's claims by the grant's
// scopes, as op's userinfo wrote them (one JSON object and a newline);
// a repeat call is the remembered answer (the same bytes, no store
// read) once the store has the session's state in memory; a token of another project, a token that is not one, an
// expired token are refused.
func TestUserinfoAnswer(t *testing.T) {
	t.Parallel()
	f := newUserinfoFixture(t, false)
	f.claims(t) // the session's state read: the store's memory has it from now on
	first, err := f.userinfo(f.at)
	if err != nil {
		t.Fatal(err)
	}
	got := f.claims(t)
	want := map[string]any{"sub": f.u.ID, "email": "userinfo@example.com", "email_verified": true, "name": "Ada",
		"given_name": "Ada", "preferred_username": "userinfo@example.com"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("claim %s = %v, want %v (%v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) || !bytes.HasSuffix(first, []byte("}\n")) {
		t.Errorf("answer %s", first)
	}
	again, err := f.userinfo(f.at)
	if err != nil || &again[0] != &first[0] {
		t.Errorf("a repeat call is not the remembered answer: %v", err)
	}
	// Another project's issuer refuses it, before and after it is
	// remembered.
	oname := "Other"
	other, err := f.s.CreateProject(ctx, ProjectInput{Name: &oname})
	if err != nil {
		t.Fatal(err)
	}
	ost := f.s.OIDCStorage(other.ID)
	if _, err := ost.userinfo(ctx, f.at, func() *op.AccessTokenVerifier {
		return op.NewAccessTokenVerifier(f.s.OIDCIssuer(other.ID), &op.OpenIDKeySet{Storage: ost})
	}); !errors.Is(err, errUserinfoRefused) {
		t.Errorf("another project's userinfo: %v", err)
	}
	for _, bad := range []string{"", "x", f.at + "x", f.at[:len(f.at)-2]} {
		if _, err := f.userinfo(bad); !errors.Is(err, errUserinfoRefused) {
			t.Errorf("userinfo with %.12q…: %v", bad, err)
		}
	}
	f.clock.Add(int64(time.Hour))
	if _, err := f.userinfo(f.at); !errors.Is(err, errUserinfoRefused) {
		t.Errorf("userinfo with an expired token: %v", err)
	}
}

// TestUserinfoInvalidation: each change that ends a token or changes
// its answer shows in the next userinfo call on the replica that made
// it, though the answer was remembered: the session revoked, logout,
// the user deleted, the user disabled, the user's address and
// metadata changed (with a client claims map), the client deleted, the
// token revoked (RFC 7009), the consent revoked, the grant revoked for
// a replayed code.
func TestUserinfoInvalidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		change func(t *testing.T, f *userinfoFixture)
		// check is the answer after the change; nil: refused.
		check func(t *testing.T, got map[string]any)
	}{
		{name: "session revoked", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.s.RevokeSession(ctx, f.principal(), f.sessID); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "logout", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.s.Logout(ctx, f.principal(), ""); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "user deleted", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.s.DeleteUser(ctx, f.principal()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "user disabled", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.s.SetUserDisabled(ctx, f.u.ID, true); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "metadata changed", change: func(t *testing.T, f *userinfoFixture) {
			claims := map[string]string{"role": "metadata.role"}
			if _, err := f.s.UpdateClient(ctx, f.p.ID, f.client.ID, ClientInput{Claims: &claims}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.s.UpdateAdminUser(ctx, f.u.ID, UserAdminPatch{Metadata: json.RawMessage(`{"role":"admin"}`)}); err != nil {
				t.Fatal(err)
			}
		}, check: func(t *testing.T, got map[string]any) {
			if got["role"] != "admin" {
				t.Errorf("after the metadata's change: %v", got)
			}
		}},
		{name: "address changed", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.s.db.Update(ctx, func(tx store.Tx) error {
				u, err := tx.User(f.u.ID)
				if err != nil {
					return err
				}
				u.Email = "changed@example.com"
				return tx.PutUser(u)
			}); err != nil {
				t.Fatal(err)
			}
		}, check: func(t *testing.T, got map[string]any) {
			if got["email"] != "changed@example.com" {
				t.Errorf("after the address's change: %v", got)
			}
		}},
		{name: "client deleted", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.s.DeleteClient(ctx, f.p.ID, f.client.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "token revoked", change: func(t *testing.T, f *userinfoFixture) {
			if oe := f.s.OIDCStorage(f.p.ID).RevokeToken(ctx, jwtID(t, f.at), f.u.ID, f.client.ID); oe != nil {
				t.Fatal(oe)
			}
		}},
		{name: "consent revoked", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.s.db.Update(ctx, func(tx store.Tx) error {
				return tx.PutOIDCConsent(&store.OIDCConsent{ProjectID: f.p.ID, UserID: f.u.ID, ClientID: f.client.ID,
					Scopes: []string{"openid"}, GrantedAt: f.s.now().UTC(), UpdatedAt: f.s.now().UTC()})
			}); err != nil {
				t.Fatal(err)
			}
			if err := f.s.RevokeConsent(ctx, f.p.ID, f.u.ID, f.client.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "grant revoked", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.s.revokeOIDCGrant(ctx, f.p.ID, f.grant, "authorization code replayed"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newUserinfoFixture(t, false)
			f.claims(t)
			f.claims(t) // remembered
			c.change(t, f)
			if c.check == nil {
				if body, err := f.userinfo(f.at); !errors.Is(err, errUserinfoRefused) {
					t.Fatalf("userinfo after the change: %s %v", body, err)
				}
				return
			}
			c.check(t, f.claims(t))
		})
	}
}

// principal is the fixture's session as its token's check gives it.
func (f *userinfoFixture) principal() *Principal {
	return &Principal{SessionID: f.sessID, UserID: f.u.ID, ProjectID: f.p.ID}
}

// TestUserinfoRecheck: a change the replica did not make and its
// session state does not show (the grant revoked by another replica,
// here written to the store behind the service's back) is seen once
// the remembered answer is userinfoRecheck old, by the service's
// clock.
func TestUserinfoRecheck(t *testing.T) {
	t.Parallel()
	f := newUserinfoFixture(t, false)
	f.claims(t)
	f.claims(t) // remembered
	if err := f.s.db.Update(ctx, func(tx store.Tx) error {
		g, err := tx.OIDCGrant(f.p.ID, f.grant)
		if err != nil {
			return err
		}
		g.RevokedAt = f.s.now().UTC()
		return tx.PutOIDCGrant(g)
	}); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(int64(userinfoRecheck / 2))
	// Within the interval the remembered answer stands while the store
	// answers the same session state: always on a data file; on
	// PostgreSQL only while its change feed is trusted, which a busy
	// machine can delay past its bound. Then the state is read again and
	// the revoked grant refused at once, which is stricter, not wrong.
	if _, err := f.userinfo(f.at); err != nil && (storetest.Backend(t) != storetest.Postgres || !errors.Is(err, errUserinfoRefused)) {
		t.Fatalf("within the recheck interval: %v", err)
	}
	f.clock.Add(int64(userinfoRecheck / 2))
	if _, err := f.userinfo(f.at); !errors.Is(err, errUserinfoRefused) {
		t.Fatalf("once the answer is %v old: %v", userinfoRecheck, err)
	}
}

// TestReplicasUserinfo: on PostgreSQL, a token remembered by one
// replica stops there within a second of its session's revocation, its
// own revocation (RFC 7009) or its client's deletion on another
// replica (also when a client with the same id is stored again: the
// deletion revoked the grant), and a change of its user shows there as
// soon.
func TestReplicasUserinfo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		change  func(t *testing.T, f *userinfoFixture)
		changed func(body []byte, err error) bool
	}{
		{name: "session revoked", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.other.RevokeSession(ctx, f.principal(), f.sessID); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "token revoked", change: func(t *testing.T, f *userinfoFixture) {
			if oe := f.other.OIDCStorage(f.p.ID).RevokeToken(ctx, jwtID(t, f.at), f.u.ID, f.client.ID); oe != nil {
				t.Fatal(oe)
			}
		}},
		{name: "client deleted", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.other.DeleteClient(ctx, f.p.ID, f.client.ID); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "client deleted and stored again", change: func(t *testing.T, f *userinfoFixture) {
			// A row with the deleted client's id (put back): its grant
			// stays revoked.
			var row *store.OIDCClient
			if err := f.other.db.View(ctx, func(tx store.Tx) (err error) { row, err = tx.OIDCClient(f.p.ID, f.client.ID); return err }); err != nil {
				t.Fatal(err)
			}
			if err := f.other.DeleteClient(ctx, f.p.ID, f.client.ID); err != nil {
				t.Fatal(err)
			}
			if err := f.other.db.Update(ctx, func(tx store.Tx) error { return tx.PutOIDCClient(row) }); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "user changed", change: func(t *testing.T, f *userinfoFixture) {
			if err := f.other.db.Update(ctx, func(tx store.Tx) error {
				u, err := tx.User(f.u.ID)
				if err != nil {
					return err
				}
				u.FirstName = "Grace"
				return tx.PutUser(u)
			}); err != nil {
				t.Fatal(err)
			}
		}, changed: func(body []byte, err error) bool { return err == nil && bytes.Contains(body, []byte(`"Grace"`)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newUserinfoFixture(t, true)
			f.clock.Store(time.Now().UnixNano())
			f.claims(t)
			f.claims(t) // remembered
			c.change(t, f)
			changed := c.changed
			if changed == nil {
				changed = func(_ []byte, err error) bool { return errors.Is(err, errUserinfoRefused) }
			}
			start := time.Now()
			for {
				body, err := f.userinfo(f.at)
				if changed(body, err) {
					break
				}
				if time.Since(start) > time.Second {
					t.Fatalf("the other replica still answers %s %v a second after the change", body, err)
				}
				// The services' clock moves with the wall clock here.
				time.Sleep(5 * time.Millisecond)
				f.clock.Store(time.Now().UnixNano())
			}
			t.Logf("seen by the other replica after %v", time.Since(start))
		})
	}
}
