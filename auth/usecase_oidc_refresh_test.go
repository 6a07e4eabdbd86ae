package auth_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
	"latchkey/store"
)

// The OpenID providers' refresh tokens, revocation and introspection,
// called as op calls the storage, without HTTP (over HTTP with go-oidc
// and x/oauth2: httpapi's TestOIDCRefresh and
// TestOIDCRevocationIntrospection).

// refreshClient registers a confidential client of the test project
// with the refresh grant.
func (ts *testService) refreshClient(name string) auth.ClientView {
	ts.t.Helper()
	typ, uri, grants := auth.ClientConfidential, "https://app.example.com/cb", []string{auth.GrantAuthorizationCode, auth.GrantRefreshToken}
	c, _, err := ts.CreateClient(ctx, ts.project.ID, auth.ClientInput{Name: &name, Type: &typ, RedirectURIs: &[]string{uri}, GrantTypes: &grants})
	if err != nil {
		ts.t.Fatal(err)
	}
	return c
}

// oidcTokens signs addr in for client c (scopes openid, email,
// offline_access) and exchanges the code as op does with a refresh
// token: it returns the access token, the refresh token and the
// session's principal.
func (ts *testService) oidcTokens(st *auth.OIDCStorage, c auth.ClientView, addr string) (string, string, *auth.Principal) {
	t := ts.t
	t.Helper()
	pid := ts.project.ID
	r, err := st.CreateAuthRequest(ctx, &oidc.AuthRequest{ClientID: c.ID, RedirectURI: "https://app.example.com/cb",
		ResponseType: oidc.ResponseTypeCode, Scopes: []string{"openid", "email", "offline_access"}, CodeChallenge: challenge,
		CodeChallengeMethod: oidc.CodeChallengeMethodS256}, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.GetScopes(), " ") != "openid email offline_access" {
		t.Fatalf("request scopes %v", r.GetScopes())
	}
	ok(t, ts.OIDCSendCode(ctx, pid, r.GetID(), addr, ts.meta))
	l, err := ts.OIDCVerifyCode(ctx, pid, r.GetID(), addr, ts.otpCode(addr), ts.meta)
	if err != nil {
		t.Fatal(err)
	}
	pr := ts.principal(l)
	if step, err := ts.continueAllowing(pid, r.GetID(), pr); err != nil || step != auth.OIDCStepDone {
		t.Fatalf("continue: %v %v", step, err)
	}
	code, err := auth.OIDCMinter{}.Encrypt(r.GetID())
	ok(t, err)
	ok(t, st.SaveAuthCode(ctx, r.GetID(), code))
	ar, err := st.AuthRequestByCode(ctx, code)
	ok(t, err)
	at, rt, _, err := st.CreateAccessAndRefreshTokens(ctx, ar, "")
	if err != nil || rt == "" {
		t.Fatalf("exchange: %q %v", rt, err)
	}
	return at, rt, pr
}

// tokenContext is the context of a token endpoint request by client id
// (op asks for the client first).
func tokenContext(t *testing.T, st *auth.OIDCStorage, id string) context.Context {
	t.Helper()
	rctx := auth.OIDCRequestContext(ctx)
	if _, err := st.GetClientByClientID(rctx, id); err != nil {
		t.Fatal(err)
	}
	return rctx
}

// refreshOnce refreshes rt as client id as op does: the request, then
// the new tokens.
func refreshOnce(t *testing.T, st *auth.OIDCStorage, id, rt string) (string, string, error) {
	t.Helper()
	rctx := tokenContext(t, st, id)
	req, err := st.TokenRequestByRefreshToken(rctx, rt)
	if err != nil {
		return "", "", err
	}
	at, next, _, err := st.CreateAccessAndRefreshTokens(rctx, req, rt)
	return at, next, err
}

// wantGrantError fails unless err is op's invalid_grant.
func wantGrantError(t *testing.T, err error, what string) {
	t.Helper()
	var oe *oidc.Error
	if !errors.As(err, &oe) || oe.ErrorType != oidc.InvalidGrant {
		t.Fatalf("%s: %v, want invalid_grant", what, err)
	}
}

// TestOIDCRefreshRotation: a refresh rotates the token (the old one
// kept, rotated, for the idle time), keeps the grant and slides the
// session; another client's context is refused and changes nothing;
// two refreshes of one token at once (both past TokenRequestByRefreshToken)
// are reuse: the second revokes the family, and the newest tokens die
// with it; once the session is revoked the token is refused.
func TestOIDCRefreshRotation(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	st := ts.OIDCStorage(ts.project.ID)
	c, other := ts.refreshClient("App"), ts.refreshClient("Other")
	at, rt, pr := ts.oidcTokens(st, c, "ada@example.com")
	gid := strings.Split(jwtClaims(t, at)["jti"].(string), ".")[0]
	g := ts.oidcGrant(gid)
	if want := g.CreatedAt.Add(auth.DefaultRefreshLifetime * time.Second); !g.ExpiresAt.Equal(want) {
		t.Errorf("grant expires %v, want %v (30 days)", g.ExpiresAt, want)
	}

	// Another client presents it: refused, nothing changes.
	if _, err := st.TokenRequestByRefreshToken(tokenContext(t, st, other.ID), rt); err == nil {
		t.Fatal("another client's refresh token was taken")
	}
	ts.clock.Advance(time.Hour)
	at2, rt2, err := refreshOnce(t, st, c.ID, rt)
	if err != nil || rt2 == rt || at2 == at {
		t.Fatalf("refresh: %v", err)
	}
	if strings.Split(jwtClaims(t, at2)["jti"].(string), ".")[0] != gid {
		t.Error("the refresh made a new grant")
	}
	var sess *store.Session
	ok(t, ts.db.View(ctx, func(tx store.Tx) (err error) { sess, err = tx.Session(pr.SessionID); return err }))
	if want := ts.clock.Now().Add(auth.DefaultSessionIdle * time.Second); !sess.ExpiresAt.Equal(want.Truncate(time.Second)) ||
		!sess.LastSeenAt.Equal(ts.clock.Now().Truncate(time.Second)) {
		t.Errorf("session after the refresh: expires %v last seen %v, want %v", sess.ExpiresAt, sess.LastSeenAt, want)
	}

	// Two refreshes of rt2 at once.
	rctx1, rctx2 := tokenContext(t, st, c.ID), tokenContext(t, st, c.ID)
	req1, err := st.TokenRequestByRefreshToken(rctx1, rt2)
	ok(t, err)
	req2, err := st.TokenRequestByRefreshToken(rctx2, rt2)
	ok(t, err)
	at3, rt3, _, err := st.CreateAccessAndRefreshTokens(rctx1, req1, rt2)
	ok(t, err)
	_, _, _, err = st.CreateAccessAndRefreshTokens(rctx2, req2, rt2)
	wantGrantError(t, err, "the second of two refreshes at once")
	if g := ts.oidcGrant(gid); g.RevokedAt.IsZero() || g.RevokedFor != "refresh token reused" {
		t.Fatalf("grant after the reuse %+v", g)
	}
	_, _, err = refreshOnce(t, st, c.ID, rt3)
	wantGrantError(t, err, "the newest refresh token of a revoked family")
	if err := st.SetUserinfoFromToken(ctx, &oidc.UserInfo{}, jwtClaims(t, at3)["jti"].(string), pr.UserID, ""); err == nil {
		t.Error("the newest access token of a revoked family still works")
	}

	// A new family; its session revoked.
	_, rt, pr = ts.oidcTokens(st, c, "bob@example.com")
	ok(t, ts.RevokeSession(ctx, pr, pr.SessionID))
	_, _, err = refreshOnce(t, st, c.ID, rt)
	wantGrantError(t, err, "refresh after the session's revocation")
}

// TestOIDCRevokeAndIntrospect: RevokeToken of a refresh token ("rt:"
// from GetRefreshTokenInfo) by another client is unauthorized_client
// and changes nothing, by its own revokes the grant; of an access
// token's jti, denies it until its expiry (a row the sweep deletes
// then) while the grant lives; introspection answers the token's own
// client only, and nothing for a revoked one.
func TestOIDCRevokeAndIntrospect(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	st := ts.OIDCStorage(ts.project.ID)
	c, other := ts.refreshClient("App"), ts.refreshClient("Other")
	at, rt, pr := ts.oidcTokens(st, c, "ada@example.com")
	jti := jwtClaims(t, at)["jti"].(string)

	resp := &oidc.IntrospectionResponse{}
	if err := st.SetIntrospectionFromToken(ctx, resp, jti, pr.UserID, c.ID); err != nil {
		t.Fatal(err)
	}
	if resp.ClientID != c.ID || resp.Subject != pr.UserID || resp.Email != "ada@example.com" || resp.Claims["sid"] != pr.SessionID ||
		resp.JWTID != jti || strings.Join(resp.Scope, " ") != "openid email offline_access" {
		t.Errorf("introspection %+v", resp)
	}
	if err := st.SetIntrospectionFromToken(ctx, &oidc.IntrospectionResponse{}, jti, pr.UserID, other.ID); err == nil {
		t.Error("another client introspected the token")
	}

	user, id, err := st.GetRefreshTokenInfo(ctx, other.ID, rt)
	if err != nil || user != pr.UserID || !strings.HasPrefix(id, "rt:") {
		t.Fatalf("GetRefreshTokenInfo: %q %q %v", user, id, err)
	}
	if _, _, err := st.GetRefreshTokenInfo(ctx, c.ID, "lkrt_"+strings.Repeat("x", 43)); !errors.Is(err, op.ErrInvalidRefreshToken) {
		t.Errorf("GetRefreshTokenInfo of an unknown token: %v", err)
	}
	if oe := st.RevokeToken(ctx, id, user, other.ID); oe == nil || oe.ErrorType != oidc.UnauthorizedClient {
		t.Fatalf("another client's revocation: %v", oe)
	}
	if oe := st.RevokeToken(ctx, jti, pr.UserID, other.ID); oe == nil || oe.ErrorType != oidc.UnauthorizedClient {
		t.Fatalf("another client's revocation of the access token: %v", oe)
	}
	// The access token: denied, the grant lives.
	if oe := st.RevokeToken(ctx, jti, pr.UserID, c.ID); oe != nil {
		t.Fatal(oe)
	}
	if err := st.SetUserinfoFromToken(ctx, &oidc.UserInfo{}, jti, pr.UserID, ""); err == nil {
		t.Error("a revoked access token still works")
	}
	var row *store.OIDCRevokedToken
	ok(t, ts.db.View(ctx, func(tx store.Tx) (err error) { row, err = tx.OIDCRevokedToken(ts.project.ID, jti); return err }))
	// Due when the token expires by the service's clock (the jti's).
	if want := ts.clock.Now().Add(auth.DefaultAccessTokenLifetime * time.Second); row.ClientID != c.ID || !row.ExpiresAt.Equal(want) {
		t.Errorf("revoked row %+v, want due at %v", row, want)
	}
	at2, rt2, err := refreshOnce(t, st, c.ID, rt)
	ok(t, err)
	// The refresh token: the family ends.
	if oe := st.RevokeToken(ctx, rt2, "", c.ID); oe != nil { // as op passes one hinted as an access token
		t.Fatal(oe)
	}
	_, _, err = refreshOnce(t, st, c.ID, rt2)
	wantGrantError(t, err, "refresh after the revocation")
	if err := st.SetIntrospectionFromToken(ctx, &oidc.IntrospectionResponse{}, jwtClaims(t, at2)["jti"].(string), pr.UserID, c.ID); err == nil {
		t.Error("an access token of a revoked family is active")
	}
	// Unknown things: no error.
	for _, tok := range []string{"garbage", "rt:nope", "x.1.y"} {
		if oe := st.RevokeToken(ctx, tok, "", c.ID); oe != nil {
			t.Errorf("RevokeToken(%q): %v", tok, oe)
		}
	}
	// The denial's row goes at the token's expiry.
	ts.clock.Advance(2 * time.Hour)
	ok(t, ts.SweepStore(ctx))
	if err := ts.db.View(ctx, func(tx store.Tx) error { _, err := tx.OIDCRevokedToken(ts.project.ID, jti); return err }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the revoked token's row after its expiry: %v", err)
	}
}
