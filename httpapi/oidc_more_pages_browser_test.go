package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/security"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"latchkey/auth"
)

// TestOIDCDeviceSignOutErrorPagesInChromium goes through the hosted
// pages TestOIDCPagesInChromium does not reach, in a real browser, for
// a project with its own name, logo (served over https) and accent
// colour: the device page (the code form; a wrong code, typed and
// entered with the keyboard; the right one, which sends the browser
// through the sign-in, whose code page shows an address longer than a
// phone's screen is wide, and back; the confirm step with the client's
// scopes, allowed with the keyboard; connected; a second device denied;
// an expired code), the sign-out (an RP-initiated logout's
// confirmation, which then sends the browser to the client's
// post-logout address, and the signed-out page), and the error pages
// (an unknown client and an unregistered redirect URI at /authorize, a
// form posted after the browser's cookies were cleared, the store out
// of reach). Each page's content is asserted, its branding applied, a
// form's error tied to its field, and each is captured at 360 and 1280
// pixels wide (screenshots: nothing wider than 360), into
// LATCHKEY_SCREENSHOT_DIR when set.
func TestOIDCDeviceSignOutErrorPagesInChromium(t *testing.T) {
	t.Parallel()
	ts, down := newOutageServer(t)
	pid := ts.Project.ID
	logo := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Write([]byte(`<svg xmlns="http://www.w3.org/2000/svg" width="40" height="40"><rect width="40" height="40" rx="8" fill="#0a7f3e"/><circle cx="20" cy="20" r="9" fill="#fff"/></svg>`))
	}))
	t.Cleanup(logo.Close)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<!doctype html><title>App</title><h1>Back at the app</h1>"))
	}))
	t.Cleanup(app.Close)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{
		"displayName": "Acme", "logoUrl": logo.URL + "/logo.svg", "accentColor": "#0a7f3e"}))
	rp := ts.deviceRP(map[string]any{"postLogoutRedirectUris": []string{app.URL + "/bye"}})
	code := ts.newRP(pid, nil)
	issuer := ts.issuer(pid)

	ctx := newBrowser(t)
	// The logo's test server has its own certificate.
	if _, err := chromedp.Call(ctx, security.SetIgnoreCertificateErrors, security.SetIgnoreCertificateErrorsParams{Ignore: true}); err != nil {
		t.Fatalf("trust the logo's server: %v", err)
	}
	load := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		get(t, ctx, what, chromedp.WaitEvent(page.LoadEventFired, nil, a))
	}
	submit := func(what, form string) {
		t.Helper()
		load(what, chromedp.Click(chromedp.CSS(form+` button[type=submit]`)))
	}
	// want fails unless the page's heading is heading, it reads each of
	// texts, and it is branded: the project's name and logo (loaded),
	// the buttons in its colour; while the store is out of reach, the
	// branding cannot be read and the page looks built-in.
	want := func(what, heading string, texts ...string) {
		t.Helper()
		text := pageText(t, ctx)
		if h := get(t, ctx, "h1", chromedp.Text(chromedp.CSS("h1"))); h != heading {
			t.Fatalf("%s: heading %q, want %q; the page reads %q", what, h, heading, text)
		}
		for _, s := range texts {
			if !strings.Contains(text, s) {
				t.Fatalf("%s: no %q; the page reads %q", what, s, text)
			}
		}
		if down.Load() {
			return
		}
		brand := get(t, ctx, "brand", chromedp.Evaluate[string](`(() => {
			const b = document.getElementById("brand"), img = b && b.querySelector("img");
			const btn = document.querySelector("button:not(.alt)");
			return [b ? b.textContent : "", img && img.complete ? img.naturalWidth : 0,
				btn ? getComputedStyle(btn).backgroundColor : "no button"].join("|");
		})()`))
		if !strings.HasPrefix(brand, "Acme|40|") || strings.Contains(brand, "|rgb(") && !strings.HasSuffix(brand, "|rgb(10, 127, 62)") {
			t.Errorf("%s: branding %q, want Acme, the logo and buttons in rgb(10, 127, 62)", what, brand)
		}
	}
	screenshot := screenshots(t, ctx, "oidc")
	texts := auth.BuiltInPageTexts()

	// The device page: the code form, a wrong code.
	da := rp.deviceCodes()
	load("device page", chromedp.Navigate(issuer+"/device"))
	want("device page", texts["device_title"], texts["device_text"], texts["code_label"])
	if f := get(t, ctx, "focus", chromedp.Evaluate[string](`document.activeElement.id`)); f != "user_code" {
		t.Errorf("the device page's focus is on %q, want the code field", f)
	}
	screenshot("device-code")
	// With the keyboard alone: typed, Enter.
	load("type a wrong code", chromedp.SendKeys("#user_code", "BBBB-BBBB\r"))
	want("wrong code", texts["device_title"], auth.ErrUserCodeInvalid.Message)
	wantFieldError(t, ctx, "#user_code", auth.ErrUserCodeInvalid.Message)
	screenshot("device-wrong-code")

	// The right code: the sign-in, then back at the device page, whose
	// confirm step shows the client and its scopes in words.
	// An address longer than a phone's screen is wide: the code page
	// that shows it wraps it.
	const addr = "someone.with.a.rather.long.address@devicebrowser.example"
	setValue(t, ctx, "#user_code", da.UserCode)
	submit("the right code", `form[action$="/device"]`)
	want("sign-in", texts["sign_in_title"])
	setValue(t, ctx, "input[name=email]", addr)
	submit("send the code", `form[action$="/login"]`)
	want("code page", texts["code_title"], addr)
	screenshot("code-long-address")
	setValue(t, ctx, "input[name=code]", ts.lastMail(addr).Code)
	submit("enter the code", `form[action$="/login/code"]`)
	want("back at the device page", texts["device_title"])
	if got := get(t, ctx, "code", chromedp.Evaluate[string](`document.getElementById("user_code").value`)); got != da.UserCode {
		t.Fatalf("the device page holds %q, want %q", got, da.UserCode)
	}
	submit("continue", `form[action$="/device"]`)
	want("confirm", texts["device_title"], texts["device_confirm_text"], da.UserCode, "TV App",
		texts["scope_openid"], texts["scope_email"], texts["scope_offline_access"], texts["allow_button"], texts["deny_button"])
	screenshot("device-confirm")
	load("allow with the keyboard", chromedp.SendKeys(`button[name=decision][value=allow]`, "\r"))
	want("connected", texts["device_connected_title"], texts["device_connected_text"])
	screenshot("device-connected")
	ts.Clock.Advance(5 * time.Second)
	if r := rp.poll(da.DeviceCode); r.Status != http.StatusOK || r.Body["access_token"] == nil {
		t.Fatalf("the device's poll after allowing: %d %s", r.Status, r.Raw)
	}

	// A second device, denied (the browser is signed in: no sign-in).
	da2 := rp.deviceCodes()
	load("device page, code filled in", chromedp.Navigate(da2.VerificationURIComplete))
	submit("continue", `form[action$="/device"]`)
	load("deny", chromedp.Click(chromedp.CSS(`button[name=decision][value=deny]`)))
	want("denied", texts["device_denied_title"], texts["device_denied_text"])
	screenshot("device-denied")
	wantOAuthError(t, rp.poll(da2.DeviceCode), http.StatusBadRequest, "access_denied")

	// An expired code: the form again, with the message.
	da3 := rp.deviceCodes()
	ts.Clock.Advance(auth.OIDCDeviceLifetime)
	load("device page, expired code", chromedp.Navigate(da3.VerificationURIComplete))
	submit("continue", `form[action$="/device"]`)
	want("expired code", texts["device_title"], auth.ErrUserCodeInvalid.Message)
	wantFieldError(t, ctx, "#user_code", auth.ErrUserCodeInvalid.Message)
	screenshot("device-expired")

	// An RP-initiated logout without a hint: asked first, then sent to
	// the client's post-logout address with its state.
	q := url.Values{"client_id": {rp.id}, "post_logout_redirect_uri": {app.URL + "/bye"}, "state": {"bye-1"}}
	load("end session", chromedp.Navigate(issuer+auth.OIDCLogoutPath+"?"+q.Encode()))
	want("sign-out confirmation", texts["sign_out_title"], texts["sign_out_text"], texts["sign_out_button"])
	screenshot("signout-confirm")
	submit("sign out", `form[action$="/logout"]`)
	if u := get(t, ctx, "location", chromedp.Location()); u != app.URL+"/bye?state=bye-1" {
		t.Fatalf("after signing out the browser is at %s, want the client's post-logout address", u)
	}
	// Without a session or an address to go back to: the signed-out
	// page.
	load("signed-out page", chromedp.Navigate(issuer+auth.OIDCLogoutPath))
	want("signed-out page", texts["signed_out_title"], texts["signed_out_text"])
	screenshot("signed-out")

	// The error pages: a client that does not exist, a redirect URI the
	// client did not register.
	load("unknown client", chromedp.Navigate(issuer+"/authorize?"+url.Values{"client_id": {"nope"}, "redirect_uri": {app.URL + "/cb"},
		"response_type": {"code"}, "scope": {"openid"}}.Encode()))
	want("unknown client", texts["error_title"], auth.ErrUnknownClient.Message)
	screenshot("error-unknown-client")
	load("unregistered redirect URI", chromedp.Navigate(issuer+"/authorize?"+url.Values{"client_id": {code.id},
		"redirect_uri": {app.URL + "/cb"}, "response_type": {"code"}, "scope": {"openid"}}.Encode()))
	want("unregistered redirect URI", texts["error_title"], auth.ErrUnregisteredReturn.Message)
	screenshot("error-unregistered-redirect")
	// A sign-in form left open while the browser's cookies were
	// cleared: its form is no longer this browser's.
	load("sign-in page", chromedp.Navigate(code.config.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))))
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatalf("clear the cookies: %v", err)
	}
	setValue(t, ctx, "input[name=email]", addr)
	submit("a stale form", `form[action$="/login"]`)
	want("stale form", texts["error_title"], texts["error_form_not_from_page"])
	screenshot("error-stale-form")
	// The store out of reach: 503.
	down.Store(true)
	load("authorize, the store out of reach", chromedp.Navigate(code.config.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))))
	want("store out of reach", texts["error_title"], auth.ErrUnavailable.Message)
	screenshot("error-unavailable")
	down.Store(false)
}

// wantFieldError fails unless the page shows msg as an alert tied to
// the field sel (aria-describedby, aria-invalid).
func wantFieldError(t *testing.T, ctx context.Context, sel, msg string) {
	t.Helper()
	got := get(t, ctx, "field error", chromedp.Evaluate[string](`(() => {
		const f = document.querySelector(`+jsString(sel)+`);
		const e = f && document.getElementById(f.getAttribute("aria-describedby") || "");
		return e ? [f.getAttribute("aria-invalid"), e.getAttribute("role"), e.textContent].join("|") : "no error tied to the field";
	})()`))
	if got != "true|alert|"+msg {
		t.Errorf("the field %s: %q, want aria-invalid, an alert reading %q", sel, got, msg)
	}
}
