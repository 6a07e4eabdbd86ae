package httpapi_test

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/sms"
	"latchkey/store"
)

// TestDeleteUserDropsPendingCredentials: DELETE /user also deletes the
// address's pending email code and magic links, the pending SMS code and
// unredeemed external grants for the user's externalUserId, so none of
// them can sign in (and create a new account) afterwards. The address
// itself may sign up again with a new code.
func TestDeleteUserDropsPendingCredentials(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := newTestServer(t, func(c *auth.Config) { c.SMS = &sms.Log{Logger: slog.New(slog.DiscardHandler), Dir: dir} })
	_, directSecret := ts.method("bank_id", "direct")
	hookID, hookSecret := ts.method("kyc", "webhook")
	const addr = "ada@example.com"

	// A user with an externalUserId, signed in.
	body := ts.confirmBody(map[string]any{"externalUserId": "ext-1", "method": "bank_id", "email": addr})
	r := ts.confirm(body, sign(directSecret, body))
	wantOK(t, r)
	tok, uid := str(t, r.Body, "token"), str(t, r.Body, "userId")

	// Pending: an email code, a magic link, an SMS code, a grant, and a
	// backup-code failure.
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	code := ts.lastMail(addr).Code
	link := ts.magicToken(addr, nil)
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"}))
	cb := ts.confirmBody(map[string]any{"externalUserId": "ext-1", "email": addr, "reference": "ref-1"})
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/callback/"+hookID, strings.NewReader(string(cb)))
	req.Header.Set("X-Service-Signature", sign(hookSecret, cb))
	wantOK(t, ts.send(req))
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": addr, "code": "AAAAA-AAAAA"}), 401, "INVALID_CODE")

	wantOK(t, ts.do("DELETE", "/api/v1/user", tok, nil))

	r = ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code})
	wantError(t, r, 401, "INVALID_CODE")
	if !strings.Contains(r.Body["error"].(string), "No code is pending") {
		t.Fatalf("error=%q, want the no-pending-code text", r.Body["error"])
	}
	wantError(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(link), "", nil), 401, "INVALID_TOKEN")
	wantError(t, ts.do("POST", "/api/v1/external-auth/redeem", ts.Key, map[string]any{"method": "kyc", "reference": "ref-1"}), 401, "INVALID_TOKEN")
	if users := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID, nil).Body["users"].([]any); len(users) != 0 {
		t.Fatalf("users after deletion: %v", users)
	}
	ts.DB.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Code("sms", ts.Project.ID, uid); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SMS code: err=%v, want deleted", err)
		}
		for _, kind := range []string{"backup_fail", "sms_send"} {
			if th, err := tx.Throttle(kind, ts.Project.ID, uid); err != nil || len(th.Sends) != 0 {
				t.Fatalf("%s history: %v %v, want deleted", kind, th, err)
			}
		}
		// The address's send history stays: it limits mail to the address.
		if th, err := tx.Throttle("otp", ts.Project.ID, addr); err != nil || len(th.Sends) != 1 {
			t.Fatalf("OTP send history: %v %v, want kept", th, err)
		}
		return nil
	})

	// The address can sign up again, as a new user.
	ts.Clock.Advance(31 * time.Second)
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	r = ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": ts.lastMail(addr).Code})
	wantOK(t, r)
	if r.Body["isNewUser"] != true || r.Body["userId"] == uid {
		t.Fatalf("sign-up after deletion: %s", r.Raw)
	}
}
