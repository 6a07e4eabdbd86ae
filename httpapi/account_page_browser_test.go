package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"latchkey/auth"
	"latchkey/auth/sms"
)

// TestAccountPageInChromium does every action of the account page in a
// real browser: the sign-in that comes back to the page, another
// session ended, TOTP set up from the QR code (the data: image shown:
// the CSP allows it), backup codes made, a passkey added by Chromium's
// virtual authenticator through the page's script, a stale session's
// step-up by that passkey, the passkey removed, a step-up by TOTP, a
// step-up by a code texted to the phone (enrolled through the API with
// the page's session), the authenticator app removed, the address
// changed with the keyboard alone (typed, Enter), and the sign-out. Each panel is captured at 360 and 1280 pixels wide (into
// LATCHKEY_SCREENSHOT_DIR when set), and nothing is wider than 360.
func TestAccountPageInChromium(t *testing.T) {
	t.Parallel()
	fake := newFakeTwilio(t)
	tw, err := sms.NewTwilio("AC123", "secret-token", "+15550001111", fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	ts := newLocalhostServer(t, func(c *auth.Config) { c.SMS = tw })
	const addr, next = "chrome-account@example.com", "chrome-new@example.com"
	other := str(t, ts.login(addr).Body, "token")

	ctx := newBrowser(t)
	load := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		get(t, ctx, what, chromedp.WaitEvent(page.LoadEventFired, nil, a))
	}
	click := func(what, sel string) {
		t.Helper()
		load(what, chromedp.Click(chromedp.CSS(sel)))
	}
	h1 := func() string {
		t.Helper()
		return get(t, ctx, "h1", chromedp.Text(chromedp.CSS("h1")))
	}
	want := func(what, heading, text string) {
		t.Helper()
		if h1() != heading || !strings.Contains(pageText(t, ctx), text) {
			t.Fatalf("%s: want %q with %q, the page reads %q", what, heading, text, pageText(t, ctx))
		}
	}
	screenshot := screenshots(t, ctx, "account")

	// Not signed in: the sign-in page, then back at the account page.
	load("open the account page", chromedp.Navigate(ts.accountURL()))
	want("sign-in", "Sign in", "email")
	setValue(t, ctx, "input[name=email]", addr)
	click("send the code", `form[action*="/signin"] button[type=submit]`)
	setValue(t, ctx, "input[name=code]", ts.lastMail(addr).Code)
	click("enter the code", `form[action*="/signin/code"] button[type=submit]`)
	want("signed in", "Your account", addr)
	screenshot("overview")

	// The other session ended.
	click("end the other session", `form[action$="/session-end"] input[value="`+ts.sessionID(other)+`"] ~ button`)
	want("session ended", "Your account", "The session was ended.")
	wantError(t, ts.do("GET", "/api/v1/session", other, nil), 401, "INVALID_SESSION")

	// TOTP from the QR code.
	click("set up TOTP", `form[action$="/totp-enroll"] button`)
	want("TOTP", "Set up an authenticator app", "Scan this code")
	if w := get(t, ctx, "QR image", chromedp.Evaluate[int](`document.querySelector("img").naturalWidth`)); w != 256 {
		t.Errorf("the QR code is not shown (natural width %d): the CSP refused it?", w)
	}
	screenshot("totp")
	secret := get(t, ctx, "secret", chromedp.Text(chromedp.CSS("#totp-secret")))
	setValue(t, ctx, "input[name=code]", ts.totpCode(secret, 0))
	click("confirm TOTP", `form[action$="/totp-confirm"] button`)
	want("TOTP confirmed", "Your account", "Your authenticator app is set up.")

	// Backup codes (the TOTP enrolment just proved the session).
	click("backup codes", `form[action$="/backup-codes"] button`)
	want("backup codes", "Your new backup codes", "shown only now")
	if n := get(t, ctx, "codes", chromedp.Evaluate[int](`document.querySelectorAll("#backup-codes li").length`)); n != 10 {
		t.Errorf("%d backup codes shown, want 10", n)
	}
	screenshot("backup-codes")
	load("done", chromedp.Navigate(ts.accountURL()))

	// A passkey by Chromium's virtual authenticator.
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn domain: %v", err)
	}
	if _, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
		Options: &webauthn.VirtualAuthenticatorOptions{Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21,
			Transport: webauthn.AuthenticatorTransportInternal, HasResidentKey: true, HasUserVerification: true,
			IsUserVerified: true, AutomaticPresenceSimulation: true, HasCmtgKey: true}}); err != nil {
		t.Fatalf("virtual authenticator: %v", err)
	}
	click("add a passkey", `form[action$="/passkey-add"] button`)
	want("passkey panel", "Add a passkey", "create a passkey")
	screenshot("passkey")
	click("create the passkey", "#passkey-button")
	want("passkey added", "Your account", "The passkey was added.")

	// Eleven minutes later: removing it asks for a step-up, by the passkey.
	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	click("remove the passkey", `form[action$="/passkey-remove"] button`)
	want("step-up", "Confirm it is you", "recent proof")
	screenshot("stepup")
	click("step up with the passkey", "#passkey-button")
	want("stepped up", "Your account", "you may now make the change")
	click("remove the passkey", `form[action$="/passkey-remove"] button`)
	want("passkey removed", "Your account", "The passkey was removed.")

	// A step-up by TOTP.
	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	click("backup codes again", `form[action$="/backup-codes"] button`)
	want("step-up", "Confirm it is you", "authenticator app")
	setValue(t, ctx, "input[name=code]", ts.totpCode(secret, 0))
	click("step up with TOTP", `form[action$="/stepup-totp"] button`)
	want("stepped up", "Your account", "you may now make the change")

	// A phone, enrolled through the API with the page's session (just
	// proven by TOTP); eleven minutes later removing the authenticator
	// app asks for a step-up, by a texted code.
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{ts.accountURL()}})
	if err != nil {
		t.Fatal(err)
	}
	tok := ""
	for _, c := range cookies.Cookies {
		if c.Name == "lk_sso_"+ts.Project.ID {
			tok = c.Value
		}
	}
	ts.enrollPhone(fake, tok, "+15551230049")
	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	click("remove the app", `form[action$="/totp-remove"] button`)
	want("step-up", "Confirm it is you", "phone ending in 49")
	click("text me a code", `form[action$="/stepup-sms-send"] button`)
	want("texted", "Confirm it is you", "We texted a code to your phone ending in 49")
	screenshot("stepup-sms")
	_, code := fake.last(t)
	load("type the texted code", chromedp.SendKeys("#sms-code", code+"\r"))
	want("stepped up by SMS", "Your account", "you may now make the change")
	click("remove the app", `form[action$="/totp-remove"] button`)
	want("app removed", "Your account", "Your authenticator app was removed.")

	// The address, with the keyboard alone: type it, press Enter.
	load("type the new address", chromedp.SendKeys("#email", next+"\r"))
	want("address", "Confirm your new address", next)
	screenshot("address")
	load("type the code", chromedp.SendKeys("input[name=code]", ts.lastMail(next).Code+"\r"))
	want("address changed", "Your account", "Your email address was changed")

	// Signing out from the page.
	click("sign out", `form[action$="/session-end"] button`)
	want("signed out", "Signed out", "You are signed out.")
	screenshot("signed-out")
}
