package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/auth"
)

// register posts body (a string, sent as is, or a value sent as JSON)
// to project pid's registration endpoint.
func (ts *testServer) register(pid string, body any) *response {
	ts.t.Helper()
	return ts.do("POST", "/oidc/"+pid+"/register", "", body)
}

// clientCount is how many clients project pid has.
func (ts *testServer) clientCount(pid string) int {
	ts.t.Helper()
	r := ts.admin("GET", "/api/v1/admin/projects/"+pid+"/clients", nil)
	wantOK(ts.t, r)
	items, _ := r.Body["clients"].([]any)
	return len(items)
}

// wantRegError fails unless r is RFC 7591's error answer: status,
// JSON {error, error_description} with code, not cacheable.
func wantRegError(t *testing.T, r *response, status int, code string) {
	t.Helper()
	if r.Status != status || r.Body["error"] != code || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status=%d body=%s, want %d error=%s", r.Status, r.Raw, status, code)
	}
	if d, _ := r.Body["error_description"].(string); d == "" || len(r.Body) != 2 {
		t.Fatalf("want {error, error_description}: %s", r.Raw)
	}
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("Cache-Control=%q, want no-store", r.Header.Get("Cache-Control"))
	}
}

// TestOIDCDynamicRegistration: registration (RFC 7591) is closed by
// default: the project says so, discovery names no registration
// endpoint and a registration is 403 access_denied. Opened by PATCH
// (or at creation), discovery names <issuer>/register and a client
// registers: 201 with client_id, client_id_issued_at and its metadata,
// no secret; the admin API lists it public, third-party, registered.
// It then signs a user in with go-oidc and x/oauth2 (PKCE, its
// loopback redirect on another port). Every refusal changes nothing
// and is RFC 7591 JSON; unknown metadata is ignored; a script of
// another origin may register (CORS); an unknown project is 404.
func TestOIDCDynamicRegistration(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	disc := func() map[string]any {
		t.Helper()
		r := ts.do("GET", "/oidc/"+pid+"/.well-known/openid-configuration", "", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("discovery: %d", r.Status)
		}
		return r.Body
	}
	good := map[string]any{"client_name": "Claude Desktop", "redirect_uris": []string{"http://127.0.0.1/callback"},
		"grant_types": []string{"authorization_code", "refresh_token"}, "scope": "openid profile email offline_access",
		"token_endpoint_auth_method": "none", "response_types": []string{"code"}, "logo_uri": "https://example.com/l.png",
		"jwks": map[string]any{"keys": []any{}}}

	// Closed.
	if v := ts.admin("GET", "/api/v1/admin/projects/"+pid, nil); str(t, obj(t, v.Body, "project"), "clientRegistration") != "closed" {
		t.Fatalf("a new project's clientRegistration: %s", v.Raw)
	}
	if d := disc(); d["registration_endpoint"] != nil {
		t.Fatalf("closed: discovery names %v", d["registration_endpoint"])
	}
	wantRegError(t, ts.register(pid, good), http.StatusForbidden, auth.RegClosed)
	wantError(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"clientRegistration": "maybe"}), http.StatusBadRequest, "VALIDATION_ERROR")
	if n := ts.clientCount(pid); n != 0 {
		t.Fatalf("closed registration made %d clients", n)
	}

	// Open.
	up := ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"clientRegistration": "open"})
	wantOK(t, up)
	if v := str(t, obj(t, up.Body, "project"), "clientRegistration"); v != "open" {
		t.Fatalf("clientRegistration=%q after PATCH", v)
	}
	issuer := ts.issuer(pid)
	if d := disc(); d["registration_endpoint"] != issuer+"/register" {
		t.Fatalf("open: registration_endpoint=%v", d["registration_endpoint"])
	}
	r := ts.register(pid, good)
	if r.Status != http.StatusCreated || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("registration: %d %v %s", r.Status, r.Header, r.Raw)
	}
	id := str(t, r.Body, "client_id")
	if r.Body["client_id_issued_at"] != float64(ts.Clock.Now().Unix()) || r.Body["client_name"] != "Claude Desktop" ||
		r.Body["token_endpoint_auth_method"] != "none" || r.Body["scope"] != "openid profile email offline_access" ||
		r.Body["client_secret"] != nil || r.Body["registration_access_token"] != nil || r.Body["logo_uri"] != nil {
		t.Fatalf("registration answer %s", r.Raw)
	}
	if gs, _ := r.Body["grant_types"].([]any); !slices.Equal(gs, []any{"authorization_code", "refresh_token"}) {
		t.Fatalf("grant_types=%v", gs)
	}
	c := obj(t, ts.admin("GET", "/api/v1/admin/projects/"+pid+"/clients/"+id, nil).Body, "client")
	if c["type"] != "public" || c["firstParty"] != false || c["registered"] != true || c["name"] != "Claude Desktop" {
		t.Fatalf("the registered client as the admin sees it: %v", c)
	}

	// The registered client signs a user in (the loopback redirect on
	// any port, RFC 8252).
	provider, err := gooidc.NewProvider(ctx, issuer)
	if err != nil {
		t.Fatal(err)
	}
	rp := &oidcRP{ts: ts, id: id, issuer: issuer, provider: provider, config: oauth2.Config{ClientID: id,
		Endpoint:    oauth2.Endpoint{AuthURL: provider.Endpoint().AuthURL, TokenURL: provider.Endpoint().TokenURL, AuthStyle: oauth2.AuthStyleInParams},
		RedirectURL: rpRedirect, Scopes: []string{gooidc.ScopeOpenID, "email"}}}
	tok, _ := rp.signedIn("agent-user@example.com")
	raw, _ := tok.Extra("id_token").(string)
	if cl := rp.idClaims(raw, tok.AccessToken); cl.Email != "agent-user@example.com" || cl.AZP != id {
		t.Fatalf("ID token %+v", cl)
	}

	// A custom scheme of a reversed domain; no name, no grant types.
	r = ts.register(pid, map[string]any{"redirect_uris": []string{"com.example.agent:/cb"}})
	if r.Status != http.StatusCreated || r.Body["client_name"] != "Unnamed app" || r.Body["scope"] != "openid profile email groups offline_access" {
		t.Fatalf("minimal registration: %d %s", r.Status, r.Raw)
	}
	if gs, _ := r.Body["grant_types"].([]any); !slices.Equal(gs, []any{"authorization_code"}) {
		t.Fatalf("default grant_types=%v", gs)
	}
	// A scope without openid gets it.
	if r = ts.register(pid, map[string]any{"redirect_uris": []string{"https://app.example.com/cb"}, "scope": "mcp:tools"}); r.Body["scope"] != "openid mcp:tools" {
		t.Fatalf("scope without openid: %d %s", r.Status, r.Raw)
	}

	before := ts.clientCount(pid)
	uri := []string{"https://app.example.com/cb"}
	for _, c := range []struct {
		name string
		body any
		code string
	}{
		{"not JSON", "client_name=x", auth.RegInvalidClientMetadata},
		{"not an object", `["x"]`, auth.RegInvalidClientMetadata},
		{"wrong type", `{"redirect_uris":"https://app.example.com/cb"}`, auth.RegInvalidClientMetadata},
		{"too big", `{"client_name":"` + strings.Repeat("x", 17<<10) + `"}`, auth.RegInvalidClientMetadata},
		{"secret auth", map[string]any{"redirect_uris": uri, "token_endpoint_auth_method": "client_secret_basic"}, auth.RegInvalidClientMetadata},
		{"client_credentials", map[string]any{"redirect_uris": uri, "grant_types": []string{"client_credentials"}}, auth.RegInvalidClientMetadata},
		{"unknown grant", map[string]any{"redirect_uris": uri, "grant_types": []string{"implicit"}}, auth.RegInvalidClientMetadata},
		{"refresh alone", map[string]any{"redirect_uris": uri, "grant_types": []string{"refresh_token"}}, auth.RegInvalidClientMetadata},
		{"implicit response", map[string]any{"redirect_uris": uri, "response_types": []string{"token"}}, auth.RegInvalidClientMetadata},
		{"empty name", map[string]any{"redirect_uris": uri, "client_name": " "}, auth.RegInvalidClientMetadata},
		{"bad scope", map[string]any{"redirect_uris": uri, "scope": `openid a\b`}, auth.RegInvalidClientMetadata},
		{"bad post-logout URI", map[string]any{"redirect_uris": uri, "post_logout_redirect_uris": []string{"javascript:alert(1)"}}, auth.RegInvalidClientMetadata},
		{"no redirect URI", map[string]any{"client_name": "x"}, auth.RegInvalidRedirectURI},
		{"http off loopback", map[string]any{"redirect_uris": []string{"http://app.example.com/cb"}}, auth.RegInvalidRedirectURI},
		{"localhost", map[string]any{"redirect_uris": []string{"http://localhost:8080/cb"}}, auth.RegInvalidRedirectURI},
		{"fragment", map[string]any{"redirect_uris": []string{"https://app.example.com/cb#x"}}, auth.RegInvalidRedirectURI},
		{"one-word scheme", map[string]any{"redirect_uris": []string{"myapp:/cb"}}, auth.RegInvalidRedirectURI},
		{"unsafe scheme", map[string]any{"redirect_uris": []string{"javascript:alert(1)"}}, auth.RegInvalidRedirectURI},
		{"relative", map[string]any{"redirect_uris": []string{"/cb"}}, auth.RegInvalidRedirectURI},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r *response
			if s, ok := c.body.(string); ok && c.name == "not JSON" {
				req, _ := http.NewRequest("POST", issuer+"/register", strings.NewReader(s))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				r = ts.send(req)
			} else {
				r = ts.register(pid, c.body)
			}
			wantRegError(t, r, http.StatusBadRequest, c.code)
		})
	}
	if n := ts.clientCount(pid); n != before {
		t.Fatalf("refused registrations made clients: %d, want %d", n, before)
	}

	// CORS: a script of another origin may register.
	pre, _ := http.NewRequest("OPTIONS", issuer+"/register", nil)
	pre.Header.Set("Origin", "https://agent.example")
	pre.Header.Set("Access-Control-Request-Method", "POST")
	pre.Header.Set("Access-Control-Request-Headers", "content-type")
	if r := ts.send(pre); r.Status >= 300 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("preflight: %d %v", r.Status, r.Header)
	}

	// An unknown project.
	wantError(t, ts.register("0195f3a0-0000-7000-8000-00000000dead", good), http.StatusNotFound, "PROJECT_NOT_FOUND")

	// Closed again: refused; the registered clients stay.
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"clientRegistration": "closed"}))
	wantRegError(t, ts.register(pid, good), http.StatusForbidden, auth.RegClosed)
	if d := disc(); d["registration_endpoint"] != nil {
		t.Fatalf("closed again: discovery names %v", d["registration_endpoint"])
	}
	if n := ts.clientCount(pid); n != before {
		t.Fatalf("clients %d, want %d", n, before)
	}
}

// TestOIDCRegistrationLimit: a project takes 100 registrations per
// rolling hour, counted from the store: the 101st is 429
// temporarily_unavailable with Retry-After until the oldest leaves the
// hour, and creates nothing; clients the admin creates do not count,
// nor do another project's registrations. An hour later (the clock) it
// registers again. A project created with clientRegistration "open"
// takes registrations at once.
func TestOIDCRegistrationLimit(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	created := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "agents", "clientRegistration": "open"})
	wantOK(t, created)
	pid := str(t, obj(t, created.Body, "project"), "id")
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "others", "clientRegistration": "open"})
	wantOK(t, other)
	body := map[string]any{"redirect_uris": []string{"http://127.0.0.1/cb"}}
	wantOK(t, ts.admin("POST", "/api/v1/admin/projects/"+pid+"/clients", map[string]any{"name": "Admin's", "type": "public", "redirectUris": []string{"http://127.0.0.1/cb"}}))
	if r := ts.register(str(t, obj(t, other.Body, "project"), "id"), body); r.Status != http.StatusCreated {
		t.Fatalf("another project: %d %s", r.Status, r.Raw)
	}
	for i := range auth.MaxRegistrationsPerHour {
		if i == 1 {
			ts.Clock.Advance(10 * time.Minute) // the first is the oldest by 10 minutes
		}
		if r := ts.register(pid, body); r.Status != http.StatusCreated {
			t.Fatalf("registration %d: %d %s", i+1, r.Status, r.Raw)
		}
	}
	r := ts.register(pid, body)
	wantRegError(t, r, http.StatusTooManyRequests, auth.RegTooMany)
	if got := r.Header.Get("Retry-After"); got != "3000" {
		t.Fatalf("Retry-After=%q, want 3000 (the first registration leaves the hour in 50 minutes)", got)
	}
	if n := ts.clientCount(pid); n != auth.MaxRegistrationsPerHour+1 {
		t.Fatalf("clients %d, want %d", n, auth.MaxRegistrationsPerHour+1)
	}
	ts.Clock.Advance(50 * time.Minute)
	if r := ts.register(pid, body); r.Status != http.StatusCreated {
		t.Fatalf("once the first left the hour: %d %s", r.Status, r.Raw)
	}
	wantRegError(t, ts.register(pid, body), http.StatusTooManyRequests, auth.RegTooMany)
}
