package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// method registers an external method and returns its id and secret.
func (ts *testServer) method(name, pattern string) (string, string) {
	ts.t.Helper()
	r := ts.admin("POST", "/api/v1/admin/projects/"+ts.Project.ID+"/external-methods", map[string]any{"method": name, "pattern": pattern})
	wantOK(ts.t, r)
	reg := obj(ts.t, r.Body, "registration")
	return str(ts.t, reg, "id"), str(ts.t, reg, "secret")
}

func (ts *testServer) confirm(body []byte, sig string) *response {
	ts.t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/confirm", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+ts.Key)
	req.Header.Set("Content-Type", "application/json")
	if sig != "" {
		req.Header.Set("X-Service-Signature", sig)
	}
	return ts.send(req)
}

func (ts *testServer) confirmBody(fields map[string]any) []byte {
	if _, ok := fields["verifiedAt"]; !ok {
		fields["verifiedAt"] = ts.Clock.Now().UTC().Format(time.RFC3339)
	}
	b, _ := json.Marshal(fields)
	return b
}

func TestExternalConfirm(t *testing.T) {
	ts := newTestServer(t)
	_, secret := ts.method("bank_id", "direct")
	body := ts.confirmBody(map[string]any{"externalUserId": "ext-1", "method": "bank_id", "email": "Ext@Example.com"})
	r := ts.confirm(body, sign(secret, body))
	wantOK(t, r)
	if r.Body["isNewUser"] != true || r.Body["externalUserId"] != "ext-1" {
		t.Fatalf("body=%s", r.Raw)
	}
	wantOK(t, ts.do("GET", "/api/v1/session", str(t, r.Body, "token"), nil))
	uid := r.Body["userId"]

	// Replay of the same signed body.
	wantError(t, ts.confirm(body, sign(secret, body)), 401, "REPLAYED")

	// Known user: email optional.
	ts.Clock.Advance(time.Second)
	body = ts.confirmBody(map[string]any{"externalUserId": "ext-1", "method": "bank_id"})
	r = ts.confirm(body, sign(secret, body))
	wantOK(t, r)
	if r.Body["isNewUser"] != false || r.Body["userId"] != uid {
		t.Fatalf("body=%s", r.Raw)
	}
	if ts.outbox()[0] != "user.registered" {
		t.Fatal("no user.registered")
	}
}

func TestExternalConfirmAttachByEmail(t *testing.T) {
	ts := newTestServer(t)
	_, secret := ts.method("bank_id", "direct")
	uid := str(t, ts.login("a@example.com").Body, "userId")
	body := ts.confirmBody(map[string]any{"externalUserId": "ext-a", "method": "bank_id", "email": "a@example.com"})
	r := ts.confirm(body, sign(secret, body))
	wantOK(t, r)
	if r.Body["isNewUser"] != false || r.Body["userId"] != uid {
		t.Fatalf("attach: %s", r.Raw)
	}
	body = ts.confirmBody(map[string]any{"externalUserId": "ext-b", "method": "bank_id", "email": "a@example.com"})
	wantError(t, ts.confirm(body, sign(secret, body)), 409, "EXTERNAL_ID_CONFLICT")
}

func TestExternalConfirmErrors(t *testing.T) {
	ts := newTestServer(t)
	id, secret := ts.method("bank_id", "direct")
	_, hookSecret := ts.method("hook", "webhook")
	inactiveID, inactiveSecret := ts.method("old", "direct")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/external-methods/"+inactiveID, map[string]any{"status": "inactive"}))
	_ = id
	now := ts.Clock.Now().UTC()
	good := func(extra map[string]any) []byte {
		f := map[string]any{"externalUserId": "e1", "method": "bank_id", "email": "e1@example.com"}
		for k, v := range extra {
			f[k] = v
		}
		return ts.confirmBody(f)
	}
	cases := []struct {
		name   string
		body   []byte
		secret string
		status int
		code   string
	}{
		{"not json", []byte("nope"), secret, 400, "INVALID_PAYLOAD"},
		{"array", []byte("[]"), secret, 400, "INVALID_PAYLOAD"},
		{"missing externalUserId", ts.confirmBody(map[string]any{"method": "bank_id"}), secret, 400, "INVALID_PAYLOAD"},
		{"number externalUserId", ts.confirmBody(map[string]any{"externalUserId": 5, "method": "bank_id"}), secret, 400, "INVALID_PAYLOAD"},
		{"bad verifiedAt", good(map[string]any{"verifiedAt": "yesterday"}), secret, 400, "INVALID_PAYLOAD"},
		{"unknown method", good(map[string]any{"method": "nope"}), secret, 400, "INVALID_PAYLOAD"},
		{"inactive", good(map[string]any{"method": "old"}), inactiveSecret, 403, "INACTIVE_REGISTRATION"},
		{"wrong pattern", good(map[string]any{"method": "hook"}), hookSecret, 400, "WRONG_PATTERN"},
		{"wrong secret", good(nil), hookSecret, 401, "INVALID_SIGNATURE"},
		{"stale +61s", good(map[string]any{"verifiedAt": now.Add(-61 * time.Second).Format(time.RFC3339)}), secret, 401, "STALE_TIMESTAMP"},
		{"future +61s", good(map[string]any{"verifiedAt": now.Add(61 * time.Second).Format(time.RFC3339)}), secret, 401, "STALE_TIMESTAMP"},
		{"new user without email", ts.confirmBody(map[string]any{"externalUserId": "e2", "method": "bank_id"}), secret, 400, "INVALID_PAYLOAD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, ts.confirm(c.body, sign(c.secret, c.body)), c.status, c.code)
		})
	}
	// INVALID_SIGNATURE carries the code as its error text too.
	r := ts.confirm(good(nil), "deadbeef")
	wantError(t, r, 401, "INVALID_SIGNATURE")
	if r.Body["error"] != "INVALID_SIGNATURE" {
		t.Fatalf("error=%v", r.Body["error"])
	}
	wantError(t, ts.confirm(good(nil), ""), 401, "INVALID_SIGNATURE")
	// A body re-serialised after signing fails; so does changed whitespace.
	body := good(nil)
	sig := sign(secret, body)
	var m map[string]any
	json.Unmarshal(body, &m)
	reser, _ := json.MarshalIndent(m, "", " ")
	wantError(t, ts.confirm(reser, sig), 401, "INVALID_SIGNATURE")
	wantError(t, ts.confirm(append(body, ' '), sig), 401, "INVALID_SIGNATURE")
	// Freshness edges: 59 s either way pass.
	for _, d := range []time.Duration{-59 * time.Second, 59 * time.Second} {
		b := good(map[string]any{"verifiedAt": now.Add(d).Format(time.RFC3339)})
		wantOK(t, ts.confirm(b, sign(secret, b)))
	}
	// Another project's method name is unknown here.
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	oid := str(t, obj(t, other.Body, "project"), "id")
	or := ts.admin("POST", "/api/v1/admin/projects/"+oid+"/external-methods", map[string]any{"method": "theirs", "pattern": "direct"})
	osecret := str(t, obj(t, or.Body, "registration"), "secret")
	b := good(map[string]any{"method": "theirs"})
	wantError(t, ts.confirm(b, sign(osecret, b)), 400, "INVALID_PAYLOAD")
}

func TestExternalPatternB(t *testing.T) {
	ts := newTestServer(t)
	id, secret := ts.method("kyc", "webhook")
	callback := func(fields map[string]any) *response {
		body := ts.confirmBody(fields)
		req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/callback/"+id, strings.NewReader(string(body)))
		req.Header.Set("X-Service-Signature", sign(secret, body))
		return ts.send(req)
	}
	wantOK(t, callback(map[string]any{"externalUserId": "k1", "email": "k1@example.com", "reference": "ref-1"}))
	wantError(t, callback(map[string]any{"externalUserId": "k1", "email": "k1@example.com"}), 400, "INVALID_PAYLOAD")
	redeem := func(ref string) *response {
		return ts.do("POST", "/api/v1/external-auth/redeem", ts.Key, map[string]any{"method": "kyc", "reference": ref})
	}
	r := redeem("ref-1")
	wantOK(t, r)
	if r.Body["externalUserId"] != "k1" || r.Body["isNewUser"] != true {
		t.Fatalf("body=%s", r.Raw)
	}
	wantError(t, redeem("ref-1"), 401, "INVALID_TOKEN")
	wantError(t, redeem("ref-unknown"), 401, "INVALID_TOKEN")
	ts.Clock.Advance(time.Second)
	wantOK(t, callback(map[string]any{"externalUserId": "k1", "reference": "ref-2"}))
	ts.Clock.Advance(5*time.Minute + time.Second)
	wantError(t, redeem("ref-2"), 401, "INVALID_TOKEN")
	// The direct confirm refuses a webhook-pattern method.
	body := ts.confirmBody(map[string]any{"externalUserId": "k1", "method": "kyc"})
	wantError(t, ts.confirm(body, sign(secret, body)), 400, "WRONG_PATTERN")
}
