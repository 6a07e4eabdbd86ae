package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestDisableAcrossLoginPaths: a disabled user gets 403 USER_DISABLED on
// every login path, even with a code, link, backup code or grant issued
// before the disable; their sessions die at once; enable restores all.
// (Passkey login is covered in passkey_test.go.)
func TestDisableAcrossLoginPaths(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const addr = "dis@example.com"
	_, direct := ts.method("bank_id", "direct")
	kycID, kycSecret := ts.method("kyc", "webhook")

	// Sign up through the external method so the user has an externalUserId.
	body := ts.confirmBody(map[string]any{"externalUserId": "ext-dis", "method": "bank_id", "email": addr})
	r := ts.confirm(body, sign(direct, body))
	wantOK(t, r)
	tok, id := str(t, r.Body, "token"), str(t, r.Body, "userId")
	codes := ts.backupCodes(tok)
	ts.Clock.Advance(31 * time.Second)

	// Issue a code, a link and a Pattern B grant before the disable.
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	code := ts.lastMail(addr).Code
	link := ts.magicToken(addr, nil)
	callback := func(ref string) {
		t.Helper()
		ts.Clock.Advance(time.Second)
		b := ts.confirmBody(map[string]any{"externalUserId": "ext-dis", "reference": ref})
		req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/callback/"+kycID, strings.NewReader(string(b)))
		req.Header.Set("X-Service-Signature", sign(kycSecret, b))
		wantOK(t, ts.send(req))
	}
	callback("ref-before")

	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+id+"/disable", nil))
	wantError(t, ts.do("GET", "/api/v1/session", tok, nil), 401, "INVALID_SESSION")
	wantError(t, ts.do("GET", "/api/v1/me", tok, nil), 401, "INVALID_SESSION")
	wantError(t, ts.do("POST", "/api/v1/backup-codes/generate", tok, map[string]any{}), 401, "INVALID_SESSION")
	wantError(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"}), 401, "INVALID_SESSION")
	mails := ts.mailCount()

	ts.Clock.Advance(time.Second)
	paths := []struct {
		name string
		do   func() *response
	}{
		{"otp/verify", func() *response {
			return ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code})
		}},
		{"otp/verify, wrong code", func() *response {
			return ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": "000000"})
		}},
		{"backup-codes/verify, wrong code", func() *response {
			return ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"externalUserId": "ext-dis", "code": "AAAAA-AAAAA"})
		}},
		{"magic/verify", func() *response {
			return ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(link), "", nil)
		}},
		{"backup-codes/verify", func() *response {
			return ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": addr, "code": codes[0]})
		}},
		{"external-auth/confirm", func() *response {
			b := ts.confirmBody(map[string]any{"externalUserId": "ext-dis", "method": "bank_id"})
			return ts.confirm(b, sign(direct, b))
		}},
		{"external-auth/redeem", func() *response {
			return ts.do("POST", "/api/v1/external-auth/redeem", ts.Key, map[string]any{"method": "kyc", "reference": "ref-before"})
		}},
		{"otp/send", func() *response {
			return ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr})
		}},
		{"magic/send", func() *response {
			return ts.do("POST", "/api/v1/magic/send", ts.Key, map[string]any{"email": addr})
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) { wantError(t, p.do(), 403, "USER_DISABLED") })
	}
	if n := ts.mailCount(); n != mails {
		t.Fatalf("%d messages queued for a disabled address", n-mails)
	}
	if n := eventCategories(ts)["user_disabled"]; n != len(paths) {
		t.Fatalf("%d user_disabled events, want %d", n, len(paths))
	}

	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+id+"/enable", nil))
	ts.Clock.Advance(time.Second)
	// The code and link issued before are still good (nothing was consumed).
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code}))
	wantOK(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(link), "", nil))
	wantOK(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": addr, "code": codes[0]}))
	b := ts.confirmBody(map[string]any{"externalUserId": "ext-dis", "method": "bank_id"})
	wantOK(t, ts.confirm(b, sign(direct, b)))
	wantOK(t, ts.do("POST", "/api/v1/external-auth/redeem", ts.Key, map[string]any{"method": "kyc", "reference": "ref-before"}))
}
