package httpapi_test

import (
	"context"
	"crypto"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"latchkey/auth"
)

// The projects' OpenID providers: discovery and the JWKS, over real
// HTTP, read by coreos/go-oidc as a relying party reads them.

// issuer is the issuer of project id's provider on ts.
func (ts *testServer) issuer(id string) string { return ts.URL + "/oidc/" + id }

// signed returns a JWT with claims, signed by k (as the provider's
// tokens will be).
func signed(t *testing.T, k *auth.OIDCSigningKey, claims any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(k.Alg), Key: k.Private},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", k.ID))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestOIDCDiscoveryTwoProjects: each project's provider has its own
// issuer, discovery document and keys; go-oidc accepts the document (its
// issuer is the one asked for), finds both keys in the JWKS, and
// verifies a token signed with either key of its project, not one
// signed by the other project's key nor a latchkey session token.
func TestOIDCDiscoveryTwoProjects(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	second := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Second"}).Body, "project"), "id")
	ctx := context.Background()
	kids := map[string]string{}
	sets := map[string]*auth.OIDCKeySet{}
	for _, pid := range []string{ts.Project.ID, second} {
		iss := ts.issuer(pid)
		r := ts.do("GET", "/oidc/"+pid+"/.well-known/openid-configuration", "", nil)
		if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("discovery: %d %s", r.Status, r.Raw)
		}
		d := r.Body
		for k, v := range map[string]string{
			"issuer": iss, "authorization_endpoint": iss + "/authorize", "token_endpoint": iss + "/oauth/token",
			"jwks_uri": iss + "/keys", "userinfo_endpoint": iss + "/userinfo",
			"revocation_endpoint": iss + "/revoke", "introspection_endpoint": iss + "/oauth/introspect",
			"end_session_endpoint":          iss + "/logout",
			"device_authorization_endpoint": iss + "/device_authorization",
		} {
			if d[k] != v {
				t.Errorf("%s = %v, want %s", k, d[k], v)
			}
		}
		// What is not served yet is not advertised.
		for _, k := range []string{"check_session_iframe"} {
			if v, ok := d[k]; ok {
				t.Errorf("%s = %v before it is served", k, v)
			}
		}
		for k, want := range map[string]string{
			"response_types_supported":              "code",
			"response_modes_supported":              "query form_post",
			"grant_types_supported":                 "authorization_code refresh_token urn:ietf:params:oauth:grant-type:device_code client_credentials",
			"code_challenge_methods_supported":      "S256",
			"id_token_signing_alg_values_supported": "RS256 ES256",
			"subject_types_supported":               "public",
			"acr_values_supported":                  "urn:latchkey:loa:1 urn:latchkey:loa:2",
			"scopes_supported":                      "openid profile email groups offline_access",
			"token_endpoint_auth_methods_supported": "none client_secret_basic client_secret_post",
			// Introspection by Basic or in the form, for confidential clients.
			"introspection_endpoint_auth_methods_supported": "client_secret_basic client_secret_post",
			"revocation_endpoint_auth_methods_supported":    "none client_secret_basic client_secret_post",
		} {
			if got := joined(t, d[k]); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		for _, k := range []string{"authorization_response_iss_parameter_supported", "backchannel_logout_supported",
			"backchannel_logout_session_supported"} {
			if d[k] != true {
				t.Errorf("%s = %v, want true", k, d[k])
			}
		}
		for _, k := range []string{"token_endpoint_auth_signing_alg_values_supported", "request_object_signing_alg_values_supported",
			"check_session_iframe", "request_parameter_supported"} {
			if v, ok := d[k]; ok {
				t.Errorf("%s = %v, want it left out", k, v)
			}
		}
		if strings.Contains(string(r.Raw), "jwt-bearer") || strings.Contains(string(r.Raw), "implicit") || strings.Contains(string(r.Raw), `"plain"`) {
			t.Errorf("discovery offers what latchkey does not: %s", r.Raw)
		}

		// go-oidc, as a relying party configured with the issuer alone.
		provider, err := gooidc.NewProvider(ctx, iss)
		if err != nil {
			t.Fatalf("go-oidc discovery of %s: %v", iss, err)
		}
		if provider.Endpoint().AuthURL != iss+"/authorize" || provider.Endpoint().TokenURL != iss+"/oauth/token" {
			t.Errorf("go-oidc endpoints %+v", provider.Endpoint())
		}

		keys := ts.do("GET", "/oidc/"+pid+"/keys", "", nil)
		var jwks jose.JSONWebKeySet
		if keys.Status != http.StatusOK || json.Unmarshal(keys.Raw, &jwks) != nil {
			t.Fatalf("keys: %d %s", keys.Status, keys.Raw)
		}
		set, err := ts.Svc.OIDCKeys(ctx, pid)
		if err != nil {
			t.Fatal(err)
		}
		sets[pid] = set
		if len(jwks.Keys) != 2 {
			t.Fatalf("JWKS holds %d keys, want 2: %s", len(jwks.Keys), keys.Raw)
		}
		for i, alg := range []string{"RS256", "ES256"} {
			k := jwks.Keys[i]
			want := set.Active[alg]
			if k.Algorithm != alg || k.KeyID != want.ID || k.Use != "sig" || !k.IsPublic() || !k.Valid() {
				t.Errorf("JWKS key %d: alg %s kid %s use %s public %v, want %s %s sig", i, k.Algorithm, k.KeyID, k.Use, k.IsPublic(), alg, want.ID)
			}
			if !k.Key.(interface{ Equal(crypto.PublicKey) bool }).Equal(want.Private.Public()) {
				t.Errorf("JWKS %s key is not the project's", alg)
			}
			if other, dup := kids[k.KeyID]; dup {
				t.Errorf("kid %s in two projects (%s)", k.KeyID, other)
			}
			kids[k.KeyID] = pid
		}

		verifier := provider.Verifier(&gooidc.Config{ClientID: "app", SupportedSigningAlgs: []string{"RS256", "ES256"}})
		claims := jwt.Claims{Issuer: iss, Subject: "user-1", Audience: jwt.Audience{"app"},
			IssuedAt: jwt.NewNumericDate(time.Now()), Expiry: jwt.NewNumericDate(time.Now().Add(time.Minute))}
		for _, alg := range []string{"RS256", "ES256"} {
			if _, err := verifier.Verify(ctx, signed(t, set.Active[alg], claims)); err != nil {
				t.Errorf("a token signed with %s's %s key does not verify: %v", pid, alg, err)
			}
		}
		session := str(t, ts.login("rp-"+pid[:8]+"@example.com").Body, "token")
		if _, err := verifier.Verify(ctx, session); err == nil {
			t.Error("a latchkey session token verifies as an ID token")
		}
	}
	// Keys never cross projects: project 1's verifier refuses a token
	// of project 1's issuer signed by project 2's key.
	provider, err := gooidc.NewProvider(ctx, ts.issuer(ts.Project.ID))
	if err != nil {
		t.Fatal(err)
	}
	claims := jwt.Claims{Issuer: ts.issuer(ts.Project.ID), Subject: "u", Audience: jwt.Audience{"app"},
		Expiry: jwt.NewNumericDate(time.Now().Add(time.Minute))}
	if _, err := provider.Verifier(&gooidc.Config{ClientID: "app"}).Verify(ctx, signed(t, sets[second].Active["RS256"], claims)); err == nil {
		t.Fatal("project 1's provider verifies a token signed by project 2's key")
	}
}

// TestOIDCUnknownProject: discovery, the JWKS and their preflights of a
// project that does not exist, or no longer does (its provider was in
// the cache), are 404 PROJECT_NOT_FOUND, readable from any origin, and
// so are the code flow's paths; the paths not built yet are the usual
// 404 NOT_FOUND.
func TestOIDCUnknownProject(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	doomed := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Doomed"}).Body, "project"), "id")
	for _, path := range []string{"/.well-known/openid-configuration", "/keys"} {
		if r := ts.do("GET", "/oidc/"+doomed+path, "", nil); r.Status != http.StatusOK {
			t.Fatalf("%s before the deletion: %d %s", path, r.Status, r.Raw)
		}
	}
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+doomed, nil))
	for _, pid := range []string{"nope", doomed} {
		for _, path := range []string{"/.well-known/openid-configuration", "/keys"} {
			for _, method := range []string{"GET", "OPTIONS"} {
				req, _ := http.NewRequest(method, ts.URL+"/oidc/"+pid+path, nil)
				req.Header.Set("Origin", "https://app.example.com")
				req.Header.Set("Access-Control-Request-Method", "GET")
				r := ts.send(req)
				wantError(t, r, http.StatusNotFound, "PROJECT_NOT_FOUND")
				if len(r.Body) != 3 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
					t.Fatalf("%s %s of %s: body %s, Access-Control-Allow-Origin %q", method, path, pid, r.Raw, r.Header.Get("Access-Control-Allow-Origin"))
				}
			}
		}
	}
	for _, path := range []string{"/healthz", "/ready", "/end_session"} {
		wantError(t, ts.do("GET", "/oidc/"+ts.Project.ID+path, "", nil), http.StatusNotFound, "NOT_FOUND")
	}
	// Revocation, introspection and device authorization take POST only.
	for _, path := range []string{"/revoke", "/oauth/introspect", "/device_authorization"} {
		wantError(t, ts.do("GET", "/oidc/"+ts.Project.ID+path, "", nil), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		wantError(t, ts.do("POST", "/oidc/"+doomed+path, "", nil), http.StatusNotFound, "PROJECT_NOT_FOUND")
	}
	// The flow's paths of a project that does not exist.
	for _, path := range []string{"/authorize", "/userinfo", "/login"} {
		wantError(t, ts.do("GET", "/oidc/"+doomed+path, "", nil), http.StatusNotFound, "PROJECT_NOT_FOUND")
	}
	wantError(t, ts.do("POST", "/oidc/"+ts.Project.ID+"/keys", "", nil), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
}

// TestOIDCCORS: a page of any origin reads discovery and the JWKS, and
// their preflights succeed; no credentials are allowed.
func TestOIDCCORS(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, path := range []string{"/.well-known/openid-configuration", "/keys"} {
		req, _ := http.NewRequest("GET", ts.URL+"/oidc/"+ts.Project.ID+path, nil)
		req.Header.Set("Origin", "https://spa.example.org")
		r := ts.send(req)
		if r.Status != http.StatusOK || r.Header.Get("Access-Control-Allow-Origin") != "*" || r.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatalf("GET %s from a page: %d, Allow-Origin %q, Allow-Credentials %q", path, r.Status,
				r.Header.Get("Access-Control-Allow-Origin"), r.Header.Get("Access-Control-Allow-Credentials"))
		}
		pre, _ := http.NewRequest("OPTIONS", ts.URL+"/oidc/"+ts.Project.ID+path, nil)
		pre.Header.Set("Origin", "https://spa.example.org")
		pre.Header.Set("Access-Control-Request-Method", "GET")
		pre.Header.Set("Access-Control-Request-Headers", "authorization")
		r = ts.send(pre)
		methods := strings.Split(strings.ReplaceAll(r.Header.Get("Access-Control-Allow-Methods"), " ", ""), ",")
		if r.Status/100 != 2 || r.Header.Get("Access-Control-Allow-Origin") != "*" || !slices.Contains(methods, "GET") ||
			!strings.EqualFold(r.Header.Get("Access-Control-Allow-Headers"), "authorization") || r.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Fatalf("preflight of %s: %d %v", path, r.Status, r.Header)
		}
	}
}
