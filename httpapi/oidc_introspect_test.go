package httpapi_test

import (
	"net/http"
	"testing"
	"time"
)

// TestOIDCRefreshIntrospection: a live refresh token introspected by
// its client (RFC 7662) is active with its client_id, sub, scope, exp,
// iat, iss, aud and token_type refresh_token; another client, a wrong
// secret and a public client learn nothing. Rotated (introspection is no
// use of it: the new token stays good), revoked, or idle past its
// lifetime, it is inactive and says nothing more.
func TestOIDCRefreshIntrospection(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	a := ts.newRP(ts.Project.ID, map[string]any{"name": "A", "grantTypes": refreshGrants, "firstParty": true})
	b := ts.newRP(ts.Project.ID, map[string]any{"name": "B", "grantTypes": refreshGrants, "firstParty": true})
	tok, _ := a.signedIn("rt@example.com")
	u := ts.userByEmail("rt@example.com")

	r := a.introspect(tok.RefreshToken)
	wantActive(t, r, true)
	for k, want := range map[string]any{"client_id": a.id, "sub": u.ID, "iss": a.issuer, "token_type": "refresh_token",
		"scope": "openid profile email offline_access"} {
		if r.Body[k] != want {
			t.Errorf("introspection %s = %v, want %v (%s)", k, r.Body[k], want, r.Raw)
		}
	}
	if aud, _ := r.Body["aud"].([]any); len(aud) != 1 || aud[0] != a.id {
		t.Errorf("introspection aud = %v, want [%s]", r.Body["aud"], a.id)
	}
	exp, _ := r.Body["exp"].(float64)
	iat, _ := r.Body["iat"].(float64)
	now := float64(ts.Clock.Now().Unix())
	if iat < now-5 || iat > now+5 || exp <= now || exp > now+float64(31*24*time.Hour/time.Second) {
		t.Errorf("introspection iat=%v exp=%v, now %v", iat, exp, now)
	}
	if _, ok := r.Body["sid"]; ok {
		t.Errorf("a refresh token's introspection names its session: %s", r.Raw)
	}

	wantActive(t, b.introspect(tok.RefreshToken), false)
	secret := a.secret
	a.secret = secret + "x"
	wrong := a.introspect(tok.RefreshToken)
	a.secret = secret
	pub := ts.newRP(ts.Project.ID, map[string]any{"name": "Public", "type": "public", "redirectUris": []string{rpRedirect}})
	for name, resp := range map[string]*response{"wrong secret": wrong, "public client": pub.introspect(tok.RefreshToken)} {
		t.Run(name, func(t *testing.T) { wantOAuthError(t, resp, http.StatusUnauthorized, "invalid_client") })
	}

	// Rotated: the old one inactive, the new one active, and asking
	// about the old one is no reuse.
	r = a.refresh(tok.RefreshToken)
	if r.Status != http.StatusOK {
		t.Fatalf("refresh: %d %s", r.Status, r.Raw)
	}
	next := str(t, r.Body, "refresh_token")
	wantActive(t, a.introspect(tok.RefreshToken), false)
	wantActive(t, a.introspect(next), true)
	r = a.refresh(next)
	if r.Status != http.StatusOK {
		t.Fatalf("refresh after introspecting the rotated token: %d %s", r.Status, r.Raw)
	}
	last := str(t, r.Body, "refresh_token")

	// Idle past the project's idle time (7 days by default): inactive.
	ts.Clock.Advance(7*24*time.Hour + time.Minute)
	wantActive(t, a.introspect(last), false)

	// Revoked: inactive.
	tok2, _ := a.signedIn("rt2@example.com")
	wantActive(t, a.introspect(tok2.RefreshToken), true)
	if r := a.revoke(tok2.RefreshToken, "refresh_token"); r.Status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.Status, r.Raw)
	}
	wantActive(t, a.introspect(tok2.RefreshToken), false)
}
