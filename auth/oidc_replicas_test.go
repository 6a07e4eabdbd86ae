package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"latchkey/store"
)

// TestReplicasOIDCSessionRevoke: an OpenID grant's tokens are checked
// against its session on every replica: a session revoked on one
// replica makes its access tokens inactive (userinfo, introspection)
// on the other, which had the session in its memory, within a second,
// and its refresh token is refused there. On bbolt one process owns
// the file: skipped.
func TestReplicasOIDCSessionRevoke(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	boot, err := a.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := boot.Project
	name, typ, uri, grants := "App", ClientConfidential, "https://app.example.com/cb", []string{GrantAuthorizationCode, GrantRefreshToken}
	cv, _, err := a.CreateClient(ctx, p.ID, ClientInput{Name: &name, Type: &typ, RedirectURIs: &[]string{uri}, GrantTypes: &grants})
	if err != nil {
		t.Fatal(err)
	}
	u := &store.User{ID: newID(), ProjectID: p.ID, Email: "oidc-replicas@example.com", CreatedAt: time.Now().UTC()}
	var l *Login
	var c *store.OIDCClient
	g := &store.OIDCGrant{ProjectID: p.ID, ID: newID(), ClientID: cv.ID, UserID: u.ID, Scopes: []string{"openid", "offline_access"},
		CreatedAt: a.now().UTC(), ExpiresAt: a.now().UTC().Add(time.Hour)}
	var rt string
	if err := a.db.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutUser(u); err != nil {
			return err
		}
		if l, err = a.startLogin(tx, p, u, "email_otp", Meta{}); err != nil {
			return err
		}
		g.SessionID = l.Session.ID
		if c, err = tx.OIDCClient(p.ID, cv.ID); err != nil {
			return err
		}
		if err := tx.PutOIDCGrant(g); err != nil {
			return err
		}
		rt, err = a.newOIDCRefreshToken(tx, g, c, g.Scopes, a.now().UTC())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if l, err = a.finish(l); err != nil {
		t.Fatal(err)
	}
	at, _, err := a.OIDCStorage(p.ID).mintAccessToken(ctx, g, c, g.Scopes, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	jti := jwtID(t, at)
	sb := b.OIDCStorage(p.ID)
	if err := sb.SetIntrospectionFromToken(ctx, &oidc.IntrospectionResponse{}, jti, u.ID, cv.ID); err != nil {
		t.Fatalf("introspection on the other replica: %v", err)
	}
	if err := a.db.Update(ctx, func(tx store.Tx) error {
		sess, err := tx.Session(l.Session.ID)
		if err != nil {
			return err
		}
		return a.revokeSession(tx, sess)
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for sb.SetUserinfoFromToken(ctx, &oidc.UserInfo{}, jti, u.ID, "") == nil {
		if time.Since(start) > time.Second {
			t.Fatal("the other replica still accepts the access token 1 s after the session's revocation")
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("the session's end seen by the other replica after %v", time.Since(start))
	if err := sb.SetIntrospectionFromToken(ctx, &oidc.IntrospectionResponse{}, jti, u.ID, cv.ID); err == nil {
		t.Error("introspection on the other replica: active after the session's revocation")
	}
	rctx := OIDCRequestContext(ctx)
	if _, err := sb.GetClientByClientID(rctx, cv.ID); err != nil {
		t.Fatal(err)
	}
	var oe *oidc.Error
	if _, err := sb.TokenRequestByRefreshToken(rctx, rt); !errors.As(err, &oe) || oe.ErrorType != oidc.InvalidGrant {
		t.Errorf("refresh on the other replica after the session's revocation: %v", err)
	}
}

// jwtID returns the jti of JWT tok (no check).
func jwtID(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		JTI string `json:"jti"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	return claims.JTI
}
