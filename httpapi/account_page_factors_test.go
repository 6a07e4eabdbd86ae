package httpapi_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
)

// The account page's step-up by a texted code and the authenticator
// app's removal, over real HTTP.

// texts returns how many text messages the fake Twilio was asked to send.
func (f *fakeTwilio) texts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.forms)
}

// TestAccountPageSMSStepUp: an account with a phone enrolled is offered
// a code texted to it as step-up (its last two digits shown, no new
// sign-in offered); the send goes to the enrolled phone through the
// API's use case, so its throttle holds (a second send at once is 429,
// nothing texted); a wrong code is refused with the code form kept, the
// right one steps up, and the change then goes through.
func TestAccountPageSMSStepUp(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	const addr, phone = "sms-page@example.com", "+15551230047"
	b := ts.newBrowser()
	ts.accountSignIn(b, addr)
	// The phone enrolled from the page's session (the API's calls with
	// its token), which proved it then; eleven minutes later it needs a
	// step-up.
	ts.enrollPhone(fake, b.ssoToken(ts.Project.ID), phone)
	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	pg := b.get(ts.accountURL())

	step := b.submitTo(pg, "/backup-codes", nil)
	wantPanel(t, "backup codes without a step-up", step, http.StatusForbidden, "Confirm it is you",
		"phone ending in 47", `action="`+ts.accountURL()+`/stepup-sms-send"`)
	for _, no := range []string{"/stepup-signin", "/stepup-totp", `action="` + ts.accountURL() + `/stepup-sms"`} {
		if strings.Contains(step.Body, no) {
			t.Errorf("the step-up of an account with a phone only offers %s: %s", no, step.Body)
		}
	}
	n := fake.texts()
	sent := b.submitTo(step, "/stepup-sms-send", nil)
	wantPanel(t, "text a code", sent, http.StatusOK, "Confirm it is you", "We texted a code to your phone ending in 47",
		`action="`+ts.accountURL()+`/stepup-sms"`, "Text me a new code")
	to, code := fake.last(t)
	if fake.texts() != n+1 || to != phone {
		t.Fatalf("%d texts to %s, want one to %s", fake.texts()-n, to, phone)
	}
	// The API's throttle: one text per 30 seconds.
	again := b.submitTo(sent, "/stepup-sms-send", nil)
	wantPanel(t, "text again at once", again, http.StatusTooManyRequests, "Confirm it is you", `class="error"`)
	if fake.texts() != n+1 {
		t.Error("a send over the throttle was texted")
	}
	wrong := b.submitTo(sent, "/stepup-sms", map[string]string{"code": wrongDigits(code)})
	wantPanel(t, "a wrong code", wrong, http.StatusUnauthorized, "Confirm it is you", `class="error"`,
		`action="`+ts.accountURL()+`/stepup-sms"`)
	wantPanel(t, "not a code", b.submitTo(wrong, "/stepup-sms", map[string]string{"code": "abc"}),
		http.StatusBadRequest, "Confirm it is you", `class="error"`)
	ok := b.submitTo(wrong, "/stepup-sms", map[string]string{"code": code})
	wantPanel(t, "the texted code", ok, http.StatusOK, "you may now make the change")
	if b.sessionMethod(ts.Project.ID) != "account" {
		t.Error("the SMS step-up replaced the browser's session")
	}
	n = len(ts.outbox())
	codes := b.submitTo(ok, "/backup-codes", nil)
	wantPanel(t, "backup codes after the step-up", codes, http.StatusOK, "Your new backup codes")
	// A step-up on the enrolled phone enrolls nothing.
	if got := ts.eventTypes(n); !slices.Equal(got, []string{"backup_codes.generated"}) {
		t.Errorf("events %v, want backup_codes.generated", got)
	}
	// The used code does not step up again.
	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	wantPanel(t, "the code again", b.submitTo(sent, "/stepup-sms", map[string]string{"code": code}),
		http.StatusUnauthorized, "Confirm it is you", `class="error"`)
}

// wrongDigits returns a six-digit code other than code.
func wrongDigits(code string) string {
	if code == "000000" {
		return "111111"
	}
	return "000000"
}

// TestAccountPageTOTPRemove: an enrolled authenticator app has a
// "Remove" on the page; on a stale session it asks for a step-up (by
// the app itself here), then removes the app (totp.removed), and the
// page offers to set one up again; the removal's form, posted again
// from the old page, says there is no app.
func TestAccountPageTOTPRemove(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const addr = "totp-remove@example.com"
	b := ts.newBrowser()
	pg := ts.accountSignIn(b, addr)
	if strings.Contains(pg.Body, "/totp-remove") {
		t.Fatalf("a Remove without an app: %s", pg.Body)
	}
	setup := b.submitTo(pg, "/totp-enroll", nil)
	secret := regexp.MustCompile(`id="totp-secret">([A-Z2-7]+)<`).FindStringSubmatch(setup.Body)[1]
	done := b.submitTo(setup, "/totp-confirm", map[string]string{"code": ts.totpCode(secret, 0)})
	wantPanel(t, "set up", done, http.StatusOK, "Set up: sign-ins ask for its code.", "Remove the authenticator app")

	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	page := b.get(ts.accountURL())
	n := len(ts.outbox())
	step := b.submitTo(page, "/totp-remove", nil)
	wantPanel(t, "remove on a stale session", step, http.StatusForbidden, "Confirm it is you", "/stepup-totp")
	if got := ts.eventTypes(n); len(got) != 0 {
		t.Errorf("a refused removal emitted %v", got)
	}
	ok := b.submitTo(step, "/stepup-totp", map[string]string{"code": ts.totpCode(secret, 0)})
	wantPanel(t, "step-up", ok, http.StatusOK, "you may now make the change")
	gone := b.submitTo(ok, "/totp-remove", nil)
	wantPanel(t, "remove", gone, http.StatusOK, "Your authenticator app was removed.", "Not set up.", "/totp-enroll")
	if got := ts.eventTypes(n); !slices.Equal(got, []string{"totp.removed"}) {
		t.Errorf("events %v, want totp.removed", got)
	}
	if strings.Contains(gone.Body, "/totp-remove") {
		t.Errorf("a Remove after the removal: %s", gone.Body)
	}
	wantPanel(t, "remove again from the old page", b.submitTo(page, "/totp-remove", nil), http.StatusNotFound,
		`class="error"`, "TOTP is not enrolled")
}

// TestAccountPageFactorFormsStale: each form of the SMS step-up and the
// app's removal, posted without the page's CSRF token or from another
// browser, answers the page that says the form is out of date, and
// changes nothing: nothing texted, no step-up, the app kept.
func TestAccountPageFactorFormsStale(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	const addr, phone = "stale-factors@example.com", "+15551230048"
	b := ts.newBrowser()
	ts.accountSignIn(b, addr)
	ts.enrollPhone(fake, b.ssoToken(ts.Project.ID), phone)
	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	pg := b.get(ts.accountURL())
	sent := b.submitTo(b.submitTo(pg, "/backup-codes", nil), "/stepup-sms-send", nil)
	_, code := fake.last(t)
	wantOK(t, ts.do("GET", "/api/v1/session", b.ssoToken(ts.Project.ID), nil))
	eve := ts.newBrowser()
	eve.get(ts.accountURL())
	n, texts := len(ts.outbox()), fake.texts()
	for _, c := range []struct {
		path   string
		fields map[string]string
	}{
		{"/stepup-sms-send", nil},
		{"/stepup-sms", map[string]string{"code": code}},
		{"/totp-remove", nil},
	} {
		for _, forged := range []struct {
			name   string
			by     *browser
			fields map[string]string
		}{
			{"no token", b, map[string]string{"csrf": "\x00"}},
			{"another browser", eve, nil},
		} {
			fields := map[string]string{}
			for k, v := range c.fields {
				fields[k] = v
			}
			for k, v := range forged.fields {
				fields[k] = v
			}
			form := sent
			if c.path == "/totp-remove" {
				form = ts.withTOTPRemoveForm(sent)
			}
			wantPanel(t, c.path+", "+forged.name, forged.by.submitTo(form, c.path, fields), http.StatusForbidden,
				"This form is out of date", "Reload the account page")
		}
	}
	if fake.texts() != texts || len(ts.outbox()) != n {
		t.Errorf("stale forms texted %d, emitted %v", fake.texts()-texts, ts.eventTypes(n))
	}
	// The code was not used by the stale form: it still steps up.
	wantPanel(t, "the code after the stale forms", b.submitTo(sent, "/stepup-sms", map[string]string{"code": code}),
		http.StatusOK, "you may now make the change")
}

// withTOTPRemoveForm returns pg with the app's removal form appended (as
// the overview of an account with an app shows it), its CSRF token the
// page's.
func (ts *testServer) withTOTPRemoveForm(pg *webPage) *webPage {
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(pg.Body)[1]
	cp := *pg
	cp.Body += `<form method="post" action="` + ts.accountURL() + `/totp-remove"><input type="hidden" name="csrf" value="` + csrf + `"></form>`
	return &cp
}
