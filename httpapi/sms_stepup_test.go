package httpapi_test

import (
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/sms"
	"latchkey/store"
)

const (
	phoneOwner    = "+15551230001"
	phoneAttacker = "+15559990002"
)

// newSMSServer is newTestServer texting through a local fake Twilio.
func newSMSServer(t *testing.T) (*testServer, *fakeTwilio) {
	t.Helper()
	fake := newFakeTwilio(t)
	tw, err := sms.NewTwilio("AC123", "secret-token", "+15550001111", fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	return newTestServer(t, func(c *auth.Config) { c.SMS = tw }), fake
}

// last returns the recipient and code of the newest text message.
func (f *fakeTwilio) last(t testing.TB) (to, code string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.forms) == 0 {
		t.Fatal("no text message sent")
	}
	m := f.forms[len(f.forms)-1]
	return m["To"], smsCode.FindString(m["Body"])
}

// enrollPhone texts phone from tok and verifies its code.
func (ts *testServer) enrollPhone(f *fakeTwilio, tok, phone string) {
	ts.t.Helper()
	wantOK(ts.t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": phone}))
	_, code := f.last(ts.t)
	wantOK(ts.t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}))
	ts.Clock.Advance(31 * time.Second) // past the SMS send throttle
}

// smsPhone returns userID's enrolled phone.
func (ts *testServer) smsPhone(userID string) string {
	ts.t.Helper()
	var phone string
	ts.DB.View(ctx, func(tx store.Tx) error {
		if f, err := tx.Factor(userID, "sms"); err == nil {
			phone = f.Phone
		}
		return nil
	})
	return phone
}

// TestSMSPhoneBoundToEnrolled performs the attack of issue 13 finding 4:
// a session holder texts a code to their own phone to replace the
// enrolled one. Now the send is 403 STEP_UP_REQUIRED, nothing is texted
// and the enrolled phone stays; the refusal is an event (risk_blocked).
// The session that enrolled the phone proved it then, for 10 minutes
// only. Without a phone, or with the enrolled one, a send goes to the
// enrolled phone; without a phone before any enrolment it is 400.
func TestSMSPhoneBoundToEnrolled(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	login := ts.login("owner@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	wantError(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{}), 400, "VALIDATION_ERROR")
	ts.enrollPhone(fake, tok, phoneOwner) // the first enrolment: a fresh sign-in is enough

	stolen := str(t, ts.login("owner@example.com").Body, "token")
	for i, tk := range []string{stolen, tok} {
		if i == 1 {
			ts.Clock.Advance(auth.StepUpWindow) // past the enrolment's proof
		}
		sent := fake.requestCount()
		r := ts.do("POST", "/api/v1/sms/send", tk, map[string]any{"phone": phoneAttacker})
		wantError(t, r, 403, "STEP_UP_REQUIRED")
		if r.Body["error"] != "Verify with your current phone or another factor first." || len(r.Body) != 3 {
			t.Fatalf("body %s", r.Raw)
		}
		if fake.requestCount() != sent {
			t.Fatal("a refused send reached the provider")
		}
	}
	// Whatever code is pending is the owner's phone's: verifying nothing
	// new can replace the phone.
	wantError(t, ts.do("POST", "/api/v1/sms/verify", stolen, map[string]any{"code": "000000"}), 401, "VERIFICATION_FAILED")
	if got := ts.smsPhone(uid); got != phoneOwner {
		t.Fatalf("enrolled phone %s, want %s", got, phoneOwner)
	}
	if c := ts.methodEvents("sms", "send"); c["risk_blocked"] != 2 {
		t.Fatalf("sms send events %v, want 2 risk_blocked", c)
	}

	for _, body := range []map[string]any{{}, {"phone": phoneOwner}} {
		wantOK(t, ts.do("POST", "/api/v1/sms/send", stolen, body))
		if to, _ := fake.last(t); to != phoneOwner {
			t.Fatalf("send %v texted %s, want the enrolled %s", body, to, phoneOwner)
		}
		ts.Clock.Advance(31 * time.Second)
	}
}

// TestSMSPhoneChangeAfterStepUp: each step-up the rules name lets this
// session text another phone within 10 minutes, and that phone's code
// replaces the enrolled one (sms.enrolled) and is a proof of its own;
// 10 minutes after the last proof, or on another session, it no longer
// counts.
func TestSMSPhoneChangeAfterStepUp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// stepUp performs the step-up from a session of the user and
		// returns the session token it counts for.
		stepUp func(ts *testServer, f *fakeTwilio, tok string) string
	}{
		{"enrolled phone's code", func(ts *testServer, f *fakeTwilio, tok string) string {
			wantOK(ts.t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{}))
			_, code := f.last(ts.t)
			wantOK(ts.t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}))
			return tok
		}},
		{"TOTP", func(ts *testServer, f *fakeTwilio, tok string) string {
			e := ts.do("POST", "/api/v1/totp/enroll", tok, map[string]any{})
			wantOK(ts.t, e)
			wantOK(ts.t, ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": ts.totpCode(str(ts.t, e.Body, "secret"), 0)}))
			return tok
		}},
		{"backup-code login", func(ts *testServer, f *fakeTwilio, tok string) string {
			codes := ts.backupCodes(tok)
			r := ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "change@example.com", "code": codes[0]})
			wantOK(ts.t, r)
			return str(ts.t, r.Body, "token")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts, fake := newSMSServer(t)
			login := ts.login("change@example.com")
			tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
			ts.enrollPhone(fake, tok, phoneOwner)
			other := str(t, ts.login("change@example.com").Body, "token")

			stepped := c.stepUp(ts, fake, tok)
			ts.Clock.Advance(31 * time.Second)
			wantError(t, ts.do("POST", "/api/v1/sms/send", other, map[string]any{"phone": phoneAttacker}), 403, "STEP_UP_REQUIRED")
			n := ts.countOutbox("sms.enrolled")
			ts.enrollPhone(fake, stepped, "+447700900123")
			if got := ts.smsPhone(uid); got != "+447700900123" || ts.countOutbox("sms.enrolled") != n+1 {
				t.Fatalf("phone %s, sms.enrolled %d→%d; want the new phone and one event", got, n, ts.countOutbox("sms.enrolled"))
			}

			// A proof lasts 10 minutes from when it was last made; the new
			// phone's enrolment (31 s ago) is one.
			ts.Clock.Advance(10*time.Minute - 62*time.Second)
			wantOK(t, ts.do("POST", "/api/v1/sms/send", stepped, map[string]any{"phone": phoneOwner}))
			ts.Clock.Advance(32 * time.Second)
			wantError(t, ts.do("POST", "/api/v1/sms/send", stepped, map[string]any{"phone": phoneOwner}), 403, "STEP_UP_REQUIRED")
		})
	}
}

// TestStolenSessionCannotMintFactors performs the attacker review's
// bypass of the phone binding: a session that neither signed in nor
// stepped up in the last 10 minutes, on an account with SMS enrolled,
// enrolled its own TOTP (a step-up of its own making), or generated
// backup codes (a backup-code login is a step-up and a new session), or
// added a passkey (a login that outlives the session). Each is now 403
// STEP_UP_REQUIRED and changes nothing; after a step-up with the
// enrolled phone they work. A fresh sign-in by email code does not count
// on such an account (finding 1: it would mint backup codes).
func TestStolenSessionCannotMintFactors(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	tok := str(t, ts.login("owner@example.com").Body, "token")
	ts.enrollPhone(fake, tok, phoneOwner)
	ts.Clock.Advance(auth.StepUpWindow + time.Second)

	attempts := []struct{ path string }{
		{"/api/v1/totp/enroll"}, {"/api/v1/backup-codes/generate"}, {"/api/v1/passkey/register/start"},
	}
	n := len(ts.outbox())
	for _, c := range attempts {
		r := ts.do("POST", c.path, tok, map[string]any{})
		wantError(t, r, 403, "STEP_UP_REQUIRED")
	}
	if got := ts.outboxSince(n); len(got) != 0 {
		t.Fatalf("refused calls emitted %v", got)
	}

	// A step-up with the enrolled phone's code opens them again.
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{}))
	_, code := fake.last(t)
	wantOK(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}))
	for _, c := range attempts {
		wantOK(t, ts.do("POST", c.path, tok, map[string]any{}))
	}

	// A fresh sign-in by email code is not a factor the account has.
	fresh := str(t, ts.login("owner@example.com").Body, "token")
	n = len(ts.outbox())
	for _, c := range attempts {
		wantError(t, ts.do("POST", c.path, fresh, map[string]any{}), 403, "STEP_UP_REQUIRED")
	}
	if got := ts.outboxSince(n); len(got) != 0 {
		t.Fatalf("refused calls emitted %v", got)
	}
}
