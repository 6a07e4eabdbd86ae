package httpapi_test

import (
	"bytes"
	"strings"
	"testing"

	"latchkey/internal/testkit"
)

// adminState is everything the admin API shows, as raw JSON, to compare
// before and after a refused call; extra names more admin GET paths.
func (ts *testServer) adminState(extra ...string) []byte {
	ts.t.Helper()
	var b bytes.Buffer
	pid := ts.Project.ID
	for _, path := range append([]string{
		"/api/v1/admin/projects",
		"/api/v1/admin/keys",
		"/api/v1/admin/users?projectId=" + pid,
		"/api/v1/admin/projects/" + pid + "/external-methods",
		"/api/v1/admin/projects/" + pid + "/webhooks",
	}, extra...) {
		r := ts.admin("GET", path, nil)
		wantOK(ts.t, r)
		b.Write(r.Raw)
	}
	return b.Bytes()
}

// TestAdminBodiesStrict: every admin POST and PATCH refuses a body with
// a field it does not take (400 VALIDATION_ERROR naming the field and
// the fields it takes) and changes nothing; the public API keeps
// ignoring unknown fields.
func TestAdminBodiesStrict(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "decodes admin bodies strictly")
	ts := newTestServer(t)
	pid := ts.Project.ID
	uid := str(t, ts.login("strict@example.com").Body, "userId")
	method := ts.admin("POST", "/api/v1/admin/projects/"+pid+"/external-methods", map[string]any{"method": "bank_id", "pattern": "direct"})
	wantOK(t, method)
	mid := str(t, obj(t, method.Body, "registration"), "id")
	key := ts.admin("POST", "/api/v1/admin/keys", map[string]any{"projectId": pid, "mode": "test"})
	wantOK(t, key)
	prefix := str(t, obj(t, key.Body, "apiKey"), "prefix")

	for _, c := range []struct {
		name, method, path string
		body               string
		field, takes       string // the unknown field; what the error lists
	}{
		{"create project", "POST", "/api/v1/admin/projects",
			`{"name":"shop","alowedOrigins":["https://shop.example"]}`, "alowedOrigins", "name, allowedOrigins, companyId"},
		{"update project", "PATCH", "/api/v1/admin/projects/" + pid,
			`{"name":"renamed","rateLimitPerMin":5}`, "rateLimitPerMin", "rateLimitPerMinute"},
		{"create key", "POST", "/api/v1/admin/keys",
			`{"mode":"live","project":"` + pid + `"}`, "project", "projectId, mode, expiresAt"},
		{"create method", "POST", "/api/v1/admin/projects/" + pid + "/external-methods",
			`{"method":"card","patern":"direct"}`, "patern", "method, pattern"},
		{"update method", "PATCH", "/api/v1/admin/external-methods/" + mid,
			`{"status":"inactive","reason":"audit"}`, "reason", "status"},
		{"update user", "PATCH", "/api/v1/admin/users/" + uid,
			`{"companyId":"acme","company":"acme"}`, "company", "companyId"},
		{"revoke key", "POST", "/api/v1/admin/keys/" + prefix + "/revoke",
			`{"revoked":true}`, "revoked", "no fields"},
		{"disable user", "POST", "/api/v1/admin/users/" + uid + "/disable",
			`{"reason":"fraud"}`, "reason", "no fields"},
		{"enable user", "POST", "/api/v1/admin/users/" + uid + "/enable",
			`{"x":1}`, "x", "no fields"},
		{"reset TOTP", "POST", "/api/v1/admin/users/" + uid + "/factors/totp/reset",
			`{"force":true}`, "force", "no fields"},
		{"revoke sessions", "POST", "/api/v1/admin/users/" + uid + "/sessions/revoke",
			`{"sessionId":"x"}`, "sessionId", "no fields"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sessions := "/api/v1/admin/users/" + uid + "/sessions"
			before := ts.adminState(sessions)
			r := ts.admin(c.method, c.path, c.body)
			wantError(t, r, 400, "VALIDATION_ERROR")
			msg := r.Body["error"].(string)
			if !strings.Contains(msg, `"`+c.field+`"`) || !strings.Contains(msg, c.takes) {
				t.Fatalf("error=%q, want it to name %q and list %q", msg, c.field, c.takes)
			}
			if after := ts.adminState(sessions); !bytes.Equal(before, after) {
				t.Fatalf("a refused call changed the data:\nbefore %s\nafter  %s", before, after)
			}
		})
	}

	// The same calls without the stray field go through.
	wantOK(t, ts.admin("POST", "/api/v1/admin/keys/"+prefix+"/revoke", `{}`))
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+uid+"/disable", nil))
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/external-methods/"+mid, `{"status":"inactive"}`))
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+uid+"/sessions/revoke", `{}`))
	// (The body passes; the user has no TOTP to reset.)
	wantError(t, ts.admin("POST", "/api/v1/admin/users/"+uid+"/factors/totp/reset", `{}`), 404, "TOTP_NOT_ENROLLED")

	// The public API ignores unknown fields (docs/api.md, "Request limits").
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, `{"email":"other@example.com","emial":"x"}`))
}
