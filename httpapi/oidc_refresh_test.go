package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/store"
)

// Refresh tokens, revocation and introspection of a project's OpenID
// provider over real HTTP, with go-oidc and x/oauth2 as the relying
// party (the helpers of oidc_flow_test.go).

// refreshGrants are the grant types of a client that may refresh.
var refreshGrants = []string{"authorization_code", "refresh_token"}

// post sends form to the provider's endpoint path (under the issuer)
// as the client: its secret by HTTP Basic when it has one, else its
// client_id in the form.
func (rp *oidcRP) post(path string, form url.Values) *response {
	rp.ts.t.Helper()
	return rp.ts.send(rp.request(path, form))
}

// request is the request post sends.
func (rp *oidcRP) request(path string, form url.Values) *http.Request {
	if rp.secret == "" {
		form.Set("client_id", rp.id)
	}
	req, err := http.NewRequest("POST", rp.issuer+path, strings.NewReader(form.Encode()))
	if err != nil {
		rp.ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rp.secret != "" {
		req.SetBasicAuth(url.QueryEscape(rp.id), url.QueryEscape(rp.secret))
	}
	return req
}

// refresh exchanges refresh token rt at the token endpoint (scope, when
// given, asks for fewer scopes).
func (rp *oidcRP) refresh(rt string, scope ...string) *response {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}}
	if len(scope) > 0 {
		form.Set("scope", strings.Join(scope, " "))
	}
	return rp.post("/oauth/token", form)
}

// introspect asks about token (RFC 7662).
func (rp *oidcRP) introspect(token string) *response {
	return rp.post("/oauth/introspect", url.Values{"token": {token}})
}

// revoke revokes token (RFC 7009), with its type hint when given. A
// success is 200 with an empty body (RFC 7009 gives it none).
func (rp *oidcRP) revoke(token, hint string) *response {
	t := rp.ts.t
	t.Helper()
	form := url.Values{"token": {token}}
	if hint != "" {
		form.Set("token_type_hint", hint)
	}
	res, err := http.DefaultClient.Do(rp.request("/revoke", form))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := &response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			t.Fatalf("revocation: %d %s", res.StatusCode, raw)
		}
	} else if res.StatusCode != http.StatusOK {
		t.Fatalf("revocation: %d without a body", res.StatusCode)
	}
	return r
}

// signedIn signs a new browser in for rp as addr and exchanges the
// code with x/oauth2; it returns the tokens and the browser.
func (rp *oidcRP) signedIn(addr string) (*oauth2.Token, *browser) {
	t := rp.ts.t
	t.Helper()
	b := rp.ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	q := rp.answer(b.signIn(rp.authorize(b, verifier, "st", "nonce-1"), addr))
	tok, err := rp.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok, b
}

// wantRefused fails unless r is an RFC 6749 error answer (JSON) with
// status, code and an error_description (a refused refresh token's is
// the storage's, which op drops and latchkey gives back).
func wantRefused(t *testing.T, r *response, status int, code string) {
	t.Helper()
	if r.Status != status || r.Body["error"] != code || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status=%d body=%s, want %d error=%s", r.Status, r.Raw, status, code)
	}
	if d, _ := r.Body["error_description"].(string); d == "" {
		t.Fatalf("no error_description: %s", r.Raw)
	}
}

// wantActive fails unless r is an introspection answer with active
// as given (an inactive answer says nothing else).
func wantActive(t *testing.T, r *response, active bool) {
	t.Helper()
	if r.Status != http.StatusOK || r.Body["active"] != active {
		t.Fatalf("introspection: %d %s, want active=%v", r.Status, r.Raw, active)
	}
	if !active && len(r.Body) != 1 {
		t.Fatalf("an inactive token's introspection tells more: %s", r.Raw)
	}
}

// idClaims verifies the ID token of a token answer and returns its
// claims.
type idClaims struct {
	Sub      string   `json:"sub"`
	SID      string   `json:"sid"`
	AuthTime int64    `json:"auth_time"`
	AMR      []string `json:"amr"`
	ACR      string   `json:"acr"`
	Nonce    string   `json:"nonce"`
	AZP      string   `json:"azp"`
	Email    string   `json:"email"`
	Iat      int64    `json:"iat"`
}

func (rp *oidcRP) idClaims(raw, at string) idClaims {
	t := rp.ts.t
	t.Helper()
	idt, err := rp.provider.Verifier(&gooidc.Config{ClientID: rp.id}).Verify(ctx, raw)
	if err != nil {
		t.Fatalf("ID token: %v", err)
	}
	if err := idt.VerifyAccessToken(at); err != nil {
		t.Fatalf("at_hash: %v", err)
	}
	var c idClaims
	if err := idt.Claims(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOIDCRefresh: a client with the refresh grant asking offline_access
// gets a refresh token ("lkrt_…") with its code; a refresh (x/oauth2's
// token source and the raw endpoint) rotates it and gives an ID token
// of the same user, session, auth_time, amr and acr, without a nonce,
// whose at_hash matches the new access token; the session slides. The
// rotated token shown again is invalid_grant and kills the family: the
// newest refresh token and access token stop working too. A client
// without the refresh grant gets no refresh token (offline_access is
// not granted); a first-party client gets one without asking. A scope
// narrower than the grant's is granted; a wider one is invalid_scope.
// Refresh tokens of another client or project are invalid_grant and
// change nothing; after the session is revoked, invalid_grant.
func TestOIDCRefresh(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"grantTypes": refreshGrants})
	rp.config.Scopes = append(rp.config.Scopes, gooidc.ScopeOfflineAccess)
	const addr = "refresh@example.com"
	tok, _ := rp.signedIn(addr)
	if !strings.HasPrefix(tok.RefreshToken, "lkrt_") || len(tok.RefreshToken) != 48 {
		t.Fatalf("refresh token %q, want lkrt_ and 43 characters", tok.RefreshToken)
	}
	first := rp.idClaims(tok.Extra("id_token").(string), tok.AccessToken)
	if scope, _ := tok.Extra("scope").(string); scope != "openid profile email offline_access" {
		t.Errorf("scope %q", scope)
	}
	sessionExpiry := func() time.Time {
		var s *store.Session
		if err := ts.DB.View(ctx, func(tx store.Tx) (err error) { s, err = tx.Session(first.SID); return err }); err != nil {
			t.Fatalf("session: %v", err)
		}
		return s.ExpiresAt
	}
	before := sessionExpiry()

	// x/oauth2 refreshes an expired token by itself.
	ts.Clock.Advance(24 * time.Hour)
	old := *tok
	old.Expiry = time.Now().Add(-time.Minute)
	fresh, err := rp.config.TokenSource(ctx, &old).Token()
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if fresh.RefreshToken == tok.RefreshToken || fresh.AccessToken == tok.AccessToken || !strings.HasPrefix(fresh.RefreshToken, "lkrt_") {
		t.Fatalf("refresh did not rotate: %+v", fresh)
	}
	again := rp.idClaims(fresh.Extra("id_token").(string), fresh.AccessToken)
	if again.Sub != first.Sub || again.SID != first.SID || again.AuthTime != first.AuthTime || !slices.Equal(again.AMR, first.AMR) ||
		again.ACR != first.ACR || again.Nonce != "" || again.AZP != rp.id || again.Email != addr {
		t.Errorf("refreshed ID token %+v, first %+v", again, first)
	}
	if got := sessionExpiry(); !got.Equal(before.Add(24 * time.Hour)) {
		t.Errorf("session expires %v after the refresh, want %v (slid a day)", got, before.Add(24*time.Hour))
	}
	if r := rp.userinfo(fresh.AccessToken); r.Status != http.StatusOK {
		t.Fatalf("userinfo with the refreshed token: %d %s", r.Status, r.Raw)
	}

	// Another client's, and another project's, refresh token: refused,
	// nothing changes.
	other := ts.newRP(ts.Project.ID, map[string]any{"name": "Other", "grantTypes": refreshGrants})
	wantRefused(t, other.refresh(fresh.RefreshToken), http.StatusBadRequest, "invalid_grant")
	pid := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Elsewhere"}).Body, "project"), "id")
	wantRefused(t, ts.newRP(pid, map[string]any{"grantTypes": refreshGrants}).refresh(fresh.RefreshToken), http.StatusBadRequest, "invalid_grant")
	wantRefused(t, rp.refresh("lkrt_"+strings.Repeat("A", 43)), http.StatusBadRequest, "invalid_grant")

	// Fewer scopes: granted, and the grant keeps to them; more: refused.
	wantRefused(t, rp.refresh(fresh.RefreshToken, "openid", "groups"), http.StatusBadRequest, "invalid_scope")
	r := rp.refresh(fresh.RefreshToken, "openid", "email", "offline_access")
	if r.Status != http.StatusOK || r.Body["scope"] != "openid email offline_access" {
		t.Fatalf("narrower refresh: %d %s", r.Status, r.Raw)
	}
	if jwtPart(t, str(t, r.Body, "access_token"), 1)["scope"] != "openid email offline_access" {
		t.Errorf("narrowed access token: %v", jwtPart(t, str(t, r.Body, "access_token"), 1))
	}
	newest, newestAT := str(t, r.Body, "refresh_token"), str(t, r.Body, "access_token")

	// Reuse: the rotated token again.
	wantRefused(t, rp.refresh(fresh.RefreshToken), http.StatusBadRequest, "invalid_grant")
	wantRefused(t, rp.refresh(newest), http.StatusBadRequest, "invalid_grant")
	if r := rp.userinfo(newestAT); r.Status != http.StatusUnauthorized {
		t.Errorf("userinfo with the newest access token of a family revoked for reuse: %d %s", r.Status, r.Raw)
	}

	// Without the refresh grant, offline_access gives nothing.
	plain := ts.newRP(ts.Project.ID, map[string]any{"name": "Plain"})
	plain.config.Scopes = append(plain.config.Scopes, gooidc.ScopeOfflineAccess)
	if tok, _ := plain.signedIn("plain@example.com"); tok.RefreshToken != "" || tok.Extra("scope") != "openid profile email" {
		t.Errorf("a client without the refresh grant: refresh token %q, scope %v", tok.RefreshToken, tok.Extra("scope"))
	}
	// A first-party client gets one without asking.
	fp := ts.newRP(ts.Project.ID, map[string]any{"name": "First", "grantTypes": refreshGrants, "firstParty": true})
	fpTok, fpBrowser := fp.signedIn("first@example.com")
	if fpTok.RefreshToken == "" {
		t.Fatal("a first-party client with the refresh grant got no refresh token")
	}
	// The session revoked: its refresh tokens die.
	fpClaims := fp.idClaims(fpTok.Extra("id_token").(string), fpTok.AccessToken)
	wantOK(t, ts.do("DELETE", "/api/v1/sessions/"+fpClaims.SID, fpBrowser.ssoToken(ts.Project.ID), nil))
	wantRefused(t, fp.refresh(fpTok.RefreshToken), http.StatusBadRequest, "invalid_grant")
}

// TestOIDCRefreshLifetimes: with the injected clock, a refresh token
// unused for the client's idle time is invalid_grant (one second
// before, it refreshes), and a family ends at the client's refresh
// token lifetime from the code's exchange however often it refreshes;
// the access token of a refresh just before the end lives only to the
// end. A public client refreshes with its client_id and no secret,
// and its tokens rotate and tell reuse as a confidential client's.
func TestOIDCRefreshLifetimes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"grantTypes": refreshGrants, "firstParty": true,
		"refreshTokenLifetimeSeconds": 600, "refreshTokenIdleSeconds": 300})
	tok, _ := rp.signedIn("lifetimes@example.com")

	ts.Clock.Advance(299 * time.Second)
	r := rp.refresh(tok.RefreshToken)
	if r.Status != http.StatusOK {
		t.Fatalf("refresh after 299 s: %d %s", r.Status, r.Raw)
	}
	rt := str(t, r.Body, "refresh_token")
	ts.Clock.Advance(300 * time.Second)
	wantRefused(t, rp.refresh(rt), http.StatusBadRequest, "invalid_grant")

	// The absolute end: refreshing every 290 s does not pass 600 s.
	tok, _ = rp.signedIn("lifetimes2@example.com")
	rt = tok.RefreshToken
	for i := 0; i < 2; i++ {
		ts.Clock.Advance(290 * time.Second)
		r := rp.refresh(rt)
		if r.Status != http.StatusOK {
			t.Fatalf("refresh %d: %d %s", i, r.Status, r.Raw)
		}
		rt = str(t, r.Body, "refresh_token")
		if i == 1 {
			if exp := r.Body["expires_in"].(float64); exp > 20 || exp < 19 {
				t.Errorf("expires_in %v 580 s into a 600 s family, want 20", exp)
			}
		}
	}
	ts.Clock.Advance(20 * time.Second)
	wantRefused(t, rp.refresh(rt), http.StatusBadRequest, "invalid_grant")

	// A public client.
	pub := ts.newRP(ts.Project.ID, map[string]any{"name": "CLI", "type": "public", "grantTypes": refreshGrants,
		"redirectUris": []string{rpRedirect}})
	pub.config.Scopes = append(pub.config.Scopes, gooidc.ScopeOfflineAccess)
	ptok, _ := pub.signedIn("public@example.com")
	if ptok.RefreshToken == "" {
		t.Fatal("a public client with the refresh grant got no refresh token")
	}
	r = pub.refresh(ptok.RefreshToken)
	if r.Status != http.StatusOK || r.Body["refresh_token"] == ptok.RefreshToken {
		t.Fatalf("public refresh: %d %s", r.Status, r.Raw)
	}
	next := str(t, r.Body, "refresh_token")
	// Without a client_id, it is no client at all.
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {next}}
	req, _ := http.NewRequest("POST", pub.issuer+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if r := ts.send(req); r.Status/100 != 4 || r.Body["error"] == nil {
		t.Fatalf("refresh without a client_id: %d %s", r.Status, r.Raw)
	}
	wantRefused(t, pub.refresh(ptok.RefreshToken), http.StatusBadRequest, "invalid_grant")
	wantRefused(t, pub.refresh(next), http.StatusBadRequest, "invalid_grant")
}

// TestOIDCRevocationIntrospection: introspection (RFC 7662) by a
// confidential client with its secret: its own live access token is
// active with its claims; another client's, a revoked one, a refresh
// token, garbage are inactive (nothing more said); a wrong secret, a
// public client or no credentials are 401 invalid_client in JSON.
// Revocation (RFC 7009): another client's token is refused
// (unauthorized_client) and stays; an access token revoked is denied
// (userinfo 401, introspection inactive) while its grant's refresh
// token still refreshes; a refresh token revoked (with either hint)
// ends its family, access tokens too; an unknown token is 200. A
// revoked session makes its access tokens inactive at once.
func TestOIDCRevocationIntrospection(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	a := ts.newRP(ts.Project.ID, map[string]any{"name": "A", "grantTypes": refreshGrants, "firstParty": true})
	b := ts.newRP(ts.Project.ID, map[string]any{"name": "B", "grantTypes": refreshGrants, "firstParty": true})
	tok, browser := a.signedIn("checks@example.com")
	claims := a.idClaims(tok.Extra("id_token").(string), tok.AccessToken)

	r := a.introspect(tok.AccessToken)
	wantActive(t, r, true)
	for k, want := range map[string]any{"client_id": a.id, "sub": claims.Sub, "iss": a.issuer, "token_type": "Bearer",
		"scope": "openid profile email offline_access", "sid": claims.SID, "acr": claims.ACR, "email": "checks@example.com"} {
		if r.Body[k] != want {
			t.Errorf("introspection %s = %v, want %v", k, r.Body[k], want)
		}
	}
	if r.Body["exp"] == nil || r.Body["jti"] != jwtPart(t, tok.AccessToken, 1)["jti"] {
		t.Errorf("introspection exp/jti: %s", r.Raw)
	}
	for name, resp := range map[string]*response{
		"another client's token":         b.introspect(tok.AccessToken),
		"another client's refresh token": b.introspect(tok.RefreshToken),
		"garbage":                        a.introspect("garbage"),
		"an ID token":                    a.introspect(tok.Extra("id_token").(string)),
	} {
		t.Run(name, func(t *testing.T) { wantActive(t, resp, false) })
	}
	secret := a.secret
	a.secret = secret + "x"
	wrong := a.introspect(tok.AccessToken)
	a.secret = secret
	pub := ts.newRP(ts.Project.ID, map[string]any{"name": "Public", "type": "public", "redirectUris": []string{rpRedirect}})
	req, _ := http.NewRequest("POST", a.issuer+"/oauth/introspect", strings.NewReader(url.Values{"token": {tok.AccessToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for name, resp := range map[string]*response{"wrong secret": wrong, "public client": pub.introspect(tok.AccessToken), "no credentials": ts.send(req)} {
		if resp.Status != http.StatusUnauthorized || resp.Body["error"] != "invalid_client" || resp.Body["error_description"] == nil ||
			!strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("introspection, %s: %d %v %s", name, resp.Status, resp.Header, resp.Raw)
		}
	}

	// Revocation of another client's token: refused, nothing changes.
	wantOAuthError(t, b.revoke(tok.AccessToken, ""), http.StatusBadRequest, "unauthorized_client")
	wantOAuthError(t, b.revoke(tok.RefreshToken, ""), http.StatusBadRequest, "unauthorized_client")
	wantActive(t, a.introspect(tok.AccessToken), true)
	// Unknown tokens: 200.
	for _, junk := range []string{"garbage", "lkrt_" + strings.Repeat("z", 43)} {
		if r := a.revoke(junk, ""); r.Status != http.StatusOK {
			t.Errorf("revoking %q: %d %s", junk, r.Status, r.Raw)
		}
	}

	// An access token revoked: denied, its grant lives on.
	if r := a.revoke(tok.AccessToken, "access_token"); r.Status != http.StatusOK {
		t.Fatalf("revoke the access token: %d %s", r.Status, r.Raw)
	}
	wantActive(t, a.introspect(tok.AccessToken), false)
	if r := a.userinfo(tok.AccessToken); r.Status != http.StatusUnauthorized {
		t.Errorf("userinfo with a revoked access token: %d %s", r.Status, r.Raw)
	}
	r = a.refresh(tok.RefreshToken)
	if r.Status != http.StatusOK {
		t.Fatalf("refresh after the access token's revocation: %d %s", r.Status, r.Raw)
	}
	rt, at := str(t, r.Body, "refresh_token"), str(t, r.Body, "access_token")
	wantActive(t, a.introspect(at), true)

	// The refresh token revoked (hinted as an access token): its family
	// ends.
	if r := a.revoke(rt, "access_token"); r.Status != http.StatusOK {
		t.Fatalf("revoke the refresh token: %d %s", r.Status, r.Raw)
	}
	wantRefused(t, a.refresh(rt), http.StatusBadRequest, "invalid_grant")
	wantActive(t, a.introspect(at), false)

	// Another grant of the same session, revoked by its refresh token
	// with the right hint; then the session's revocation.
	verifier := oauth2.GenerateVerifier()
	q := a.answer(a.authorize(browser, verifier, "s2", "n2"))
	tok2, err := a.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	q = a.answer(a.authorize(browser, verifier, "s3", "n3"))
	tok3, err := a.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if r := a.revoke(tok2.RefreshToken, "refresh_token"); r.Status != http.StatusOK {
		t.Fatalf("revoke: %d %s", r.Status, r.Raw)
	}
	wantActive(t, a.introspect(tok2.AccessToken), false)
	wantActive(t, a.introspect(tok3.AccessToken), true)
	wantOK(t, ts.do("DELETE", "/api/v1/sessions/"+claims.SID, browser.ssoToken(ts.Project.ID), nil))
	wantActive(t, a.introspect(tok3.AccessToken), false)
	if r := a.userinfo(tok3.AccessToken); r.Status != http.StatusUnauthorized {
		t.Errorf("userinfo after the session's revocation: %d %s", r.Status, r.Raw)
	}
	wantRefused(t, a.refresh(tok3.RefreshToken), http.StatusBadRequest, "invalid_grant")
}
