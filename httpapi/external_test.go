package httpapi_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
	t.Parallel()
	ts := newTestServer(t)
	_, secret := ts.method("bank_id", "direct")
	body := ts.confirmBody(map[string]any{"externalUserId": "ext-1", "method": "bank_id", "email": "Ext@Example.com"})
	r := ts.confirm(body, sign(secret, body))
	wantOK(t, r)
	if r.Body["isNewUser"] != true || r.Body["externalUserId"] != "ext-1" {
		t.Fatalf("body=%s", r.Raw)
	}
	wantLoginUser(t, r.Body, "ext@example.com")
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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	wantLoginUser(t, r.Body, "k1@example.com")
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

// TestExternalConfirmPayloads: every malformed body is 400
// INVALID_PAYLOAD, whatever its signature.
func TestExternalConfirmPayloads(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	_, secret := ts.method("bank_id", "direct")
	at := ts.Clock.Now().UTC().Format(time.RFC3339)
	for name, body := range map[string]string{
		"empty":               ``,
		"null":                `null`,
		"string":              `"x"`,
		"number":              `42`,
		"two objects":         `{"externalUserId":"e","method":"bank_id","verifiedAt":"` + at + `"} {}`,
		"truncated":           `{"externalUserId":"e","method":"bank_id"`,
		"missing method":      `{"externalUserId":"e","verifiedAt":"` + at + `"}`,
		"missing verifiedAt":  `{"externalUserId":"e","method":"bank_id"}`,
		"null externalUserId": `{"externalUserId":null,"method":"bank_id","verifiedAt":"` + at + `"}`,
		"empty externalUser":  `{"externalUserId":"","method":"bank_id","verifiedAt":"` + at + `"}`,
		"long externalUser":   `{"externalUserId":"` + strings.Repeat("x", 256) + `","method":"bank_id","verifiedAt":"` + at + `"}`,
		"array method":        `{"externalUserId":"e","method":["bank_id"],"verifiedAt":"` + at + `"}`,
		"number verifiedAt":   `{"externalUserId":"e","method":"bank_id","verifiedAt":1795431252}`,
		"date only":           `{"externalUserId":"e","method":"bank_id","verifiedAt":"2026-11-22"}`,
		"object email":        `{"externalUserId":"e","method":"bank_id","verifiedAt":"` + at + `","email":{}}`,
		"capitalised fields":  `{"ExternalUserId":"e","Method":"bank_id","VerifiedAt":"` + at + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, ts.confirm([]byte(body), sign(secret, []byte(body))), 400, "INVALID_PAYLOAD")
		})
	}
	// A malformed payload is not a guess at a credential: 40 of them do
	// not trip the velocity block.
	for i := 0; i < 40; i++ {
		wantError(t, ts.confirm([]byte(`[]`), ""), 400, "INVALID_PAYLOAD")
	}
	b := ts.confirmBody(map[string]any{"externalUserId": "e", "method": "bank_id", "email": "e@example.com"})
	wantOK(t, ts.confirm(b, sign(secret, b)))
	if n := eventCategories(ts)["external_method_error"]; n != 56 {
		t.Fatalf("%d external_method_error events, want 56", n)
	}
}

// TestExternalConfirmOrder: when a body fails several checks, the first
// in the decided order answers: payload, status, pattern, signature,
// freshness, replay, email of a new user.
func TestExternalConfirmOrder(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	_, secret := ts.method("bank_id", "direct")
	_, hookSecret := ts.method("hook", "webhook")
	inactiveID, inactiveSecret := ts.method("old", "webhook")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/external-methods/"+inactiveID, map[string]any{"status": "inactive"}))
	stale := ts.Clock.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339)
	body := func(method string, extra map[string]any) []byte {
		f := map[string]any{"externalUserId": "new-user", "method": method, "verifiedAt": stale}
		for k, v := range extra {
			f[k] = v
		}
		return ts.confirmBody(f)
	}
	cases := []struct {
		name   string
		body   []byte
		sig    func([]byte) string
		status int
		code   string
	}{
		{"unknown method beats bad signature", body("nope", nil), func([]byte) string { return "00" }, 400, "INVALID_PAYLOAD"},
		{"inactive beats wrong pattern and signature", body("old", nil), func([]byte) string { return "00" }, 403, "INACTIVE_REGISTRATION"},
		{"wrong pattern beats signature", body("hook", nil), func([]byte) string { return "00" }, 400, "WRONG_PATTERN"},
		{"signature beats freshness", body("bank_id", nil), func(b []byte) string { return sign(hookSecret, b) }, 401, "INVALID_SIGNATURE"},
		{"freshness beats missing email", body("bank_id", nil), func(b []byte) string { return sign(secret, b) }, 401, "STALE_TIMESTAMP"},
		{"missing email last", body("bank_id", map[string]any{"verifiedAt": ts.Clock.Now().UTC().Format(time.RFC3339)}), func(b []byte) string { return sign(secret, b) }, 400, "INVALID_PAYLOAD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, ts.confirm(c.body, c.sig(c.body)), c.status, c.code)
		})
	}
	_ = inactiveSecret
	// A refused login leaves no replay mark: the same body answers the
	// same, not REPLAYED.
	c := cases[len(cases)-1]
	wantError(t, ts.confirm(c.body, c.sig(c.body)), 400, "INVALID_PAYLOAD")
	// Replay beats the user checks: a replayed body of a now-conflicting
	// user is REPLAYED.
	ok := body("bank_id", map[string]any{"verifiedAt": ts.Clock.Now().UTC().Format(time.RFC3339), "email": "new@example.com"})
	wantOK(t, ts.confirm(ok, sign(secret, ok)))
	wantError(t, ts.confirm(ok, sign(secret, ok)), 401, "REPLAYED")
}

// TestExternalConfirmTimestamps: verifiedAt may carry a zone, an offset,
// fractional seconds, or no zone at all (read as UTC, as the field is
// defined); the 60-second window applies to the instant.
func TestExternalConfirmTimestamps(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	_, secret := ts.method("bank_id", "direct")
	now := ts.Clock.Now().UTC()
	paris := time.FixedZone("CET", 3600)
	for i, at := range []string{
		now.Format(time.RFC3339),
		now.Add(-30 * time.Second).Format("2006-01-02T15:04:05.000Z"),
		now.In(paris).Format(time.RFC3339Nano),
		now.Format("2006-01-02T15:04:05"),
		now.Add(59 * time.Second).Format("2006-01-02T15:04:05.123456"),
	} {
		b := ts.confirmBody(map[string]any{"externalUserId": "t", "method": "bank_id", "email": "t@example.com", "verifiedAt": at, "n": i})
		wantOK(t, ts.confirm(b, sign(secret, b)))
	}
	for _, at := range []string{
		now.In(paris).Add(-61 * time.Second).Format(time.RFC3339),
		now.Add(61 * time.Second).Format("2006-01-02T15:04:05"),
	} {
		b := ts.confirmBody(map[string]any{"externalUserId": "t", "method": "bank_id", "verifiedAt": at})
		wantError(t, ts.confirm(b, sign(secret, b)), 401, "STALE_TIMESTAMP")
	}
}

// TestExternalPatternBErrors: the callback runs confirm's checks with the
// registration from the path; redeem's failures.
func TestExternalPatternBErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	id, secret := ts.method("kyc", "webhook")
	directID, directSecret := ts.method("bank_id", "direct")
	offID, offSecret := ts.method("off", "webhook")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/external-methods/"+offID, map[string]any{"status": "inactive"}))
	uid := str(t, ts.login("taken@example.com").Body, "userId")
	b := ts.confirmBody(map[string]any{"externalUserId": "owner", "method": "bank_id", "email": "taken@example.com"})
	wantOK(t, ts.confirm(b, sign(directSecret, b)))

	post := func(reg string, body []byte, sig string) *response {
		req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/callback/"+reg, strings.NewReader(string(body)))
		req.Header.Set("X-Service-Signature", sig)
		return ts.send(req)
	}
	n := 0
	fields := func(extra map[string]any) []byte {
		n++
		f := map[string]any{"externalUserId": "cb-user", "email": "cb@example.com", "reference": "ref-" + string(rune('a'+n))}
		for k, v := range extra {
			f[k] = v
		}
		return ts.confirmBody(f)
	}
	now := ts.Clock.Now().UTC()
	cases := []struct {
		name   string
		reg    string
		body   []byte
		secret string
		sig    string
		status int
		code   string
	}{
		{"not an object", id, []byte(`[]`), secret, "", 400, "INVALID_PAYLOAD"},
		{"no reference", id, ts.confirmBody(map[string]any{"externalUserId": "x", "email": "x@example.com"}), secret, "", 400, "INVALID_PAYLOAD"},
		{"unknown registration", "00000000-0000-0000-0000-000000000000", fields(nil), secret, "", 400, "INVALID_PAYLOAD"},
		{"inactive", offID, fields(nil), offSecret, "", 403, "INACTIVE_REGISTRATION"},
		{"direct registration", directID, fields(nil), directSecret, "", 400, "WRONG_PATTERN"},
		{"bad signature", id, fields(nil), secret, "abcd", 401, "INVALID_SIGNATURE"},
		{"no signature", id, fields(nil), secret, "-", 401, "INVALID_SIGNATURE"},
		{"stale", id, fields(map[string]any{"verifiedAt": now.Add(-61 * time.Second).Format(time.RFC3339)}), secret, "", 401, "STALE_TIMESTAMP"},
		{"future", id, fields(map[string]any{"verifiedAt": now.Add(61 * time.Second).Format(time.RFC3339)}), secret, "", 401, "STALE_TIMESTAMP"},
		{"new user without email", id, fields(map[string]any{"email": nil}), secret, "", 400, "INVALID_PAYLOAD"},
		{"new user, bad email", id, fields(map[string]any{"email": "nope"}), secret, "", 400, "INVALID_PAYLOAD"},
		{"email of another external id", id, fields(map[string]any{"email": "taken@example.com"}), secret, "", 409, "EXTERNAL_ID_CONFLICT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sig := c.sig
			switch sig {
			case "":
				sig = sign(c.secret, c.body)
			case "-":
				sig = ""
			}
			wantError(t, post(c.reg, c.body, sig), c.status, c.code)
		})
	}
	// The same signed body twice, and a new body reusing a reference.
	ok := fields(map[string]any{"reference": "once"})
	wantOK(t, post(id, ok, sign(secret, ok)))
	wantError(t, post(id, ok, sign(secret, ok)), 401, "REPLAYED")
	ts.Clock.Advance(time.Second)
	again := ts.confirmBody(map[string]any{"externalUserId": "cb-user", "email": "cb@example.com", "reference": "once"})
	wantError(t, post(id, again, sign(secret, again)), 401, "REPLAYED")
	// A known user's email is optional; a user attached by email is not new.
	known := ts.confirmBody(map[string]any{"externalUserId": "owner", "reference": "known"})
	wantOK(t, post(id, known, sign(secret, known)))

	redeem := func(method, ref string) *response {
		return ts.do("POST", "/api/v1/external-auth/redeem", ts.Key, map[string]any{"method": method, "reference": ref})
	}
	r := redeem("kyc", "known")
	wantOK(t, r)
	if r.Body["userId"] != uid || r.Body["isNewUser"] != false || r.Body["externalUserId"] != "owner" {
		t.Fatalf("known user: %s", r.Raw)
	}
	wantOK(t, ts.do("GET", "/api/v1/session", str(t, r.Body, "token"), nil))
	// The redeem goes with the method whose callback stored the grant.
	wantError(t, redeem("bank_id", "once"), 401, "INVALID_TOKEN")
	wantError(t, redeem("nope", "once"), 401, "INVALID_TOKEN")
	wantError(t, redeem("off", "once"), 403, "INACTIVE_REGISTRATION")
	for _, body := range []any{map[string]any{"method": "kyc"}, map[string]any{"reference": "once"}, map[string]any{"method": "kyc", "reference": 5}, "["} {
		wantError(t, ts.do("POST", "/api/v1/external-auth/redeem", ts.Key, body), 400, "VALIDATION_ERROR")
	}
	wantError(t, ts.do("POST", "/api/v1/external-auth/redeem", "", map[string]any{"method": "kyc", "reference": "once"}), 401, "MISSING_API_KEY")
	// Another project's key cannot redeem this project's grant.
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	otherKey := ts.createKey(map[string]any{"projectId": str(t, obj(t, other.Body, "project"), "id"), "mode": "test"})
	wantError(t, ts.do("POST", "/api/v1/external-auth/redeem", otherKey, map[string]any{"method": "kyc", "reference": "once"}), 401, "INVALID_TOKEN")
	r = redeem("kyc", "once")
	wantOK(t, r)
	if r.Body["isNewUser"] != true || r.Body["externalUserId"] != "cb-user" {
		t.Fatalf("new user: %s", r.Raw)
	}
	// Callback and redeem outcomes are events (stored, or past 10 a
	// minute for failures that name no user, counted).
	page := ts.admin("GET", "/api/v1/admin/events?projectId="+ts.Project.ID+"&limit=1000", nil).Body
	actions := map[string]int{}
	for _, e := range page["events"].([]any) {
		ev := e.(map[string]any)
		if ev["method"] == "external" {
			actions[ev["action"].(string)+"/"+fmt.Sprint(ev["success"])]++
		}
	}
	for _, c := range page["suppressed"].([]any) {
		c := c.(map[string]any)
		if c["method"] == "external" {
			actions[c["action"].(string)+"/false"] += int(c["count"].(float64))
		}
	}
	if actions["callback/true"] != 2 || actions["callback/false"] < 13 || actions["redeem/true"] != 2 || actions["redeem/false"] < 5 {
		t.Fatalf("external events %v", actions)
	}
}
