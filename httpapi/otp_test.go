package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestOTPSignUpAndSignIn(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.login("  Alice@Example.com ")
	tok := str(t, r.Body, "token")
	if r.Body["isNewUser"] != true {
		t.Fatalf("isNewUser=%v, want true", r.Body["isNewUser"])
	}
	for _, f := range []string{"success", "token", "userId", "externalUserId", "user", "companyId", "deviceToken", "isNewUser"} {
		if _, ok := r.Body[f]; !ok {
			t.Fatalf("login result lacks %q: %s", f, r.Raw)
		}
	}
	u := obj(t, r.Body, "user")
	if u["email"] != "alice@example.com" || u["id"] != r.Body["userId"] {
		t.Fatalf("user=%v", u)
	}
	if r.Body["externalUserId"] != nil || r.Body["companyId"] != nil {
		t.Fatalf("externalUserId/companyId should be null: %s", r.Raw)
	}
	if types := ts.outbox(); !slices.Equal(types, []string{"user.registered", "session.created"}) {
		t.Fatalf("outbox=%v", types)
	}

	me := ts.do("GET", "/api/v1/me", tok, nil)
	wantOK(t, me)
	if mu := obj(t, me.Body, "user"); mu["email"] != "alice@example.com" || mu["id"] != r.Body["userId"] {
		t.Fatalf("me=%s", me.Raw)
	}
	if _, ok := obj(t, me.Body, "user")["externalUserId"]; !ok {
		t.Fatal("me.user lacks externalUserId")
	}

	// Second sign-in: same user, not new.
	r2 := ts.login("alice@example.com")
	if r2.Body["isNewUser"] != false || r2.Body["userId"] != r.Body["userId"] {
		t.Fatalf("second login: %s", r2.Raw)
	}
}

func TestOTPVerifyErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	addr := "bob@example.com"
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	code := ts.lastMail(addr).Code
	wrong := fmt.Sprintf("%06d", (atoi(code)+1)%1000000)

	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": ""}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": "12ab56"}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": 123456}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "nobody@example.com", "code": "123456"}), 401, "INVALID_CODE")
	// Validation errors did not spend attempts: four wrong tries, then
	// the right code still works.
	for i := 0; i < 4; i++ {
		wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": wrong}), 401, "INVALID_CODE")
	}
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code}))
	// Used code fails.
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code}), 401, "INVALID_CODE")
}

func TestOTPLockout(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	addr := "carol@example.com"
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	code := ts.lastMail(addr).Code
	wrong := fmt.Sprintf("%06d", (atoi(code)+1)%1000000)
	var r *response
	for i := 0; i < 5; i++ {
		r = ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": wrong})
		wantError(t, r, 401, "INVALID_CODE")
	}
	r = ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code})
	wantError(t, r, 401, "INVALID_CODE")
	if msg := r.Body["error"].(string); !strings.Contains(strings.ToLower(msg), "too many attempts") || !strings.Contains(strings.ToLower(msg), "new code") {
		t.Fatalf("lockout text=%q", msg)
	}
	// A new code replaces the locked one.
	ts.Clock.Advance(31 * time.Second)
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": ts.lastMail(addr).Code}))
	// The events show the categories.
	cats := eventCategories(ts)
	if cats["rate_limited"] != 1 || cats["invalid_code"] != 5 {
		t.Fatalf("categories=%v, want 5 invalid_code and 1 rate_limited", cats)
	}
}

func TestOTPExpiryAndReplacement(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	addr := "dan@example.com"
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	first := ts.lastMail(addr).Code
	ts.Clock.Advance(31 * time.Second)
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	second := ts.lastMail(addr).Code
	if first != second {
		wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": first}), 401, "INVALID_CODE")
	}
	ts.Clock.Advance(10*time.Minute + time.Second)
	r := ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": second})
	wantError(t, r, 401, "INVALID_CODE")
	if msg := r.Body["error"].(string); !strings.Contains(msg, "expired") {
		t.Fatalf("expiry text=%q", msg)
	}
	if eventCategories(ts)["expired"] != 1 {
		t.Fatal("no expired event")
	}
}

func TestOTPSendThrottle(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	addr := "erin@example.com"
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	wantError(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}), 429, "TOO_MANY_REQUESTS")
	// Magic links are counted apart.
	wantOK(t, ts.do("POST", "/api/v1/magic/send", ts.Key, map[string]any{"email": addr}))
	for i := 1; i < 10; i++ {
		ts.Clock.Advance(31 * time.Second)
		wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	}
	ts.Clock.Advance(31 * time.Second)
	wantError(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}), 429, "TOO_MANY_REQUESTS")
	ts.Clock.Advance(time.Hour)
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
}

func TestOTPBadEmails(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, e := range []any{"", "no-at-sign", "a@b", strings.Repeat("a", 290) + "@example.com", "bad@exa mple.com", "İ@example.com", "a@exаmple.com", "a\u200b@example.com", "\"q\"@example.com", 42, nil} {
		t.Run(fmt.Sprint(e), func(t *testing.T) {
			wantError(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": e}), 400, "VALIDATION_ERROR")
			wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": e, "code": "123456"}), 400, "VALIDATION_ERROR")
		})
	}
	if n := ts.mailCount(); n != 0 {
		t.Fatalf("%d messages queued for bad addresses", n)
	}
}

func TestOTPExternalUserID(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	verify := func(addr, ext string) *response {
		ts.Clock.Advance(31 * time.Second)
		wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
		return ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": ts.lastMail(addr).Code, "externalUserId": ext})
	}
	r := verify("f@example.com", "ext-1")
	wantOK(t, r)
	if r.Body["externalUserId"] != "ext-1" {
		t.Fatalf("externalUserId=%v", r.Body["externalUserId"])
	}
	wantError(t, verify("g@example.com", "ext-1"), 409, "EXTERNAL_ID_CONFLICT")
	// The conflicting sign-up created no user.
	users := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID, nil)
	if n := len(users.Body["users"].([]any)); n != 1 {
		t.Fatalf("users=%d, want 1", n)
	}
	wantError(t, verify("f@example.com", "ext-2"), 409, "EXTERNAL_ID_CONFLICT")
}

func TestDisabledUserCannotSignIn(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.login("h@example.com")
	tok, id := str(t, r.Body, "token"), str(t, r.Body, "userId")
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+id+"/disable", nil))
	wantError(t, ts.do("GET", "/api/v1/session", tok, nil), 401, "INVALID_SESSION")
	wantError(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "h@example.com"}), 403, "USER_DISABLED")
	wantError(t, ts.do("POST", "/api/v1/magic/send", ts.Key, map[string]any{"email": "h@example.com"}), 403, "USER_DISABLED")
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+id+"/enable", nil))
	ts.login("h@example.com")
}

// eventCategories counts the failures of every category the events API
// reports: stored events, and failures counted but not stored (suppressed).
func eventCategories(ts *testServer) map[string]int {
	r := ts.admin("GET", "/api/v1/admin/events?limit=1000", nil)
	out := map[string]int{}
	for _, e := range r.Body["events"].([]any) {
		if fc, ok := e.(map[string]any)["failureCode"].(string); ok {
			out[fc]++
		}
	}
	for _, c := range r.Body["suppressed"].([]any) {
		c := c.(map[string]any)
		out[c["failureCode"].(string)] += int(c["count"].(float64))
	}
	return out
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

var _ = http.StatusOK

// TestSendThrottleWindow: a refused send does not restart the 30-second
// window, and OTP and magic-link sends are throttled apart.
func TestSendThrottleWindow(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, path := range []string{"/api/v1/otp/send", "/api/v1/magic/send"} {
		t.Run(path, func(t *testing.T) {
			addr := "w" + strings.ReplaceAll(path, "/", "-") + "@example.com"
			wantOK(t, ts.do("POST", path, ts.Key, map[string]any{"email": addr}))
			ts.Clock.Advance(20 * time.Second)
			r := ts.do("POST", path, ts.Key, map[string]any{"email": addr})
			wantError(t, r, 429, "TOO_MANY_REQUESTS")
			if len(r.Body) != 3 {
				t.Fatalf("body=%s, want the bare envelope", r.Raw)
			}
			// 31 s after the first send, 11 s after the refusal.
			ts.Clock.Advance(11 * time.Second)
			wantOK(t, ts.do("POST", path, ts.Key, map[string]any{"email": addr}))
		})
	}
}

// TestOTPExternalUserIDInput: externalUserId must be a 1..255 character
// string; a user holding another id gets its own 409 text; the code is
// not spent by a refused verify.
func TestOTPExternalUserIDInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	addr := "k@example.com"
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	code := ts.lastMail(addr).Code
	for name, ext := range map[string]any{"empty": "", "too long": strings.Repeat("e", 256), "number": 7, "object": map[string]any{}} {
		t.Run(name, func(t *testing.T) {
			wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code, "externalUserId": ext}), 400, "VALIDATION_ERROR")
		})
	}
	r := ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code, "externalUserId": strings.Repeat("e", 255)})
	wantOK(t, r)
	if r.Body["externalUserId"] != strings.Repeat("e", 255) || obj(t, r.Body, "user")["externalUserId"] != r.Body["externalUserId"] {
		t.Fatalf("result=%s", r.Raw)
	}
	ts.Clock.Advance(31 * time.Second)
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	code = ts.lastMail(addr).Code
	r = ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code, "externalUserId": "other"})
	wantError(t, r, 409, "EXTERNAL_ID_CONFLICT")
	if !strings.Contains(r.Body["error"].(string), "already has") {
		t.Fatalf("text=%q", r.Body["error"])
	}
	// Same id again, or none: the unspent code signs in.
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code}))
}
