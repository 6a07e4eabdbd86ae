package auth_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"latchkey/auth"
	"latchkey/store"
)

// TestDeleteClientRevokesGrants: deleting a client revokes, in its
// transaction, every grant made to it (two users' here, "client
// deleted"), so its refresh tokens, its access tokens at userinfo and
// introspection, and its refresh tokens at introspection are refused,
// also once a client with the same id is stored again; its users'
// consents go; another client's grant, consent and tokens and the
// users' sessions stay; the deletion emits no event (as revoking a
// consent emits none); deleting it again is CLIENT_NOT_FOUND.
func TestDeleteClientRevokesGrants(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	st := ts.OIDCStorage(pid)
	c, other := ts.refreshClient("App"), ts.refreshClient("Other")
	at, rt, pr := ts.oidcTokens(st, c, "ada@example.com")
	_, rtBob, _ := ts.oidcTokens(st, c, "bob@example.com")
	ts.clock.Advance(2 * time.Minute) // past the code's send throttle
	atO, rtO, prO := ts.oidcTokens(st, other, "ada@example.com")
	gid := strings.Split(jwtClaims(t, at)["jti"].(string), ".")[0]
	var row *store.OIDCClient
	var events int
	ok(t, ts.db.View(ctx, func(tx store.Tx) (err error) {
		if row, err = tx.OIDCClient(pid, c.ID); err != nil {
			return err
		}
		evs, err := tx.EventsAfter(0, 1<<20)
		events = len(evs)
		return err
	}))

	ok(t, ts.DeleteClient(ctx, pid, c.ID))
	if err := ts.DeleteClient(ctx, pid, c.ID); !errors.Is(err, auth.ErrClientNotFound) {
		t.Fatalf("deleting it again: %v, want CLIENT_NOT_FOUND", err)
	}
	var grants []*store.OIDCGrant
	ok(t, ts.db.View(ctx, func(tx store.Tx) (err error) {
		grants, err = tx.OIDCClientGrants(pid, c.ID)
		if err != nil {
			return err
		}
		evs, err := tx.EventsAfter(0, 1<<20)
		if len(evs) != events {
			t.Errorf("the deletion emitted %d events, want none", len(evs)-events)
		}
		return err
	}))
	if len(grants) != 2 {
		t.Fatalf("the client's grants after its deletion: %d, want 2", len(grants))
	}
	for _, g := range grants {
		if !g.RevokedAt.Equal(ts.clock.Now().UTC()) || g.RevokedFor != "client deleted" {
			t.Errorf("grant %s after its client's deletion: revoked at %v for %q", g.ID, g.RevokedAt, g.RevokedFor)
		}
	}
	if cs, err := ts.UserConsents(ctx, pid, pr.UserID); err != nil || len(cs) != 1 || cs[0].ClientID != other.ID {
		t.Fatalf("ada's consents after the deletion: %+v %v, want the other client's only", cs, err)
	}
	if g := ts.oidcGrant(strings.Split(jwtClaims(t, atO)["jti"].(string), ".")[0]); !g.RevokedAt.IsZero() {
		t.Errorf("the other client's grant was revoked: %+v", g)
	}

	// A client stored again with the deleted one's id (a row put back)
	// takes none of what was issued to the deleted one.
	ok(t, ts.db.Update(ctx, func(tx store.Tx) error { return tx.PutOIDCClient(row) }))
	for name, tok := range map[string]string{"ada's": rt, "bob's": rtBob} {
		_, _, err := refreshOnce(t, st, c.ID, tok)
		wantGrantError(t, err, "refresh of "+name+" token of the deleted client")
		if resp, err := st.IntrospectRefreshToken(ctx, c.ID, tok); err != nil || resp.Active {
			t.Errorf("introspection of %s refresh token of the deleted client: %+v %v", name, resp, err)
		}
	}
	jti := jwtClaims(t, at)["jti"].(string)
	if err := st.SetUserinfoFromToken(ctx, &oidc.UserInfo{}, jti, pr.UserID, ""); err == nil {
		t.Error("userinfo took the deleted client's access token")
	}
	if err := st.SetIntrospectionFromToken(ctx, &oidc.IntrospectionResponse{}, jti, pr.UserID, c.ID); err == nil {
		t.Error("introspection took the deleted client's access token")
	}
	if g := ts.oidcGrant(gid); g.RevokedFor != "client deleted" {
		t.Errorf("grant %+v", g)
	}

	// The other client's tokens and the sessions live on.
	if _, _, err := refreshOnce(t, st, other.ID, rtO); err != nil {
		t.Fatalf("the other client's refresh: %v", err)
	}
	for _, sid := range []string{pr.SessionID, prO.SessionID} {
		if _, err := ts.db.SessionState(ctx, sid); err != nil {
			t.Errorf("session %s after the client's deletion: %v", sid, err)
		}
	}
}
