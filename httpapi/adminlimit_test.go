package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
)

// adminFrom sends an admin API GET with token from local address ip.
func (ts *testServer) adminFrom(ip, token string) *response {
	ts.t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/admin/projects", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return ts.sendFrom(ip, req)
}

// TestAdminTokenThrottle is finding 8's admin attack: admin-token
// guesses were unthrottled. An address may fail 10 times per rolling
// minute; then every admin call from it is 429 with Retry-After, the
// right token too (else the 200 would still tell a guesser they found
// it), the dashboard's sign-in as well. Other addresses are unaffected;
// the right token never spends the budget.
func TestAdminTokenThrottle(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const attacker, operator = "127.0.0.1", "127.0.0.2"
	for i := 0; i < 60; i++ { // successes cost nothing
		wantOK(t, ts.adminFrom(attacker, testAdminToken))
	}
	for i := 0; i < auth.AdminMaxFailures; i++ {
		tok := "adm_guessguessguessguess" + strings.Repeat("x", i)
		if i%3 == 0 {
			tok = "" // a missing token is a failure too
		}
		wantError(t, ts.adminFrom(attacker, tok), 401, "UNAUTHORIZED")
		ts.Clock.Advance(time.Second)
	}
	for _, tok := range []string{"adm_guessguessguessguess", testAdminToken, ""} {
		r := ts.adminFrom(attacker, tok)
		wantError(t, r, 429, "RATE_LIMIT_EXCEEDED")
		if ra := r.Header.Get("Retry-After"); ra != "50" { // the first failure leaves the minute in 50 s
			t.Fatalf("Retry-After=%q, want 50", ra)
		}
	}
	// The dashboard's sign-in form is the same door.
	req, _ := http.NewRequest("POST", ts.URL+"/admin/login", strings.NewReader(url.Values{"token": {testAdminToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if r := ts.sendFrom(attacker, req); r.Status != 429 || r.Header.Get("Retry-After") != "50" || !strings.Contains(string(r.Raw), "Too many failed sign-ins") {
		t.Fatalf("dashboard sign-in: status=%d Retry-After=%q body=%s", r.Status, r.Header.Get("Retry-After"), r.Raw)
	}
	// Another address is not affected.
	wantOK(t, ts.adminFrom(operator, testAdminToken))
	wantError(t, ts.adminFrom(operator, "adm_wrongwrongwrongwrong"), 401, "UNAUTHORIZED")

	ts.Clock.Advance(50 * time.Second) // the first failure left the minute: one try
	wantOK(t, ts.adminFrom(attacker, testAdminToken))
	wantError(t, ts.adminFrom(attacker, "adm_guessguessguessguess"), 401, "UNAUTHORIZED")
	wantError(t, ts.adminFrom(attacker, "adm_guessguessguessguess"), 429, "RATE_LIMIT_EXCEEDED")
	ts.Clock.Advance(time.Minute)
	wantOK(t, ts.adminFrom(attacker, testAdminToken))
}

// TestAdminTokenThrottleConcurrent: 40 guesses at once from one address
// are answered 10 × 401 and 30 × 429: the check counts before it
// compares, so concurrency buys no extra guess.
func TestAdminTokenThrottleConcurrent(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rs := ts.parallel(40, func(int) *http.Request {
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/admin/projects", nil)
		req.Header.Set("Authorization", "Bearer adm_guessguessguessguess")
		return req
	})
	got := statusCodes(rs)
	if got["401 UNAUTHORIZED"] != auth.AdminMaxFailures || got["429 RATE_LIMIT_EXCEEDED"] != 40-auth.AdminMaxFailures {
		t.Fatalf("answers %v, want 10 × 401 and 30 × 429", got)
	}
}
