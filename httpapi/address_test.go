package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEmailChangeNeedsProof performs the attack of issue 13 finding 2: a
// session holder renames the account to a victim's address. Before, the
// address switched at once, and the victim's next sign-in by code landed
// in the attacker's account. Now PATCH only mails a code to the new
// address; the account keeps its address, and the victim's sign-in makes
// a new account of their own.
func TestEmailChangeNeedsProof(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	attacker := ts.login("attacker@example.com")
	tok, uid := str(t, attacker.Body, "token"), str(t, attacker.Body, "userId")

	r := ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "victim@example.com"})
	wantOK(t, r)
	if u := obj(t, r.Body, "user"); u["email"] != "attacker@example.com" || r.Body["pendingEmail"] != "victim@example.com" {
		t.Fatalf("PATCH answered %s, want the current address and pendingEmail", r.Raw)
	}
	if got := obj(t, ts.do("GET", "/api/v1/user", tok, nil).Body, "user")["email"]; got != "attacker@example.com" {
		t.Fatalf("address after PATCH = %v, want it unchanged", got)
	}
	victim := ts.login("victim@example.com")
	if victim.Body["userId"] == uid || victim.Body["isNewUser"] != true {
		t.Fatalf("victim landed in %v (isNewUser %v); the attacker's account is %s", victim.Body["userId"], victim.Body["isNewUser"], uid)
	}
	// The attacker cannot finish the change without the code mailed to
	// the victim, and even with it the address is now taken.
	wantError(t, ts.do("POST", "/api/v1/user/email/verify", tok, map[string]any{"code": "123456"}), 401, "INVALID_CODE")
	wantError(t, ts.do("POST", "/api/v1/user/email/verify", tok, map[string]any{"code": ts.lastMailOf("victim@example.com", "email_change").Code}), 409, "EMAIL_IN_USE")
}

// TestEmailChangeVerified walks an address change: PATCH answers the
// current address and pendingEmail and mails a code to the new address;
// the code applies it (emailVerified true, user.updated), a notice goes
// to the old address, and the old address is free again.
func TestEmailChangeVerified(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("old@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	n := len(ts.outbox())

	p := ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": " New@Example.com "})
	wantOK(t, p)
	if u := obj(t, p.Body, "user"); u["id"] != uid || u["email"] != "old@example.com" || p.Body["pendingEmail"] != "new@example.com" {
		t.Fatalf("PATCH answered %s", p.Raw)
	}
	if k := ts.lastMailKind("new@example.com"); k != "email_change" {
		t.Fatalf("mail to the new address is %q, want email_change", k)
	}
	if ev := ts.outboxSince(n); len(ev) != 0 {
		t.Fatalf("PATCH emitted %v before the change", ev)
	}
	wantError(t, ts.do("POST", "/api/v1/user/email/verify", tok, map[string]any{"code": "000000"}), 401, "INVALID_CODE")

	v := ts.do("POST", "/api/v1/user/email/verify", tok, map[string]any{"code": ts.lastMail("new@example.com").Code})
	wantOK(t, v)
	if u := obj(t, v.Body, "user"); u["id"] != uid || u["email"] != "new@example.com" || u["emailVerified"] != true {
		t.Fatalf("verify answered %s", v.Raw)
	}
	wantEvents(t, ts.outboxSince(n), []outboxEvent{{"user.updated", map[string]any{"user_id": uid, "email": "new@example.com"}}})
	notice := ts.lastMail("old@example.com")
	if ts.lastMailKind("old@example.com") != "email_changed_notice" || notice.Code != "" || notice.Link != "" || notice.Project != "default" {
		t.Fatalf("notice to the old address: kind %q content %+v", ts.lastMailKind("old@example.com"), notice)
	}
	// The code is used up; the old address signs up someone new.
	wantError(t, ts.do("POST", "/api/v1/user/email/verify", tok, map[string]any{"code": ts.lastMail("new@example.com").Code}), 401, "INVALID_CODE")
	ts.Clock.Advance(31 * time.Second)
	if l := ts.login("new@example.com"); l.Body["userId"] != uid {
		t.Fatalf("new address signs in to %v, want %s", l.Body["userId"], uid)
	}
	if l := ts.login("old@example.com"); l.Body["isNewUser"] != true {
		t.Fatalf("old address: %s, want a new user", l.Raw)
	}
	if c := ts.methodEvents("email_change", "send"); c[""] != 1 {
		t.Fatalf("email_change send events %v", c)
	}
	if c := ts.methodEvents("email_change", "verify"); c[""] != 1 || c["invalid_code"] != 1 {
		t.Fatalf("email_change verify events %v", c)
	}
}

// TestEmailVerifyErrors: the confirmation code fails as otp/verify does,
// each case with its status, code and text, changing nothing.
func TestEmailVerifyErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("e@example.com").Body, "token")
	verify := func(code any) *response {
		return ts.do("POST", "/api/v1/user/email/verify", tok, map[string]any{"code": code})
	}
	wantText := func(r *response, status int, code, text string) {
		t.Helper()
		wantError(t, r, status, code)
		if got := r.Body["error"].(string); !strings.Contains(got, text) {
			t.Fatalf("error %q, want it to say %q", got, text)
		}
	}
	wantText(verify("123456"), 401, "INVALID_CODE", "No code is pending")
	for _, bad := range []any{"", "12a456"} {
		wantError(t, verify(bad), 400, "VALIDATION_ERROR")
	}
	wantError(t, verify(123456), 400, "VALIDATION_ERROR")

	// Expired.
	wantOK(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "x@example.com"}))
	code := ts.lastMail("x@example.com").Code
	ts.Clock.Advance(10 * time.Minute)
	wantText(verify(code), 401, "INVALID_CODE", "expired")
	wantText(verify(code), 401, "INVALID_CODE", "No code is pending")

	// Five wrong tries lock the code; the right one then fails too.
	ts.Clock.Advance(31 * time.Second)
	wantOK(t, ts.do("POST", "/api/v1/user/email/send", tok, map[string]any{}))
	code = ts.lastMail("e@example.com").Code
	for i := 1; i <= 5; i++ {
		text := "Invalid code."
		if i == 5 {
			text = "Too many attempts"
		}
		wantText(verify("000000"), 401, "INVALID_CODE", text)
	}
	wantText(verify(code), 401, "INVALID_CODE", "Too many attempts")
	if got := obj(t, ts.do("GET", "/api/v1/user", tok, nil).Body, "user"); got["email"] != "e@example.com" {
		t.Fatalf("user after failures %v", got)
	}

	// An address taken between PATCH and verify: 409, and the
	// confirmation is dropped. (The session is more than 10 minutes old
	// now: a change of address needs a fresh one.)
	ts.Clock.Advance(31 * time.Second)
	tok = str(t, ts.login("e@example.com").Body, "token")
	wantOK(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "race@example.com"}))
	code = ts.lastMail("race@example.com").Code
	ts.login("race@example.com")
	wantError(t, verify(code), 409, "EMAIL_IN_USE")
	wantText(verify(code), 401, "INVALID_CODE", "No code is pending")
}

// TestEmailChangeRequestErrors: PATCH with an address another user holds
// is 409 EMAIL_IN_USE and changes nothing (the first name sent with it
// included); sends past the per-address throttle are 429 with
// Retry-After; the same address as now starts nothing; a session is
// required.
func TestEmailChangeRequestErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("me@example.com").Body, "token")
	ts.login("taken@example.com")

	wantError(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "taken@example.com", "firstName": "Zed"}), 409, "EMAIL_IN_USE")
	if u := obj(t, ts.do("GET", "/api/v1/user", tok, nil).Body, "user"); u["firstName"] != nil {
		t.Fatalf("a refused PATCH changed the user: %v", u)
	}
	same := ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "ME@example.com"})
	wantOK(t, same)
	if same.Body["pendingEmail"] != nil {
		t.Fatalf("PATCH to the current address: %s", same.Raw)
	}

	wantOK(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "n@example.com"}))
	r := ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "n@example.com"})
	wantError(t, r, 429, "TOO_MANY_REQUESTS")
	if r.Header.Get("Retry-After") != "30" {
		t.Fatalf("Retry-After=%q, want 30", r.Header.Get("Retry-After"))
	}
	wantOK(t, ts.do("POST", "/api/v1/user/email/send", tok, map[string]any{}))
	s := ts.do("POST", "/api/v1/user/email/send", tok, map[string]any{})
	wantError(t, s, 429, "TOO_MANY_REQUESTS")
	if s.Header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	if c := ts.methodEvents("email_change", "send"); c["validation_error"] != 1 || c["rate_limited"] != 1 || c[""] != 1 {
		t.Fatalf("email_change send events %v", c)
	}
	if c := ts.methodEvents("email_verify", "send"); c["rate_limited"] != 1 || c[""] != 1 {
		t.Fatalf("email_verify send events %v", c)
	}
	for _, path := range []string{"/api/v1/user/email/send", "/api/v1/user/email/verify"} {
		wantError(t, ts.do("POST", path, ts.Key, map[string]any{}), 401, "INVALID_SESSION")
		wantError(t, ts.do("POST", path, "", map[string]any{}), 401, "INVALID_SESSION")
		wantError(t, ts.do("GET", path, tok, nil), 405, "METHOD_NOT_ALLOWED")
	}
	wantError(t, ts.do("POST", "/api/v1/user/email/send", tok, "[1]"), 400, "VALIDATION_ERROR")
}

// TestEmailChangeDirect: a project with emailChange "direct" keeps the
// contract's immediate change, and the address then counts as
// unverified; the project field is validated and shown, "verify" by
// default.
func TestEmailChangeDirect(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	path := "/api/v1/admin/projects/" + ts.Project.ID
	if got := obj(t, ts.admin("GET", path, nil).Body, "project")["emailChange"]; got != "verify" {
		t.Fatalf("default emailChange=%v, want verify", got)
	}
	for _, bad := range []any{"", "later", 1} {
		wantError(t, ts.admin("PATCH", path, map[string]any{"emailChange": bad}), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	c := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "direct", "emailChange": "direct"})
	wantOK(t, c)
	if got := obj(t, c.Body, "project")["emailChange"]; got != "direct" {
		t.Fatalf("created project emailChange=%v", got)
	}
	wantError(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "x", "emailChange": "sometimes"}), 400, "VALIDATION_ERROR")

	p := ts.admin("PATCH", path, map[string]any{"emailChange": "direct"})
	wantOK(t, p)
	if got := obj(t, p.Body, "project")["emailChange"]; got != "direct" {
		t.Fatalf("patched project emailChange=%v", got)
	}
	login := ts.login("d@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	mails, n := ts.mailCount(), len(ts.outbox())
	r := ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "d2@example.com"})
	wantOK(t, r)
	if u := obj(t, r.Body, "user"); u["email"] != "d2@example.com" || u["emailVerified"] != false || r.Body["pendingEmail"] != nil {
		t.Fatalf("direct PATCH answered %s", r.Raw)
	}
	if ts.mailCount() != mails {
		t.Fatal("a direct change sent mail")
	}
	wantEvents(t, ts.outboxSince(n), []outboxEvent{{"user.updated", map[string]any{"user_id": uid, "email": "d2@example.com"}}})
	if c := ts.methodEvents("email_change", "update"); c[""] != 1 {
		t.Fatalf("email_change update events %v", c)
	}

	// The attacker review's capture: a session holder switches the
	// account to a victim's address directly, then the victim signs in by
	// code. Nobody proved that address for the account, so the sign-in
	// replaces it: a new user, and the old session is gone.
	victim := ts.login("d2@example.com")
	if got := str(t, victim.Body, "userId"); got == uid || victim.Body["isNewUser"] != true {
		t.Fatalf("victim's sign-in after a direct change answered %s, want a new user (not %s)", victim.Raw, uid)
	}
	wantError(t, ts.do("GET", "/api/v1/user", tok, nil), 401, "INVALID_SESSION")
}
