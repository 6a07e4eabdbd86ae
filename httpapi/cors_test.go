package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

const (
	appOrigin   = "http://localhost:3000" // the default project's origin
	otherOrigin = "https://other.example" // another project's origin
	evilOrigin  = "https://evil.example"  // no project's
)

// cors sends a request with an Origin header (and, for a preflight,
// Access-Control-Request-Method/Headers).
func (ts *testServer) cors(method, path, origin, token, requestMethod string) *response {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if requestMethod != "" {
		req.Header.Set("Access-Control-Request-Method", requestMethod)
		req.Header.Set("Access-Control-Request-Headers", "authorization,content-type")
	}
	return ts.send(req)
}

// wantVaryOrigin fails unless the answer varies by Origin.
func wantVaryOrigin(t *testing.T, r *response) {
	t.Helper()
	var vary []string
	for _, v := range strings.Split(strings.Join(r.Header.Values("Vary"), ","), ",") {
		vary = append(vary, strings.TrimSpace(v))
	}
	if !slices.Contains(vary, "Origin") {
		t.Fatalf("Vary=%q, want Origin in it", r.Header.Values("Vary"))
	}
}

// wantNoCORS fails if the answer carries any CORS header.
func wantNoCORS(t *testing.T, r *response) {
	t.Helper()
	for k := range r.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Fatalf("%s: %q, want no CORS headers", k, r.Header.Get(k))
		}
	}
}

func newCORSServer(t *testing.T) *testServer {
	ts := newTestServer(t)
	wantOK(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other", "allowedOrigins": []string{otherOrigin}}))
	return ts
}

// TestCORSPreflight: OPTIONS from an origin some project allows, on the
// user-JWT and passkey endpoints, is 204 with the CORS headers for the
// path's methods; from an origin no project allows, 403
// ORIGIN_NOT_ALLOWED without them; API-key and admin endpoints keep
// answering OPTIONS 405 with no CORS header.
func TestCORSPreflight(t *testing.T) {
	t.Parallel()
	ts := newCORSServer(t)
	for _, c := range []struct {
		path, method, methods string
	}{
		{"/api/v1/me", "GET", "GET"},
		{"/api/v1/user", "PATCH", "GET, PATCH, DELETE"},
		{"/api/v1/user/email/send", "POST", "POST"},
		{"/api/v1/user/email/verify", "POST", "POST"},
		{"/api/v1/session", "GET", "GET"},
		{"/api/v1/sessions", "GET", "GET"},
		{"/api/v1/sessions/abc", "DELETE", "DELETE"},
		{"/api/v1/logout", "POST", "POST"},
		{"/api/v1/passkeys", "GET", "GET"},
		{"/api/v1/passkeys/AbCd", "DELETE", "DELETE"},
		{"/api/v1/passkey/register/start", "POST", "POST"},
		{"/api/v1/passkey/register/verify", "POST", "POST"},
		{"/api/v1/passkey/login/start", "POST", "POST"},
		{"/api/v1/passkey/login/verify", "POST", "POST"},
		{"/api/v1/totp/enroll", "POST", "POST"},
		{"/api/v1/totp/verify", "POST", "POST"},
		{"/api/v1/sms/send", "POST", "POST"},
		{"/api/v1/sms/verify", "POST", "POST"},
		{"/api/v1/backup-codes/generate", "POST", "POST"},
	} {
		for _, origin := range []string{appOrigin, otherOrigin} {
			t.Run(c.path+" from "+origin, func(t *testing.T) {
				r := ts.cors("OPTIONS", c.path, origin, "", c.method)
				if r.Status != http.StatusNoContent || len(r.Raw) != 0 {
					t.Fatalf("status=%d body=%q, want 204 without a body", r.Status, r.Raw)
				}
				h := r.Header
				if got := h.Get("Access-Control-Allow-Origin"); got != origin {
					t.Fatalf("Access-Control-Allow-Origin=%q, want %q", got, origin)
				}
				wantVaryOrigin(t, r)
				if got := h.Get("Access-Control-Allow-Methods"); got != c.methods {
					t.Fatalf("Access-Control-Allow-Methods=%q, want %q", got, c.methods)
				}
				if got := h.Get("Access-Control-Allow-Headers"); got != "Authorization, Content-Type" {
					t.Fatalf("Access-Control-Allow-Headers=%q", got)
				}
				if got := h.Get("Access-Control-Max-Age"); got != "600" {
					t.Fatalf("Access-Control-Max-Age=%q, want 600", got)
				}
				if got := h.Get("Access-Control-Allow-Credentials"); got != "" {
					t.Fatalf("Access-Control-Allow-Credentials=%q, want none (bearer tokens)", got)
				}
			})
		}
	}

	// An origin no project allows, and the opaque origin "null".
	for _, origin := range []string{evilOrigin, "null", "http://localhost:3001", "https://localhost:3000"} {
		t.Run("refused "+origin, func(t *testing.T) {
			r := ts.cors("OPTIONS", "/api/v1/session", origin, "", "GET")
			wantError(t, r, http.StatusForbidden, "ORIGIN_NOT_ALLOWED")
			if got := r.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Fatalf("Access-Control-Allow-Origin=%q, want none", got)
			}
			wantVaryOrigin(t, r)
		})
	}

	// Server-to-server endpoints: OPTIONS stays 405, with no CORS header.
	for _, path := range []string{"/api/v1/otp/send", "/api/v1/magic/send", "/api/v1/backup-codes/verify",
		"/api/v1/webhooks", "/api/v1/external-auth/confirm", "/api/v1/passkeys/by-external", "/api/v1/passkeys/by-external/AbCd",
		"/api/v1/admin/projects", "/api/v1/admin/users", "/api/v1/health"} {
		t.Run("server route "+path, func(t *testing.T) {
			r := ts.cors("OPTIONS", path, appOrigin, "", "POST")
			wantError(t, r, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
			wantNoCORS(t, r)
			if strings.Contains(r.Header.Get("Allow"), "OPTIONS") {
				t.Fatalf("Allow=%q lists OPTIONS", r.Header.Get("Allow"))
			}
		})
	}
	// No route under a browser path: the usual 404.
	wantError(t, ts.cors("OPTIONS", "/api/v1/totp/nope", appOrigin, "", "POST"), 404, "NOT_FOUND")

	// A plain OPTIONS (no Origin) on a browser path lists the methods.
	r := ts.cors("OPTIONS", "/api/v1/user", "", "", "")
	if r.Status != http.StatusNoContent || r.Header.Get("Allow") != "GET, PATCH, DELETE, OPTIONS" {
		t.Fatalf("plain OPTIONS: status=%d Allow=%q", r.Status, r.Header.Get("Allow"))
	}
	wantNoCORS(t, r)
}

// TestCORSActual: a browser call's answer carries Access-Control-Allow-
// Origin when its Origin is an allowed origin of the token's project
// (of the key's project on the passkey ceremonies), or, when the token
// fails, of any project; never for another project's origin, an
// unknown origin, API-key answers or admin answers.
func TestCORSActual(t *testing.T) {
	t.Parallel()
	ts := newCORSServer(t)
	tok := str(t, ts.login("cors@example.com").Body, "token")
	for _, c := range []struct {
		name, method, path, origin, token string
		status                            int
		allowed                           bool
	}{
		{"session from the project's origin", "GET", "/api/v1/session", appOrigin, tok, 200, true},
		{"me with a JWT", "GET", "/api/v1/me", appOrigin, tok, 200, true},
		{"user", "GET", "/api/v1/user", appOrigin, tok, 200, true},
		{"passkeys", "GET", "/api/v1/passkeys", appOrigin, tok, 200, true},
		{"passkey delete", "DELETE", "/api/v1/passkeys/AbCd", appOrigin, tok, 404, true},
		{"passkey login with the project's key", "POST", "/api/v1/passkey/login/start", appOrigin, ts.Key, 200, true},
		{"passkey sign-up with the project's key", "POST", "/api/v1/passkey/register/start", appOrigin, ts.Key, 400, true},
		{"another project's origin", "GET", "/api/v1/session", otherOrigin, tok, 200, false},
		{"passkey login from another project's origin", "POST", "/api/v1/passkey/login/start", otherOrigin, ts.Key, 200, false},
		{"unknown origin", "GET", "/api/v1/session", evilOrigin, tok, 200, false},
		{"bad token from an allowed origin", "GET", "/api/v1/session", otherOrigin, "not-a-token", 401, true},
		{"bad token from an unknown origin", "GET", "/api/v1/session", evilOrigin, "not-a-token", 401, false},
		{"me with an API key", "GET", "/api/v1/me", appOrigin, ts.Key, 200, false},
		{"API-key endpoint", "GET", "/api/v1/webhooks", appOrigin, ts.Key, 200, false},
		{"admin endpoint", "GET", "/api/v1/admin/projects", appOrigin, testAdminToken, 200, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := ts.cors(c.method, c.path, c.origin, c.token, "")
			if r.Status != c.status {
				t.Fatalf("status=%d, want %d (body %s)", r.Status, c.status, r.Raw)
			}
			got := r.Header.Get("Access-Control-Allow-Origin")
			switch {
			case c.allowed && got != c.origin:
				t.Fatalf("Access-Control-Allow-Origin=%q, want %q", got, c.origin)
			case !c.allowed && got != "":
				t.Fatalf("Access-Control-Allow-Origin=%q, want none", got)
			}
			if c.allowed {
				wantVaryOrigin(t, r)
				if r.Header.Get("Access-Control-Expose-Headers") != "Retry-After" {
					t.Fatalf("Access-Control-Expose-Headers=%q, want Retry-After", r.Header.Get("Access-Control-Expose-Headers"))
				}
			}
			if r.Header.Get("Access-Control-Allow-Credentials") != "" {
				t.Fatal("Access-Control-Allow-Credentials sent")
			}
			if strings.Contains(c.path, "/admin/") || c.path == "/api/v1/webhooks" || (c.path == "/api/v1/me" && c.token == ts.Key) {
				wantNoCORS(t, r)
			}
		})
	}
	// Without an Origin header nothing changes.
	r := ts.cors("GET", "/api/v1/session", "", tok, "")
	wantOK(t, r)
	wantNoCORS(t, r)
}

// TestCORSFollowsProjectChanges: an origin added to a project is
// allowed by the next preflight and request; one removed, refused.
func TestCORSFollowsProjectChanges(t *testing.T) {
	t.Parallel()
	ts := newCORSServer(t)
	tok := str(t, ts.login("change@example.com").Body, "token")
	const newOrigin = "https://app.example"
	wantError(t, ts.cors("OPTIONS", "/api/v1/session", newOrigin, "", "GET"), 403, "ORIGIN_NOT_ALLOWED")

	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{appOrigin, newOrigin}}))
	if r := ts.cors("OPTIONS", "/api/v1/session", newOrigin, "", "GET"); r.Status != 204 || r.Header.Get("Access-Control-Allow-Origin") != newOrigin {
		t.Fatalf("preflight after adding the origin: %d %q", r.Status, r.Header.Get("Access-Control-Allow-Origin"))
	}
	if r := ts.cors("GET", "/api/v1/session", newOrigin, tok, ""); r.Header.Get("Access-Control-Allow-Origin") != newOrigin {
		t.Fatalf("request after adding the origin: Access-Control-Allow-Origin=%q", r.Header.Get("Access-Control-Allow-Origin"))
	}

	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{}}))
	wantError(t, ts.cors("OPTIONS", "/api/v1/session", newOrigin, "", "GET"), 403, "ORIGIN_NOT_ALLOWED")
	wantError(t, ts.cors("OPTIONS", "/api/v1/session", appOrigin, "", "GET"), 403, "ORIGIN_NOT_ALLOWED")
	if r := ts.cors("GET", "/api/v1/session", appOrigin, tok, ""); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("request after removing the origin: Access-Control-Allow-Origin=%q", r.Header.Get("Access-Control-Allow-Origin"))
	}

	// A new project's origins count at once; a deleted project's stop.
	created := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "new", "allowedOrigins": []string{newOrigin}})
	wantOK(t, created)
	if r := ts.cors("OPTIONS", "/api/v1/user", newOrigin, "", "PATCH"); r.Status != 204 {
		t.Fatalf("preflight for a new project's origin: %d", r.Status)
	}
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+str(t, obj(t, created.Body, "project"), "id"), nil))
	wantError(t, ts.cors("OPTIONS", "/api/v1/user", newOrigin, "", "PATCH"), 403, "ORIGIN_NOT_ALLOWED")
}
