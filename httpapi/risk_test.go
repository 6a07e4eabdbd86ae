package httpapi_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/sms"
)

func (ts *testServer) fromIP(ip, method, path string, body string) *response {
	ts.t.Helper()
	req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ts.Key)
	req.Header.Set("X-End-User-IP", ip)
	return ts.send(req)
}

func TestRiskVelocityBlock(t *testing.T) {
	t.Parallel()
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
	// Another IP is unaffected; a known device is exempt for its own user
	// (OTP and backup codes), but not for guesses at another account.
	wantError(t, ts.fromIP("203.0.113.8", "POST", "/api/v1/otp/verify", `{"email":"victim@example.com","code":"000000"}`), 401, "INVALID_CODE")
	wantError(t, ts.fromIP("203.0.113.7", "POST", "/api/v1/otp/verify", `{"email":"dev@example.com","code":"000000","deviceToken":"`+device+`"}`), 401, "INVALID_CODE")
	wantError(t, ts.fromIP("203.0.113.7", "POST", "/api/v1/backup-codes/verify", `{"email":"dev@example.com","code":"AAAAA-AAAAA","deviceToken":"`+device+`"}`), 401, "INVALID_CODE")
	wantError(t, ts.fromIP("203.0.113.7", "POST", "/api/v1/otp/verify", `{"email":"victim@example.com","code":"000000","deviceToken":"`+device+`"}`), 403, "RISK_BLOCKED")
	if eventCategories(ts)["risk_blocked"] != 3 {
		t.Fatalf("categories=%v", eventCategories(ts))
	}
	ts.Clock.Advance(15 * time.Minute)
	wantError(t, ts.fromIP("203.0.113.7", "POST", "/api/v1/otp/verify", `{"email":"victim@example.com","code":"000000"}`), 401, "INVALID_CODE")
}

func TestRiskDenyList(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.do("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, testAdminToken, map[string]any{"denyCidrs": []string{"198.51.100.0/24", "2001:db8::/32"}}))
	wantError(t, ts.fromIP("198.51.100.23", "POST", "/api/v1/otp/send", `{"email":"a@example.com"}`), 403, "RISK_BLOCKED")
	wantError(t, ts.fromIP("2001:db8::5", "POST", "/api/v1/otp/verify", `{"email":"a@example.com","code":"123456"}`), 403, "RISK_BLOCKED")
	// A zone on the address does not take it out of its prefix.
	wantError(t, ts.fromIP("2001:db8::5%x", "POST", "/api/v1/otp/send", `{"email":"a@example.com"}`), 403, "RISK_BLOCKED")
	wantOK(t, ts.fromIP("198.51.101.1", "POST", "/api/v1/otp/send", `{"email":"a@example.com"}`))
	if n := ts.mailCount(); n != 1 {
		t.Fatalf("mail=%d, want 1", n)
	}
}

// TestRiskBadSignatures: wrong external signatures count as failed
// verifications; past 30 the IP is blocked on every verification path,
// but not on sends.
func TestRiskBadSignatures(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 10000}))
	_, secret := ts.method("bank_id", "direct")
	confirm := func(ip string, body []byte, sig string) *response {
		req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/confirm", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+ts.Key)
		req.Header.Set("X-End-User-IP", ip)
		req.Header.Set("X-Service-Signature", sig)
		return ts.send(req)
	}
	body := ts.confirmBody(map[string]any{"externalUserId": "r1", "method": "bank_id", "email": "r1@example.com"})
	for i := 0; i < 31; i++ {
		wantError(t, confirm("192.0.2.50", body, "00"), 401, "INVALID_SIGNATURE")
	}
	wantError(t, confirm("192.0.2.50", body, sign(secret, body)), 403, "RISK_BLOCKED")
	for _, c := range []struct{ path, body string }{
		{"/api/v1/otp/verify", `{"email":"r1@example.com","code":"123456"}`},
		{"/api/v1/backup-codes/verify", `{"email":"r1@example.com","code":"AAAAA-AAAAA"}`},
		{"/api/v1/external-auth/redeem", `{"method":"bank_id","reference":"x"}`},
	} {
		wantError(t, ts.fromIP("192.0.2.50", "POST", c.path, c.body), 403, "RISK_BLOCKED")
	}
	// Sends are not velocity-blocked; another IP is unaffected.
	wantOK(t, ts.fromIP("192.0.2.50", "POST", "/api/v1/otp/send", `{"email":"r1@example.com"}`))
	wantOK(t, confirm("192.0.2.51", body, sign(secret, body)))
}

// TestRiskDenyListEveryPath: a denied CIDR is refused at once on every
// API-key login path, and lifting it restores them.
func TestRiskDenyListEveryPath(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	_, secret := ts.method("bank_id", "direct")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"denyCidrs": []string{"192.0.2.0/24"}}))
	body := ts.confirmBody(map[string]any{"externalUserId": "d1", "method": "bank_id", "email": "d1@example.com"})
	paths := []struct{ path, body string }{
		{"/api/v1/otp/send", `{"email":"d1@example.com"}`},
		{"/api/v1/magic/send", `{"email":"d1@example.com"}`},
		{"/api/v1/otp/verify", `{"email":"d1@example.com","code":"123456"}`},
		{"/api/v1/backup-codes/verify", `{"email":"d1@example.com","code":"AAAAA-AAAAA"}`},
		{"/api/v1/external-auth/redeem", `{"method":"bank_id","reference":"x"}`},
	}
	for _, p := range paths {
		wantError(t, ts.fromIP("192.0.2.77", "POST", p.path, p.body), 403, "RISK_BLOCKED")
	}
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/confirm", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+ts.Key)
	req.Header.Set("X-End-User-IP", "192.0.2.77")
	req.Header.Set("X-Service-Signature", sign(secret, body))
	wantError(t, ts.send(req), 403, "RISK_BLOCKED")
	if n := ts.mailCount(); n != 0 {
		t.Fatalf("%d messages sent to a denied IP's request", n)
	}
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"denyCidrs": []string{}}))
	wantOK(t, ts.fromIP("192.0.2.77", "POST", "/api/v1/otp/send", `{"email":"d1@example.com"}`))
	req, _ = http.NewRequest("POST", ts.URL+"/api/v1/external-auth/confirm", strings.NewReader(string(body)))
	req.Header.Set("Authorization", "Bearer "+ts.Key)
	req.Header.Set("X-End-User-IP", "192.0.2.77")
	req.Header.Set("X-Service-Signature", sign(secret, body))
	wantOK(t, ts.send(req))
}

// TestRiskIgnoresStepUp: wrong step-up codes on a session (SMS here) have
// their own lockout and do not count towards the IP's velocity block:
// their IP is the caller's peer, often the app's own backend.
func TestRiskIgnoresStepUp(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *auth.Config) { c.SMS = &sms.Log{Logger: slog.New(slog.DiscardHandler)} })
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 10000}))
	tok := str(t, ts.login("step@example.com").Body, "token")
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"}))
	for i := 0; i < 40; i++ {
		wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": "1234567"}), 401, "VERIFICATION_FAILED")
	}
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "step@example.com", "code": "123456"}), 401, "INVALID_CODE")
}

// TestRiskWithoutEndUserIPCountsPerAccount is finding 5's first attack:
// an app backend calls without X-End-User-IP, so every request has the
// backend's own address. 31 bad guesses at one address used to block
// every verification in the project for 15 minutes. Now they count
// against the account guessed at: it is blocked, everyone else signs in.
func TestRiskWithoutEndUserIPCountsPerAccount(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 10000}))
	guess := map[string]any{"email": "victim@example.com", "code": "000000"}
	for i := 0; i <= auth.RiskMaxFailures; i++ {
		wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, guess), 401, "INVALID_CODE")
	}
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, guess), 403, "RISK_BLOCKED")
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "victim@example.com", "code": "AAAAA-AAAAA"}), 403, "RISK_BLOCKED")
	// Another user of the project, through the same backend, is not
	// blocked: a wrong code is just wrong, and a real sign-in works.
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "other@example.com", "code": "000000"}), 401, "INVALID_CODE")
	ts.login("other@example.com")
	// Other identifiers are accounts of their own too.
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"externalUserId": "ext-9", "code": "AAAAA-AAAAA"}), 401, "INVALID_CODE")
	ts.Clock.Advance(auth.RiskBlockFor)
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, guess), 401, "INVALID_CODE")
}

// TestRiskIPv6RotationInsideSlash64 is finding 5's third attack: an
// IPv6 attacker owns a /64 and rotates through it. The count is per /64.
func TestRiskIPv6RotationInsideSlash64(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 10000}))
	guess := `{"email":"victim@example.com","code":"000000"}`
	for i := 0; i <= auth.RiskMaxFailures; i++ {
		wantError(t, ts.fromIP(fmt.Sprintf("2001:db8:1:2::%x", i+1), "POST", "/api/v1/otp/verify", guess), 401, "INVALID_CODE")
	}
	wantError(t, ts.fromIP("2001:db8:1:2:abcd:ef01:2345:6789", "POST", "/api/v1/otp/verify", guess), 403, "RISK_BLOCKED")
	wantError(t, ts.fromIP("2001:db8:1:3::1", "POST", "/api/v1/otp/verify", guess), 401, "INVALID_CODE")
}

// TestRiskConcurrentGuessesExact is finding 5's second attack: many bad
// guesses at once used to pass the check before any was counted (94 to
// 148 against a limit of 30). Now exactly as many are evaluated as one
// at a time: the 31st failure blocks, the rest are refused unevaluated.
func TestRiskConcurrentGuessesExact(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 10000}))
	const n = 150
	rs := ts.parallel(n, func(i int) *http.Request {
		req, _ := http.NewRequest("POST", ts.URL+"/api/v1/otp/verify", strings.NewReader(fmt.Sprintf(`{"email":"v%d@example.com","code":"000000"}`, i)))
		req.Header.Set("Authorization", "Bearer "+ts.Key)
		req.Header.Set("X-End-User-IP", "198.51.100.20")
		return req
	})
	got := statusCodes(rs)
	want := map[string]int{"401 INVALID_CODE": auth.RiskMaxFailures + 1, "403 RISK_BLOCKED": n - auth.RiskMaxFailures - 1}
	if len(got) != len(want) || got["401 INVALID_CODE"] != want["401 INVALID_CODE"] || got["403 RISK_BLOCKED"] != want["403 RISK_BLOCKED"] {
		t.Fatalf("answers %v, want %v", got, want)
	}
	if c := eventCategories(ts); c["invalid_code"] != auth.RiskMaxFailures+1 {
		t.Fatalf("event categories %v: want %d evaluated guesses", c, auth.RiskMaxFailures+1)
	}
}

// TestRiskMagicLinkReplayDoesNotBlock: replaying one's own used link
// is no guess at a credential, so it does not count towards the
// velocity block of the address it comes from (an address many users
// may share, such as a proxy's), and another user's fresh link from that
// address still signs in. Unknown tokens still answer 401.
func TestRiskMagicLinkReplayDoesNotBlock(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	own := ts.magicToken("attacker@example.com", nil)
	verify := func(tok string) *response {
		return ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok), "", nil)
	}
	wantOK(t, verify(own))
	for i := 0; i < 40; i++ {
		wantError(t, verify(own), 401, "INVALID_TOKEN")
	}
	wantOK(t, verify(ts.magicToken("victim@example.com", nil)))
}
