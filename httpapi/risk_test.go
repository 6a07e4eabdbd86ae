package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func (ts *testServer) fromIP(ip, method, path string, body string) *response {
	ts.t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ts.Key)
	req.Header.Set("X-End-User-IP", ip)
	return ts.send(req)
}

func TestRiskVelocityBlock(t *testing.T) {
	ts := newTestServer(t)
	wantOK(t, ts.do("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, testAdminToken, map[string]any{"rateLimitPerMinute": 10000}))
	// A known device, for the exemption.
	login := ts.login("dev@example.com")
	device := str(t, login.Body, "deviceToken")

	for i := 0; i < 31; i++ {
		r := ts.fromIP("203.0.113.7", "POST", "/api/v1/otp/verify", `{"email":"victim@example.com","code":"000000"}`)
		wantError(t, r, 401, "INVALID_CODE")
	}
	r := ts.fromIP("203.0.113.7", "POST", "/api/v1/otp/verify", `{"email":"victim@example.com","code":"000000"}`)
	wantError(t, r, 403, "RISK_BLOCKED")
	r = ts.fromIP("203.0.113.7", "POST", "/api/v1/backup-codes/verify", `{"email":"victim@example.com","code":"AAAAA-AAAAA"}`)
	wantError(t, r, 403, "RISK_BLOCKED")
	// Another IP is unaffected; a known device is exempt.
	wantError(t, ts.fromIP("203.0.113.8", "POST", "/api/v1/otp/verify", `{"email":"victim@example.com","code":"000000"}`), 401, "INVALID_CODE")
	wantError(t, ts.fromIP("203.0.113.7", "POST", "/api/v1/otp/verify", `{"email":"victim@example.com","code":"000000","deviceToken":"`+device+`"}`), 401, "INVALID_CODE")
	if eventCategories(ts)["risk_blocked"] != 2 {
		t.Fatalf("categories=%v", eventCategories(ts))
	}
	ts.Clock.Advance(15 * time.Minute)
	wantError(t, ts.fromIP("203.0.113.7", "POST", "/api/v1/otp/verify", `{"email":"victim@example.com","code":"000000"}`), 401, "INVALID_CODE")
}

func TestRiskDenyList(t *testing.T) {
	ts := newTestServer(t)
	wantOK(t, ts.do("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, testAdminToken, map[string]any{"denyCidrs": []string{"198.51.100.0/24", "2001:db8::/32"}}))
	wantError(t, ts.fromIP("198.51.100.23", "POST", "/api/v1/otp/send", `{"email":"a@example.com"}`), 403, "RISK_BLOCKED")
	wantError(t, ts.fromIP("2001:db8::5", "POST", "/api/v1/otp/verify", `{"email":"a@example.com","code":"123456"}`), 403, "RISK_BLOCKED")
	wantOK(t, ts.fromIP("198.51.101.1", "POST", "/api/v1/otp/send", `{"email":"a@example.com"}`))
	if n := ts.mailCount(); n != 1 {
		t.Fatalf("mail=%d, want 1", n)
	}
}
