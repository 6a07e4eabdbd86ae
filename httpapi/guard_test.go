package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/passkeytest"
	"latchkey/store"
)

// The ways around recent authentication that an outside review found,
// over HTTP: removing the passkey that guards the account, a TOTP
// enrolment planted before the account had a factor, backup codes made
// before it, ceremonies started before it, an address claimed at a
// provider that does not link by address (and an import merged into
// it), and guessing the enrolled phone's codes without end.

// newGuardServer is newSMSServer with passkeys usable (the project's
// origin and relying party id set).
func newGuardServer(t *testing.T) (*testServer, *fakeTwilio) {
	t.Helper()
	ts, fake := newSMSServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID,
		map[string]any{"allowedOrigins": []string{pkOrigin}, "rpId": pkRPID}))
	return ts, fake
}

// TestRemovePasskeyNeedsStepUp performs the passkey-removal attack: on a
// passkey-only account, a fresh email-code session (the mailbox alone)
// removed the passkey with DELETE /passkeys/:id, after which the
// account had no factor and the same session passed every check. Now
// the removal is 403 STEP_UP_REQUIRED before the credential is looked
// up (an unknown one too), removes nothing, and the account stays
// guarded; a passkey sign-in may remove it (an unknown id is then 404).
func TestRemovePasskeyNeedsStepUp(t *testing.T) {
	t.Parallel()
	ts, authn := newPasskeyServer(t)
	const addr = "pk@example.com"
	owner := str(t, ts.login(addr).Body, "token")
	cred := ts.addPasskey(authn, owner)
	ts.Clock.Advance(time.Hour)

	att := str(t, ts.login(addr).Body, "token")
	for _, id := range []string{cred, "no-such-credential"} {
		wantStepUp(t, ts.do("DELETE", "/api/v1/passkeys/"+id, att, nil), stepUpFactorText)
	}
	if got := credentialIDs(ts.listPasskeys(att)); len(got) != 1 || got[0] != cred {
		t.Fatalf("passkeys %v after refused removals", got)
	}
	wantStepUp(t, ts.do("PATCH", "/api/v1/user", att, map[string]any{"email": "evil@example.net"}), stepUpFactorText)

	pk := str(t, ts.passkeyLogin(authn, addr).Body, "token")
	wantError(t, ts.do("DELETE", "/api/v1/passkeys/no-such-credential", pk, nil), 404, "PASSKEY_NOT_FOUND")
	wantOK(t, ts.do("DELETE", "/api/v1/passkeys/"+cred, pk, nil))
	if got := ts.listPasskeys(pk); len(got) != 0 {
		t.Fatalf("passkeys %v after the removal", got)
	}
}

// TestPlantedPendingTOTPRefused performs the planted-TOTP attack end to
// end: a mailbox-only session enrolls TOTP while the account has no
// factor and keeps the secret; the owner enrolls a phone; later a fresh
// email-code session confirmed the old enrolment, proving "TOTP" and
// opening every check. Now the phone dropped the pending enrolment: 404
// TOTP_NOT_ENROLLED, and the changes stay refused. A pending enrolment
// also ends 10 minutes after it was made (404), and confirming one needs
// recent authentication by the account's factors at the verify: a fresh
// email-code session may not confirm what the phone's session enrolled
// (403 STEP_UP_REQUIRED).
func TestPlantedPendingTOTPRefused(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	const addr = "plant@example.com"
	att := str(t, ts.login(addr).Body, "token")
	e := ts.do("POST", "/api/v1/totp/enroll", att, map[string]any{})
	wantOK(t, e)
	planted := str(t, e.Body, "secret")
	ts.Clock.Advance(time.Minute)
	owner := str(t, ts.login(addr).Body, "token")
	ts.enrollPhone(fake, owner, phoneOwner)
	ts.Clock.Advance(time.Hour)

	att = str(t, ts.login(addr).Body, "token")
	wantStepUp(t, ts.do("PATCH", "/api/v1/user", att, map[string]any{"email": "att@evil.example"}), stepUpFactorText)
	wantError(t, ts.do("POST", "/api/v1/totp/verify", att, map[string]any{"code": ts.totpCode(planted, 0)}), 404, "TOTP_NOT_ENROLLED")
	ts.wantSessionProofs(att, []string{"otp"}, true)
	wantStepUp(t, ts.do("PATCH", "/api/v1/user", att, map[string]any{"email": "att@evil.example"}), stepUpFactorText)

	// The owner's phone step-up enrolls TOTP; an email-code session may
	// not confirm it, and after 10 minutes nobody may.
	wantOK(t, ts.do("POST", "/api/v1/sms/send", owner, map[string]any{}))
	_, code := fake.last(t)
	wantOK(t, ts.do("POST", "/api/v1/sms/verify", owner, map[string]any{"code": code}))
	e = ts.do("POST", "/api/v1/totp/enroll", owner, map[string]any{})
	wantOK(t, e)
	secret := str(t, e.Body, "secret")
	wantStepUp(t, ts.do("POST", "/api/v1/totp/verify", att, map[string]any{"code": ts.totpCode(secret, 0)}), stepUpFactorText)
	ts.Clock.Advance(auth.TOTPPendingLifetime)
	r := ts.do("POST", "/api/v1/totp/verify", owner, map[string]any{"code": ts.totpCode(secret, 0)})
	wantError(t, r, 404, "TOTP_NOT_ENROLLED")
	if r.Body["error"] != "The TOTP enrolment expired (10 minutes); enroll again." {
		t.Fatalf("body %s", r.Raw)
	}
}

// TestPreFactorBackupCodesEnd: backup codes a mailbox-only session made
// before the account had a factor signed in later as backup_code, the
// factors' recovery, with no mailbox at all. Now the first factor (here
// a phone) ends them: 401 INVALID_CODE; the owner's new batch works.
func TestPreFactorBackupCodesEnd(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	const addr = "early@example.com"
	att := str(t, ts.login(addr).Body, "token")
	early := ts.backupCodes(att)
	owner := str(t, ts.login(addr).Body, "token")
	ts.enrollPhone(fake, owner, phoneOwner)
	wantError(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": addr, "code": early[0]}), 401, "INVALID_CODE")
	codes := ts.backupCodes(owner)
	ts.wantProofs(ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": addr, "code": codes[0]}), []string{"backup_code"}, false)
}

// TestCeremoniesFinishCheckedAgain performs the start-before-the-guard
// attack end to end: a mailbox-only session starts adding a passkey,
// texts its own phone and asks for a new address while the account has
// no factor; the owner enrolls TOTP; each finish was accepted. Now each
// is 403 STEP_UP_REQUIRED, and the owner's session cannot finish the
// passkey ceremony another session started (400 CHALLENGE_EXPIRED).
func TestCeremoniesFinishCheckedAgain(t *testing.T) {
	t.Parallel()
	ts, fake := newGuardServer(t)
	const addr = "race@example.com"
	att := str(t, ts.login(addr).Body, "token")
	c := ts.startCeremony("/api/v1/passkey/register/start", att, map[string]any{})
	cred, _ := create(t, passkeytest.New(pkOrigin), c)
	wantOK(t, ts.do("POST", "/api/v1/sms/send", att, map[string]any{"phone": phoneAttacker}))
	_, smsc := fake.last(t)
	wantOK(t, ts.do("PATCH", "/api/v1/user", att, map[string]any{"email": "evil@example.net"}))
	mailc := ts.lastMailOf("evil@example.net", "email_change").Code

	ts.Clock.Advance(time.Minute)
	owner := str(t, ts.login(addr).Body, "token")
	ts.enrollTOTP(owner)

	wantError(t, ts.verify("/api/v1/passkey/register/verify", owner, c.ID, cred), 400, "CHALLENGE_EXPIRED")
	wantStepUp(t, ts.verify("/api/v1/passkey/register/verify", att, c.ID, cred), stepUpFactorText)
	wantStepUp(t, ts.do("POST", "/api/v1/sms/verify", att, map[string]any{"code": smsc}), stepUpFactorText)
	wantStepUp(t, ts.do("POST", "/api/v1/user/email/verify", att, map[string]any{"code": mailc}), stepUpFactorText)
	if got := ts.listPasskeys(owner); len(got) != 0 {
		t.Fatalf("passkeys %v", got)
	}
	u := ts.do("GET", "/api/v1/user", owner, nil)
	wantOK(t, u)
	if got := obj(t, u.Body, "user")["email"]; got != addr {
		t.Fatalf("address %v", got)
	}
}

// TestOAuthPreHijackClosed performs the pre-hijack through a provider
// that does not link by address (a generic oidc one, linkByEmail
// false): its sign-in for an address nobody had created a verified
// account, and the real owner's later email sign-in landed in it, the
// provider account still linked. Now that account is unverified; the
// owner's sign-in replaces it (a new user, isNewUser true), and the
// provider account then finds the owner's account and is refused (409
// SIGN_IN_WITH_EMAIL_FIRST), so it cannot change the address.
func TestOAuthPreHijackClosed(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	r := ts.oauthSignIn(t, o, "alice") // claims Ada@Example.com, verified at the provider
	wantOK(t, r)
	attID := str(t, r.Body, "userId")
	if r.Body["isNewUser"] != true || obj(t, r.Body, "user")["emailVerified"] != false {
		t.Fatalf("the provider's new user: %s", r.Raw)
	}
	r = ts.login("ada@example.com")
	wantOK(t, r)
	ownerID := str(t, r.Body, "userId")
	if ownerID == attID || r.Body["isNewUser"] != true || obj(t, r.Body, "user")["emailVerified"] != true {
		t.Fatalf("the owner's sign-in: %s, want a new verified user (not %s)", r.Raw, attID)
	}
	if ids := ts.identities(t, ownerID); len(ids) != 0 {
		t.Fatalf("the provider account's link carried over: %+v", ids)
	}
	ts.Clock.Advance(time.Hour)
	wantError(t, ts.oauthSignIn(t, o, "alice"), 409, "SIGN_IN_WITH_EMAIL_FIRST")
	if ids := ts.identities(t, ownerID); len(ids) != 0 {
		t.Fatalf("a refused provider sign-in linked: %+v", ids)
	}
}

// TestImportMergeViaOIDCClosed: the operator's import of a legacy user
// with emailVerified true merged the legacy fields (externalUserId,
// name, company) into an account a non-linking provider had created for
// the same address. Now that account is one that registered itself:
// the line replaces it (created, not updated), and the provider account
// no longer finds it; without emailVerified true the line is rejected.
func TestImportMergeViaOIDCClosed(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	r := ts.oauthSignIn(t, o, "alice")
	wantOK(t, r)
	attID := str(t, r.Body, "userId")
	imp := ts.importUsers(ts.Project.ID, "application/x-ndjson",
		`{"email":"ada@example.com","externalUserId":"legacy-42","firstName":"Ada","companyId":"acme"}`+"\n")
	wantOK(t, imp)
	if imp.Body["created"] != 0.0 || imp.Body["updated"] != 0.0 || len(imp.Body["rejected"].([]any)) != 1 {
		t.Fatalf("import without emailVerified: %s, want the line rejected", imp.Raw)
	}
	imp = ts.importUsers(ts.Project.ID, "application/x-ndjson",
		`{"email":"ada@example.com","externalUserId":"legacy-42","firstName":"Ada","companyId":"acme","emailVerified":true}`+"\n")
	wantOK(t, imp)
	if imp.Body["created"] != 1.0 || imp.Body["updated"] != 0.0 || len(imp.Body["rejected"].([]any)) != 0 {
		t.Fatalf("import with emailVerified: %s, want the account replaced", imp.Raw)
	}
	wantError(t, ts.oauthSignIn(t, o, "alice"), 409, "SIGN_IN_WITH_EMAIL_FIRST")
	r = ts.login("ada@example.com")
	wantOK(t, r)
	if str(t, r.Body, "userId") == attID || r.Body["isNewUser"] != false || obj(t, r.Body, "user")["externalUserId"] != "legacy-42" {
		t.Fatalf("the owner's sign-in after the import: %s", r.Raw)
	}
}

// TestSMSFailuresLockThePhone: wrong codes of the enrolled phone count
// over all its codes as TOTP's do: after 10 the right code is refused
// too (401 VERIFICATION_FAILED) until the lockout passes or the operator
// resets it (POST /admin/users/:id/factors/sms/reset, recorded); the
// reset of a user without a phone is 404 SMS_NOT_ENROLLED, of an unknown
// user 404 USER_NOT_FOUND.
func TestSMSFailuresLockThePhone(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	l := ts.login("lock@example.com")
	tok, uid := str(t, l.Body, "token"), str(t, l.Body, "userId")
	ts.enrollPhone(fake, tok, phoneOwner)
	var code string
	for range auth.SMSMaxFailures / auth.SMSMaxAttempts {
		wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{}))
		_, code = fake.last(t)
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		for range auth.SMSMaxAttempts {
			wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": wrong}), 401, "VERIFICATION_FAILED")
		}
		ts.Clock.Advance(31 * time.Second)
	}
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{}))
	_, code = fake.last(t)
	r := ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code})
	wantError(t, r, 401, "VERIFICATION_FAILED")
	if r.Body["error"] != "Too many failed attempts. Try again later." {
		t.Fatalf("body %s", r.Raw)
	}

	reset := "/api/v1/admin/users/" + uid + "/factors/sms/reset"
	wantOK(t, ts.admin("POST", reset, map[string]any{}))
	if c := ts.methodEvents("sms", "reset"); c[""] != 1 {
		t.Fatalf("reset events %v", c)
	}
	wantOK(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}))
	other := str(t, ts.login("nophone@example.com").Body, "userId")
	wantError(t, ts.admin("POST", "/api/v1/admin/users/"+other+"/factors/sms/reset", map[string]any{}), 404, "SMS_NOT_ENROLLED")
	wantError(t, ts.admin("POST", "/api/v1/admin/users/no-such-user/factors/sms/reset", map[string]any{}), 404, "USER_NOT_FOUND")
	wantError(t, ts.admin("POST", reset, map[string]any{"phone": phoneOwner}), 400, "VALIDATION_ERROR")
	req, _ := http.NewRequest("POST", ts.URL+reset, nil)
	if res := ts.send(req); res.Status != 401 {
		t.Fatalf("reset without the admin token: %d", res.Status)
	}
}

// TestDashboardResetSMS: the dashboard's user page shows the enrolled
// phone's failures and lockout, and its reset asks first, then clears
// them (the phone stays); a user without a phone has no lockout to
// reset (404).
func TestDashboardResetSMS(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	c, csrf := signedInCSRF(t, ts)
	l := ts.login("ann@example.com")
	tok, uid := str(t, l.Body, "token"), str(t, l.Body, "userId")
	ts.enrollPhone(fake, tok, phoneOwner)
	for range auth.SMSMaxFailures / auth.SMSMaxAttempts {
		wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{}))
		_, code := fake.last(t)
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		for range auth.SMSMaxAttempts {
			ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": wrong})
		}
		ts.Clock.Advance(31 * time.Second)
	}
	failures := func() int {
		var n int
		ts.DB.View(ctx, func(tx store.Tx) error {
			if f, err := tx.Factor(uid, "sms"); err == nil {
				n = f.Failures
			}
			return nil
		})
		return n
	}
	user := "/admin/users/" + uid
	if _, body := c.get(user); !strings.Contains(body, "<th>SMS</th><td>enrolled, 10 consecutive failures, <span class=\"bad\">locked until") || !strings.Contains(body, `id="reset-sms"`) {
		t.Fatalf("user page:\n%s", body)
	}
	code, body := c.get(user + "/reset-sms")
	if code != 200 || !strings.Contains(body, "SMS failures") || !strings.Contains(body, "SMS locked until") || failures() != 10 {
		t.Fatalf("confirmation page: %d\n%s", code, body)
	}
	code, loc, _ := c.postRaw(user+"/reset-sms", url.Values{"csrf": {csrf}, "confirm": {"yes"}})
	if code != http.StatusSeeOther || loc != user || failures() != 0 || ts.smsPhone(uid) != phoneOwner {
		t.Fatalf("confirmed POST: %d to %q, failures %d", code, loc, failures())
	}
	if _, body := c.get(user); elementText(body, "notice") != "SMS lockout of ann@example.com reset." {
		t.Fatalf("notice %q", elementText(body, "notice"))
	}
	noSMS := str(t, ts.login("cy@example.com").Body, "userId")
	if code, body := c.get("/admin/users/" + noSMS + "/reset-sms"); code != 404 || !strings.Contains(body, "SMS is not enrolled") {
		t.Fatalf("reset SMS without a phone: %d", code)
	}
}
