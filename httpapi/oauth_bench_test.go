package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"latchkey/auth"
)

// BenchmarkOAuthLogin is one whole provider sign-in per op, one client
// at a time, over real HTTP: oauth/start, the browser at zitadel's
// example provider on loopback (authorize, its login form), the
// callback (latchkey redeems the code at the provider's token endpoint
// and verifies the ID token, the address from its userinfo endpoint),
// and oauth/exchange. latchkey-µs is the part latchkey answers (start,
// callback with its calls to the provider, exchange); the rest is the
// browser at the provider. The user exists (after the first op).
func BenchmarkOAuthLogin(b *testing.B) {
	ts, o := oauthSetupTB(b)
	var ours, start, cb, ex time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		authURL := ts.startTB(b)
		start += time.Since(t0)
		callback := o.callbackPath(b, ts, authURL)
		t1 := time.Now()
		r := ts.do("GET", callback, "", nil)
		cb += time.Since(t1)
		u, _ := url.Parse(r.Header.Get("Location"))
		code := u.Query().Get("code")
		if code == "" {
			b.Fatalf("callback: %d %s", r.Status, r.Header.Get("Location"))
		}
		t2 := time.Now()
		r = ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
		ex += time.Since(t2)
		if r.Status != http.StatusOK {
			b.Fatalf("exchange: %d %s", r.Status, r.Raw)
		}
	}
	ours = start + cb + ex
	b.ReportMetric(float64(ours.Microseconds())/float64(b.N), "latchkey-µs/op")
	b.ReportMetric(float64(start.Microseconds())/float64(b.N), "start-µs/op")
	b.ReportMetric(float64(cb.Microseconds())/float64(b.N), "callback-µs/op")
	b.ReportMetric(float64(ex.Microseconds())/float64(b.N), "exchange-µs/op")
}

// BenchmarkOAuthOTPLogin is the email OTP sign-in in the same harness,
// for comparison: otp/send and otp/verify with the code read from the
// mail queue, one client at a time; a new address (a new user) per op.
func BenchmarkOAuthOTPLogin(b *testing.B) {
	ts, _ := oauthSetupTB(b)
	var ours time.Duration
	for i := 0; i < b.N; i++ {
		addr := fmt.Sprintf("otp%d@example.com", i)
		t0 := time.Now()
		if r := ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}); r.Status != http.StatusOK {
			b.Fatalf("send: %d %s", r.Status, r.Raw)
		}
		ours += time.Since(t0)
		code := ts.lastMail(addr).Code
		t1 := time.Now()
		if r := ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code}); r.Status != http.StatusOK {
			b.Fatalf("verify: %d %s", r.Status, r.Raw)
		}
		ours += time.Since(t1)
	}
	b.ReportMetric(float64(ours.Microseconds())/float64(b.N), "latchkey-µs/op")
}

// oauthSetupTB is oauthSetup for benchmarks: the project's rate limit
// raised out of the way.
func oauthSetupTB(b *testing.B) (*testServer, *testOP) {
	b.Helper()
	ts := newTestServer(b)
	wantOK(b, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{oauthApp}, "rateLimitPerMinute": auth.MaxRateLimit}))
	o := newTestOP(b, ts.URL+"/api/v1/oauth/callback")
	wantOK(b, ts.admin("POST", "/api/v1/admin/projects/"+ts.Project.ID+"/providers", map[string]any{
		"name": "corp", "type": "oidc", "clientId": o.ClientID, "clientSecret": "op-secret", "issuer": o.URL}))
	return ts, o
}

func (ts *testServer) startTB(b *testing.B) string {
	b.Helper()
	r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "corp", "redirectUrl": oauthApp + "/done"})
	if r.Status != http.StatusOK {
		b.Fatalf("start: %d %s", r.Status, r.Raw)
	}
	return r.Body["authorizationUrl"].(string)
}
