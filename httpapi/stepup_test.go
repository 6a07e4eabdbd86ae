package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/passkeytest"
	"latchkey/mail"
)

// Recent authentication and how sessions were proven, over HTTP (the
// whole matrix of who may do what is auth's TestStepUpMatrix).

// The refusals' words, as the wire carries them.
const (
	stepUpFactorText = "Verify with a factor this account already has (a TOTP code, a code sent to the enrolled phone or a passkey), or sign in with a backup code, then retry within 10 minutes. An email code or link alone is not enough."
	stepUpStaleText  = "Sign in again, then retry within 10 minutes."
	stepUpPhoneText  = "Verify with your current phone or another factor first."
)

// wantStepUp checks a refusal: 403, the envelope and nothing else,
// code STEP_UP_REQUIRED and the message text.
func wantStepUp(t *testing.T, r *response, text string) {
	t.Helper()
	wantError(t, r, 403, "STEP_UP_REQUIRED")
	if r.Body["error"] != text || len(r.Body) != 3 {
		t.Fatalf("body %s, want the envelope with %q", r.Raw, text)
	}
}

// wantProofs checks a login result's amr and secondFactorPending, and
// that GET /session with its token says the same; it returns the token.
func (ts *testServer) wantProofs(r *response, amr []string, pending bool) string {
	ts.t.Helper()
	wantOK(ts.t, r)
	tok := str(ts.t, r.Body, "token")
	check := func(what string, body map[string]any) {
		ts.t.Helper()
		if got := fmt.Sprint(body["amr"]); got != fmt.Sprint(amr) || body["secondFactorPending"] != pending {
			ts.t.Fatalf("%s: amr %v secondFactorPending %v, want %v %v", what, body["amr"], body["secondFactorPending"], amr, pending)
		}
	}
	check("login result", r.Body)
	ts.wantSessionProofs(tok, amr, pending)
	return tok
}

// wantSessionProofs checks GET /session's amr and secondFactorPending.
func (ts *testServer) wantSessionProofs(tok string, amr []string, pending bool) {
	ts.t.Helper()
	s := ts.do("GET", "/api/v1/session", tok, nil)
	wantOK(ts.t, s)
	sess := obj(ts.t, s.Body, "session")
	if got := fmt.Sprint(sess["amr"]); got != fmt.Sprint(amr) || sess["secondFactorPending"] != pending {
		ts.t.Fatalf("GET /session: amr %v secondFactorPending %v, want %v %v", sess["amr"], sess["secondFactorPending"], amr, pending)
	}
}

// TestBackupCodeDetourClosed performs finding 1 of the security review
// end to end: on an account with TOTP and SMS, an email-code session
// could generate backup codes (its sign-in was recent), sign in with one
// (a "second factor"), and from there move SMS to its own phone. Now
// the direct move and the backup codes are both 403 STEP_UP_REQUIRED,
// and the email-code session shows its second factor pending. A TOTP
// step-up on a session opens the changes; a backup-code sign-in (with a
// code the owner holds) does too, and is no pending sign-in.
func TestBackupCodeDetourClosed(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	owner := ts.wantProofs(ts.login("victim@example.com"), []string{"otp"}, false)
	secret := ts.enrollTOTP(owner)
	ts.enrollPhone(fake, owner, phoneOwner)
	codes := ts.backupCodes(owner)
	ts.wantSessionProofs(owner, []string{"otp", "totp", "sms"}, false)

	stolen := ts.wantProofs(ts.login("victim@example.com"), []string{"otp"}, true)
	sent := fake.requestCount()
	wantStepUp(t, ts.do("POST", "/api/v1/sms/send", stolen, map[string]any{"phone": phoneAttacker}), stepUpPhoneText)
	n := len(ts.outbox())
	wantStepUp(t, ts.do("POST", "/api/v1/backup-codes/generate", stolen, map[string]any{}), stepUpFactorText)
	wantStepUp(t, ts.do("POST", "/api/v1/passkey/register/start", stolen, map[string]any{}), stepUpFactorText)
	wantStepUp(t, ts.do("POST", "/api/v1/totp/enroll", stolen, map[string]any{}), stepUpFactorText)
	if got := ts.outboxSince(n); len(got) != 0 || fake.requestCount() != sent {
		t.Fatalf("refused calls emitted %v or texted someone", got)
	}
	// The owner's codes were not replaced.
	backup := ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "victim@example.com", "code": codes[0]})
	recovered := ts.wantProofs(backup, []string{"backup_code"}, false)

	// A TOTP step-up on the email-code session (the owner, who holds the
	// authenticator) opens the changes.
	wantOK(t, ts.do("POST", "/api/v1/totp/verify", stolen, map[string]any{"code": ts.totpCode(secret, 0)}))
	ts.wantSessionProofs(stolen, []string{"otp", "totp"}, false)
	ts.backupCodes(stolen)
	// So does the backup-code sign-in, for recovery.
	ts.enrollPhone(fake, recovered, "+447700900123")
	if got := ts.smsPhone(str(t, backup.Body, "userId")); got != "+447700900123" {
		t.Fatalf("phone %s after the recovery session moved it", got)
	}
}

// TestStolenSessionCannotTakeAccount performs finding 3 end to end: a
// session older than 10 minutes on a TOTP account changed the address
// (then owned the account for good), deleted it, or enrolled a first
// phone. Each is now 403 STEP_UP_REQUIRED and changes nothing, in both
// emailChange modes, and a fresh email-code session fares no better;
// after a TOTP step-up on the session each works. On an account without
// factors an old session is refused the same changes and a fresh
// sign-in may make them.
func TestStolenSessionCannotTakeAccount(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	login := ts.login("owner@example.com")
	owner, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	secret := ts.enrollTOTP(owner)
	stolen := str(t, ts.login("owner@example.com").Body, "token")
	ts.Clock.Advance(auth.StepUpWindow)

	for _, mode := range []string{"verify", "direct", "verify"} {
		wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"emailChange": mode}))
		fresh := str(t, ts.login("owner@example.com").Body, "token")
		n, mails := len(ts.outbox()), ts.mailCount()
		for _, tok := range []string{stolen, fresh} {
			wantStepUp(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "attacker@example.com", "firstName": "Mallory"}), stepUpFactorText)
			wantStepUp(t, ts.do("DELETE", "/api/v1/user", tok, nil), stepUpFactorText)
			wantStepUp(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": phoneAttacker}), stepUpFactorText)
		}
		u := obj(t, ts.do("GET", "/api/v1/user", owner, nil).Body, "user")
		if u["email"] != "owner@example.com" || u["firstName"] != nil || ts.mailCount() != mails || fake.requestCount() != 0 || len(ts.outboxSince(n)) != 0 {
			t.Fatalf("%s: refused calls changed something: user %v, %d mails, %d texts, events %v", mode, u, ts.mailCount()-mails, fake.requestCount(), ts.outboxSince(n))
		}
	}
	if c := ts.methodEvents("email_change", "send"); c["risk_blocked"] != 4 {
		t.Fatalf("email_change send events %v, want 4 refusals recorded", c)
	}
	if c := ts.methodEvents("email_change", "update"); c["risk_blocked"] != 2 {
		t.Fatalf("email_change update events %v, want 2 refusals recorded", c)
	}

	// After a TOTP step-up the session may: the first phone, the
	// address, the account.
	wantOK(t, ts.do("POST", "/api/v1/totp/verify", stolen, map[string]any{"code": ts.totpCode(secret, 0)}))
	ts.enrollPhone(fake, stolen, phoneOwner)
	p := ts.do("PATCH", "/api/v1/user", stolen, map[string]any{"email": "moved@example.com"})
	wantOK(t, p)
	if p.Body["pendingEmail"] != "moved@example.com" {
		t.Fatalf("PATCH after a step-up: %s", p.Raw)
	}
	wantOK(t, ts.do("DELETE", "/api/v1/user", stolen, nil))
	wantError(t, ts.do("GET", "/api/v1/user", owner, nil), 401, "INVALID_SESSION")
	if ts.smsPhone(uid) != "" {
		t.Fatal("the deleted account kept its phone")
	}

	// No factors: an old session is refused, a fresh sign-in is enough.
	plain := str(t, ts.login("plain@example.com").Body, "token")
	ts.Clock.Advance(auth.StepUpWindow)
	wantStepUp(t, ts.do("PATCH", "/api/v1/user", plain, map[string]any{"email": "plain2@example.com"}), stepUpStaleText)
	wantStepUp(t, ts.do("DELETE", "/api/v1/user", plain, nil), stepUpStaleText)
	wantStepUp(t, ts.do("POST", "/api/v1/backup-codes/generate", plain, map[string]any{}), stepUpStaleText)
	wantStepUp(t, ts.do("POST", "/api/v1/sms/send", plain, map[string]any{"phone": phoneAttacker}), stepUpStaleText)
	plain = str(t, ts.login("plain@example.com").Body, "token")
	wantOK(t, ts.do("PATCH", "/api/v1/user", plain, map[string]any{"email": "plain2@example.com"}))
	wantOK(t, ts.do("DELETE", "/api/v1/user", plain, nil))
}

// TestLoginResultsShowProofs: every login result, and GET /session with
// its token, carries amr (how the session was proven, in order) and
// secondFactorPending (TOTP or SMS enrolled and neither proven on the
// session; a backup-code sign-in is not pending): email code, magic
// link, backup code, passkey sign-up and sign-in, external confirm and
// redeem, provider sign-in. Later proofs show on GET /session.
func TestLoginResultsShowProofs(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID,
		map[string]any{"allowedOrigins": []string{oauthApp, pkOrigin}, "rpId": pkRPID}))

	tok := ts.wantProofs(ts.login("a@example.com"), []string{"otp"}, false)
	link := ts.magicToken("a@example.com", nil)
	ts.wantProofs(ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(link), "", nil), []string{"link"}, false)
	codes := ts.backupCodes(tok)
	ts.wantProofs(ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "a@example.com", "code": codes[0]}), []string{"backup_code"}, false)

	// With TOTP enrolled, an email sign-in is pending until a TOTP code;
	// a failed code changes nothing.
	secret := ts.enrollTOTP(tok)
	ts.wantSessionProofs(tok, []string{"otp", "totp"}, false)
	codes = ts.backupCodes(tok) // those made before TOTP went with its enrolment
	ts.Clock.Advance(31 * time.Second)
	pending := ts.wantProofs(ts.login("a@example.com"), []string{"otp"}, true)
	link = ts.magicToken("a@example.com", nil)
	ts.wantProofs(ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(link), "", nil), []string{"link"}, true)
	ts.wantProofs(ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "a@example.com", "code": codes[1]}), []string{"backup_code"}, false)
	wantError(t, ts.do("POST", "/api/v1/totp/verify", pending, map[string]any{"code": ts.wrongTOTP(secret)}), 401, "VERIFICATION_FAILED")
	ts.wantSessionProofs(pending, []string{"otp"}, true)
	wantOK(t, ts.do("POST", "/api/v1/totp/verify", pending, map[string]any{"code": ts.totpCode(secret, 0)}))
	ts.wantSessionProofs(pending, []string{"otp", "totp"}, false)

	// Passkeys: the sign-up's session and a sign-in's; a passkey added
	// from a session proves it there, and then an email-code session of
	// the account may not add another.
	authn := passkeytest.New(pkOrigin)
	ts.wantProofs(ts.passkeySignUp(authn, "p@example.com"), []string{"passkey"}, false)
	ts.wantProofs(ts.passkeyLogin(authn, "p@example.com"), []string{"passkey"}, false)
	other := str(t, ts.login("q@example.com").Body, "token")
	ts.addPasskey(passkeytest.New(pkOrigin), other)
	ts.wantSessionProofs(other, []string{"otp", "passkey"}, false)
	wantStepUp(t, ts.do("POST", "/api/v1/passkey/register/start", str(t, ts.login("q@example.com").Body, "token"), map[string]any{}), stepUpFactorText)

	// External methods, both patterns.
	_, secretA := ts.method("bank", "direct")
	body := ts.confirmBody(map[string]any{"externalUserId": "e1", "method": "bank", "email": "e@example.com"})
	ts.wantProofs(ts.confirm(body, sign(secretA, body)), []string{"external"}, false)
	id, secretB := ts.method("kyc", "webhook")
	cb := ts.confirmBody(map[string]any{"externalUserId": "k1", "email": "k@example.com", "reference": "ref-1"})
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/callback/"+id, strings.NewReader(string(cb)))
	req.Header.Set("X-Service-Signature", sign(secretB, cb))
	wantOK(t, ts.send(req))
	ts.wantProofs(ts.do("POST", "/api/v1/external-auth/redeem", ts.Key, map[string]any{"method": "kyc", "reference": "ref-1"}), []string{"external"}, false)

	// A provider sign-in.
	code := appQuery(t, o.browse(t, ts.oauthStart(t), "alice")).Get("code")
	ts.wantProofs(ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code}), []string{"oauth:corp"}, false)
}

// TestAddressChangeEndsOtherSessions: a confirmed change of address ends
// every other session of the account (session.revoked each) and keeps
// the one that confirmed it; the notice to the old address names the
// new one masked and says in words how to get help, in the built-in
// wording and to a project's template ({{.NewEmailMasked}}).
func TestAddressChangeEndsOtherSessions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	first := ts.login("jane.doe@example.com")
	tok, uid := str(t, first.Body, "token"), str(t, first.Body, "userId")
	others := []string{str(t, ts.login("jane.doe@example.com").Body, "token"), str(t, ts.login("jane.doe@example.com").Body, "token")}
	keep := ts.sessionID(tok)
	var gone []outboxEvent
	for _, o := range others {
		gone = append(gone, outboxEvent{"session.revoked", map[string]any{"user_id": uid, "session_id": ts.sessionID(o)}})
	}
	bystander := str(t, ts.login("bystander@example.com").Body, "token")

	n := len(ts.outbox())
	ts.changeEmail(tok, "new.address@mail.example.org")
	wantEvents(t, ts.outboxSince(n), append([]outboxEvent{{"user.updated", map[string]any{"user_id": uid, "email": "new.address@mail.example.org"}}}, gone...))
	for _, o := range others {
		wantError(t, ts.do("GET", "/api/v1/session", o, nil), 401, "INVALID_SESSION")
	}
	if ts.sessionID(tok) != keep {
		t.Fatal("the confirming session changed")
	}
	wantOK(t, ts.do("GET", "/api/v1/session", bystander, nil))

	notice := ts.lastMailOf("jane.doe@example.com", "email_changed_notice")
	if notice.NewEmailMasked != "n***@m***.org" {
		t.Fatalf("notice names %q, want n***@m***.org", notice.NewEmailMasked)
	}
	m, err := mail.Render("email_changed_notice", "jane.doe@example.com", "auth@example.com", notice)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"The email address of your default account was changed to n***@m***.org.",
		"If you did not make this change, contact the support of default right away, and tell them that your account's address was changed without your consent.",
	} {
		if !strings.Contains(m.Text, want) {
			t.Fatalf("notice text %q lacks %q", m.Text, want)
		}
	}
	if !strings.Contains(m.HTML, "<b>n***@m***.org</b>") || strings.Contains(m.Text+m.HTML, "new.address") || strings.Contains(m.Text+m.HTML, "http") {
		t.Fatalf("notice:\n%s\n%s", m.Text, m.HTML)
	}

	// A project's template gets the masked address as NewEmailMasked.
	wantOK(t, ts.admin("PUT", tmplPath(ts, "/email_changed_notice/en"), map[string]any{
		"subject": "Address changed", "text": "Now {{.NewEmailMasked}}; was {{.Email}}.", "html": "<p>{{.NewEmailMasked}}</p>"}))
	ts.changeEmail(tok, "third@example.net")
	if c := ts.lastMailOf("new.address@mail.example.org", "email_changed_notice"); c.Text != "Now t***@e***.net; was new.address@mail.example.org." || c.HTML != "<p>t***@e***.net</p>" {
		t.Fatalf("templated notice %+v", c)
	}
}

// TestSessionShowsChangesAtOnce: GET /session answers from the store's
// memory for a session it knows, and shows every change the next call:
// TOTP enrolled from another session of the user makes this one's second
// factor pending, a wrong code changes nothing, a TOTP step-up on it
// ends that (amr grows), and its logout ends it (401 INVALID_SESSION).
func TestSessionShowsChangesAtOnce(t *testing.T) {
	ts := newTestServer(t)
	first := ts.wantProofs(ts.login("changes@example.com"), []string{"otp"}, false)
	tok := ts.wantProofs(ts.login("changes@example.com"), []string{"otp"}, false)
	ts.wantSessionProofs(tok, []string{"otp"}, false) // from memory
	secret := ts.enrollTOTP(first)
	ts.wantSessionProofs(tok, []string{"otp"}, true)
	wantError(t, ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": ts.wrongTOTP(secret)}), 401, "VERIFICATION_FAILED")
	ts.wantSessionProofs(tok, []string{"otp"}, true)
	wantOK(t, ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": ts.totpCode(secret, 0)}))
	ts.wantSessionProofs(tok, []string{"otp", "totp"}, false)
	ts.wantSessionProofs(first, []string{"otp", "totp"}, false)
	wantOK(t, ts.do("POST", "/api/v1/logout", tok, nil))
	wantError(t, ts.do("GET", "/api/v1/session", tok, nil), 401, "INVALID_SESSION")
	ts.wantSessionProofs(first, []string{"otp", "totp"}, false)
}
