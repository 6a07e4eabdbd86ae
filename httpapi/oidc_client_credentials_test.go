package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// ccConfig is x/oauth2's client_credentials configuration of rp.
func (rp *oidcRP) ccConfig(scopes ...string) *clientcredentials.Config {
	return &clientcredentials.Config{ClientID: rp.id, ClientSecret: rp.secret, TokenURL: rp.provider.Endpoint().TokenURL,
		Scopes: scopes, AuthStyle: oauth2.AuthStyleInHeader}
}

// ccToken posts a client_credentials request for scope ("": none) as
// rp with secret, and returns the raw answer.
func (rp *oidcRP) ccToken(secret, scope string) *response {
	form := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	req, err := http.NewRequest("POST", rp.issuer+"/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		rp.ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(rp.id), url.QueryEscape(secret))
	return rp.ts.send(req)
}

// TestOIDCClientCredentials: a confidential client with the
// client_credentials grant gets an access token about itself with
// x/oauth2's clientcredentials package: an at+jwt (RS256) whose sub and
// client_id are the client, with the scopes asked (all of the client's
// but openid and offline_access when none is asked), no ID token, no
// refresh token. Userinfo refuses it; introspection by its client
// answers active with its scope and no user claims, by another client
// inactive; revoked, expired (the service's clock) or its client
// losing the grant, it is inactive; a deleted client gets nothing. Refusals (RFC 6749 JSON): a
// wrong secret and a public client invalid_client, a client without
// the grant unauthorized_client, a scope the client lacks
// invalid_scope. Discovery lists the grant.
func TestOIDCClientCredentials(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	body := map[string]any{"grantTypes": []string{"client_credentials"},
		"scopes": []string{"openid", "offline_access", "api:read", "api:write"}, "accessTokenLifetimeSeconds": 600}
	rp := ts.newRP(pid, body)
	other := ts.newRP(pid, nil) // authorization_code only

	disc := ts.do("GET", "/oidc/"+pid+"/.well-known/openid-configuration", "", nil)
	if gs, _ := disc.Body["grant_types_supported"].([]any); !slices.Contains(gs, any("client_credentials")) {
		t.Fatalf("discovery grant_types_supported=%v, want client_credentials", gs)
	}

	tok, err := rp.ccConfig("api:read").Token(ctx)
	if err != nil {
		t.Fatalf("client_credentials: %v", err)
	}
	if tok.RefreshToken != "" || tok.Extra("id_token") != nil || tok.TokenType != "Bearer" {
		t.Fatalf("token %+v id_token=%v, want a bearer access token alone", tok, tok.Extra("id_token"))
	}
	if d := time.Until(tok.Expiry); d < 590*time.Second || d > 601*time.Second {
		t.Errorf("expires in %v, want the client's 600 s", d)
	}
	h, at := jwtPart(t, tok.AccessToken, 0), jwtPart(t, tok.AccessToken, 1)
	if h["typ"] != "at+jwt" || h["alg"] != "RS256" {
		t.Errorf("header %v, want typ at+jwt, RS256", h)
	}
	jti, _ := at["jti"].(string)
	if at["sub"] != rp.id || at["client_id"] != rp.id || at["iss"] != rp.issuer || at["scope"] != "api:read" ||
		!strings.HasPrefix(jti, "cc:"+rp.id+".") || at["sid"] != nil || at["auth_time"] != nil || at["amr"] != nil {
		t.Errorf("claims %v", at)
	}
	for _, c := range []struct {
		ask  []string
		want string
	}{{nil, "api:read api:write"}, {[]string{"openid", "api:write", "offline_access"}, "api:write"}} {
		tok, err := rp.ccConfig(c.ask...).Token(ctx)
		if err != nil {
			t.Fatalf("scopes %v: %v", c.ask, err)
		}
		if got := jwtPart(t, tok.AccessToken, 1)["scope"]; got != c.want {
			t.Errorf("scopes %v: scope=%v, want %q", c.ask, got, c.want)
		}
	}

	// Userinfo names a user: refused.
	if r := rp.userinfo(tok.AccessToken); r.Status != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Fatalf("userinfo: %d %v %s, want 401 invalid_token", r.Status, r.Header, r.Raw)
	}
	in := rp.introspect(tok.AccessToken)
	wantActive(t, in, true)
	if in.Body["sub"] != rp.id || in.Body["client_id"] != rp.id || in.Body["scope"] != "api:read" || in.Body["jti"] != jti ||
		in.Body["iss"] != rp.issuer || in.Body["email"] != nil || in.Body["sid"] != nil {
		t.Errorf("introspection %s", in.Raw)
	}
	wantActive(t, other.introspect(tok.AccessToken), false)

	// Revoked by another client: refused, still active; by its own:
	// inactive.
	wantRefused(t, other.revoke(tok.AccessToken, "access_token"), http.StatusBadRequest, "unauthorized_client")
	wantActive(t, rp.introspect(tok.AccessToken), true)
	if r := rp.revoke(tok.AccessToken, ""); r.Status != http.StatusOK {
		t.Fatalf("revocation: %d %s", r.Status, r.Raw)
	}
	wantActive(t, rp.introspect(tok.AccessToken), false)

	// Expiry goes by the service's clock.
	tok2, err := rp.ccConfig().Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantActive(t, rp.introspect(tok2.AccessToken), true)
	ts.Clock.Advance(601 * time.Second)
	wantActive(t, rp.introspect(tok2.AccessToken), false)

	// The client loses the grant, then is deleted: its tokens stop.
	tok3, err := rp.ccConfig().Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantActive(t, rp.introspect(tok3.AccessToken), true)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid+"/clients/"+rp.id, map[string]any{"grantTypes": []string{"authorization_code"}, "redirectUris": []string{rpRedirect}}))
	wantActive(t, rp.introspect(tok3.AccessToken), false)
	wantRefused(t, rp.ccToken(rp.secret, ""), http.StatusBadRequest, "unauthorized_client")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid+"/clients/"+rp.id, map[string]any{"grantTypes": []string{"client_credentials"}}))
	wantActive(t, rp.introspect(tok3.AccessToken), true)

	// Refusals.
	pub := ts.newRP(pid, map[string]any{"type": "public"})
	for _, c := range []struct {
		name   string
		rp     *oidcRP
		secret string
		scope  string
		status int
		code   string
	}{
		{"wrong secret", rp, "lkcs_wrong", "", http.StatusUnauthorized, "invalid_client"},
		{"public client", pub, "", "", http.StatusUnauthorized, "invalid_client"},
		{"no grant", other, other.secret, "", http.StatusBadRequest, "unauthorized_client"},
		{"scope not the client's", rp, rp.secret, "api:read admin", http.StatusBadRequest, "invalid_scope"},
	} {
		r := c.rp.ccToken(c.secret, c.scope)
		if r.Status != c.status || r.Body["error"] != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.name, r.Status, r.Raw, c.status, c.code)
		}
	}
	if _, err := rp.ccConfig("admin").Token(ctx); err == nil || !strings.Contains(err.Error(), "invalid_scope") {
		t.Errorf("x/oauth2 with a scope the client lacks: %v, want invalid_scope", err)
	}

	// Deleted, the client can neither get tokens nor ask about them.
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+pid+"/clients/"+rp.id, nil))
	wantRefused(t, rp.ccToken(rp.secret, ""), http.StatusUnauthorized, "invalid_client")
	wantRefused(t, rp.introspect(tok3.AccessToken), http.StatusUnauthorized, "invalid_client")
}

// TestOIDCClientClaims: a client's claims map copies the user's
// metadata into its ID tokens, userinfo and introspection, whatever
// the scopes: any JSON value as stored (a large number keeps its
// digits, an object stays one), a key the metadata lacks or holds null
// is left out; another client without the map gets none. Changing the
// metadata changes the next tokens.
func TestOIDCClientClaims(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	claims := map[string]string{"role": "metadata.role", "tenant": "metadata.tenant", "big": "metadata.big",
		"absent": "metadata.nothing", "gone": "metadata.nullish", "team_list": "metadata.team"}
	rp := ts.newRP(pid, map[string]any{"claims": claims})
	plain := ts.newRP(pid, nil)
	const addr = "meta@example.com"
	_, b := plain.signedIn(addr) // makes the user; b stays signed in
	u := ts.userByEmail(addr)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+u.ID, json.RawMessage(
		`{"metadata":{"role":"admin","tenant":{"id":7,"name":"acme"},"big":12345678901234567890,"nullish":null,"team":["a","b"]}}`)))

	tok := rp.sso(b)
	raw, _ := tok.Extra("id_token").(string)
	id := jwtPart(t, raw, 1)
	want := map[string]string{"role": `"admin"`, "tenant": `{"id":7,"name":"acme"}`, "team_list": `["a","b"]`}
	check := func(where string, got map[string]any, rawBody string) {
		t.Helper()
		for k, w := range want {
			b, _ := json.Marshal(got[k])
			if string(b) != w {
				t.Errorf("%s: %s=%s, want %s", where, k, b, w)
			}
		}
		if !strings.Contains(rawBody, `"big":12345678901234567890`) {
			t.Errorf("%s: the large number lost its digits: %s", where, rawBody)
		}
		for _, k := range []string{"absent", "gone"} {
			if _, ok := got[k]; ok {
				t.Errorf("%s: %s present (%v), want left out", where, k, got[k])
			}
		}
	}
	idRaw := jsonPartRaw(t, raw, 1)
	check("ID token", id, idRaw)
	rp.idClaims(raw, tok.AccessToken) // verifies
	info := rp.userinfo(tok.AccessToken)
	if info.Status != http.StatusOK {
		t.Fatalf("userinfo: %d %s", info.Status, info.Raw)
	}
	check("userinfo", info.Body, string(info.Raw))
	in := rp.introspect(tok.AccessToken)
	wantActive(t, in, true)
	check("introspection", in.Body, string(in.Raw))

	ptok := plain.sso(b)
	pinfo := plain.userinfo(ptok.AccessToken)
	if pinfo.Status != http.StatusOK || pinfo.Body["role"] != nil || pinfo.Body["tenant"] != nil {
		t.Fatalf("a client without the map: %d %s", pinfo.Status, pinfo.Raw)
	}

	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+u.ID, json.RawMessage(`{"metadata":{"role":"viewer"}}`)))
	if r := rp.userinfo(tok.AccessToken); r.Body["role"] != "viewer" || r.Body["tenant"] != nil {
		t.Fatalf("after the metadata changed: %s", r.Raw)
	}
}

// sso runs an authorization that browser b's session answers at once
// and exchanges its code with x/oauth2.
func (rp *oidcRP) sso(b *browser) *oauth2.Token {
	t := rp.ts.t
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	tok, err := rp.config.Exchange(ctx, rp.code(b, verifier), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	return tok
}

// jsonPartRaw returns part i of a JWT decoded, as text.
func jsonPartRaw(t *testing.T, tok string, i int) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[i])
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
