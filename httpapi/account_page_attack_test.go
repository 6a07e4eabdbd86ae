package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Attacks on the account page from outside: what must not open it.

// TestAccountPageSecondFactorPending: on an account with TOTP, the
// emailed code alone (someone who reads the user's mail) does not open
// the account page: the sign-in page asks for the TOTP code, and going
// to the page directly with the cookie the code set sends the browser
// back to that second factor instead of showing the page, listing the
// sessions or ending one. Once the TOTP code is given, the page opens.
func TestAccountPageSecondFactorPending(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const addr = "pending-page@example.com"
	victim := str(t, ts.login(addr).Body, "token")
	totp := ts.enrollTOTP(victim)
	victimSession := str(t, ts.do("GET", "/api/v1/session", victim, nil).Body["session"].(map[string]any), "id")

	b := ts.newBrowser()
	mfa := b.signIn(b.get(ts.accountURL()), addr)
	wantPanel(t, "after the emailed code", mfa, http.StatusOK, "Second factor", `name="code"`)
	if b.ssoToken(ts.Project.ID) == "" {
		t.Fatal("the code set no session cookie: this test would prove nothing")
	}
	direct := b.get(ts.accountURL())
	if direct.Status != http.StatusOK || direct.URL.String() == ts.accountURL() || strings.Contains(direct.Body, `id="account-email"`) ||
		strings.Contains(direct.Body, victimSession) || !strings.Contains(direct.Body, "Second factor") {
		t.Fatalf("the account page with a second factor pending: %d %s %s", direct.Status, direct.URL, direct.Body)
	}
	// A form posted with a valid CSRF token of this browser (the token
	// needs no session) changes nothing either.
	secret := ""
	u, _ := url.Parse(ts.accountURL())
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "lk_csrf_"+ts.Project.ID {
			secret = c.Value
		}
	}
	form := url.Values{"sessionId": {victimSession}, "csrf": {ts.Svc.AccountFormToken(secret)}}
	req, _ := http.NewRequest("POST", ts.accountURL()+"/session-end", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if pg := b.do(req); strings.Contains(pg.Body, `id="account-email"`) || strings.Contains(pg.URL.String(), "done=") {
		t.Fatalf("an action with a second factor pending: %d %s %s", pg.Status, pg.URL, pg.Body)
	}
	wantOK(t, ts.do("GET", "/api/v1/session", victim, nil))

	ts.Clock.Advance(30 * time.Second)
	pg := b.submit(b.get(ts.accountURL()), map[string]string{"code": ts.totpCode(totp, 0)})
	if pg.Status != http.StatusOK || pg.URL.String() != ts.accountURL() || !strings.Contains(pg.Body, `id="account-email">`+addr+`<`) {
		t.Fatalf("after the TOTP code, not the account page: %d %s %s", pg.Status, pg.URL, pg.Body)
	}
}

// TestAccountPageSecondFactorBySMS: an account whose only second factor
// is a phone signs in to the account page with the emailed code and then
// a code texted to that phone (the forward-auth sign-in's second factor:
// sent through the API's use case); a wrong code keeps the form, and the
// account page opens only after the texted one.
func TestAccountPageSecondFactorBySMS(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	const addr, phone = "sms-only@example.com", "+15551230048"
	ts.enrollPhone(fake, str(t, ts.login(addr).Body, "token"), phone)

	b := ts.newBrowser()
	n := fake.texts()
	mfa := b.signIn(b.get(ts.accountURL()), addr)
	wantPanel(t, "after the emailed code", mfa, http.StatusOK, "Second factor", `name="code"`, "We texted a code to your phone")
	to, code := fake.last(t)
	if fake.texts() != n+1 || to != phone {
		t.Fatalf("%d texts to %s, want one to %s", fake.texts()-n, to, phone)
	}
	if direct := b.get(ts.accountURL()); strings.Contains(direct.Body, `id="account-email"`) {
		t.Fatalf("the account page opened before the texted code: %s", direct.Body)
	}
	wrong := b.submit(mfa, map[string]string{"code": wrongDigits(code)})
	wantPanel(t, "a wrong texted code", wrong, http.StatusUnauthorized, "Second factor", `name="code"`)
	pg := b.submit(wrong, map[string]string{"code": code})
	if pg.Status != http.StatusOK || pg.URL.String() != ts.accountURL() || !strings.Contains(pg.Body, `id="account-email">`+addr+`<`) {
		t.Fatalf("after the texted code, not the account page: %d %s %s", pg.Status, pg.URL, pg.Body)
	}
}
