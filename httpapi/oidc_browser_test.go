package httpapi_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"golang.org/x/oauth2"

	"latchkey/auth"
	"latchkey/auth/passkeytest"
)

// TestOIDCPagesInChromium goes through the hosted sign-in pages in a
// real browser, with go-oidc and x/oauth2 as the relying party whose
// callback is a small server on loopback: the sign-in page, the code
// read from the mail the server queued, the second-factor page (TOTP),
// the consent page (the client is third-party; allowed by its button),
// back at the relying party with a code whose tokens verify (amr otp
// mfa); then, in the same browser with prompt=login, a passkey held by
// Chromium's virtual authenticator (WebAuthn domain of the DevTools
// protocol) signs another user in through the page's script: the
// conditional request (autofill), which the virtual authenticator
// answers without a click (amr swk: the passkey is backup eligible).
// Each page is captured at 360 and 1280 pixels wide, into
// LATCHKEY_SCREENSHOT_DIR when set (to keep them), else the test's
// temp dir; the files are logged.
func TestOIDCPagesInChromium(t *testing.T) {
	t.Parallel()
	// Passkeys need a domain: the server's base URL is on localhost.
	ts := newLocalhostServer(t)
	answers := make(chan url.Values, 4)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" { // the browser asks for a favicon too
			http.NotFound(w, r)
			return
		}
		answers <- r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<!doctype html><title>App</title><h1>Back at the app</h1>"))
	}))
	t.Cleanup(app.Close)
	rp := ts.newRP(ts.Project.ID, map[string]any{"redirectUris": []string{app.URL + "/callback"}})

	// A user with TOTP, another with a passkey.
	const mfaAddr, pkAddr = "browser-mfa@example.com", "browser-pk@example.com"
	tok := str(t, ts.login(mfaAddr).Body, "token")
	secret := ts.enrollTOTP(tok)
	key := passkeytest.New(ts.URL)
	ts.passkeySignUp(key, pkAddr)
	cred := key.Credentials()[0]

	ctx := newBrowser(t)
	load := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		get(t, ctx, what, chromedp.WaitEvent(page.LoadEventFired, nil, a))
	}
	h1 := func() string {
		t.Helper()
		return get(t, ctx, "h1", chromedp.Text(chromedp.CSS("h1")))
	}
	screenshot := screenshots(t, ctx, "oidc")
	// back waits for the relying party's callback and returns the ID
	// token's claims.
	back := func(verifier, state string) oidcIDClaims {
		t.Helper()
		var q url.Values
		select {
		case q = <-answers:
		case <-time.After(10 * time.Second):
			t.Fatalf("the browser did not come back to the app: %q", pageText(t, ctx))
		}
		if q.Get("state") != state || q.Get("iss") != rp.issuer {
			t.Fatalf("authorization response %v", q)
		}
		loc := rp.config.RedirectURL + "?" + q.Encode()
		return rp.finish(&webPage{Status: http.StatusFound, Location: loc}, verifier)
	}

	// Email code, then TOTP.
	verifier := oauth2.GenerateVerifier()
	load("authorize", chromedp.Navigate(rp.config.AuthCodeURL("st1", oauth2.S256ChallengeOption(verifier))))
	if h1() != "Sign in" || get(t, ctx, "autocomplete", chromedp.Evaluate[string](`document.querySelector("input[name=email]").autocomplete`)) != "username webauthn" {
		t.Fatalf("not the sign-in page: %q", pageText(t, ctx))
	}
	// The page's script ran (the CSP let it): the passkey button shows.
	if get(t, ctx, "passkey button", chromedp.Evaluate[bool](`!document.getElementById("passkey-button").hidden`)) != true {
		t.Errorf("the passkey button is hidden: the page's script did not run")
	}
	screenshot("signin")
	setValue(t, ctx, "input[name=email]", mfaAddr)
	load("send the code", chromedp.Click(chromedp.CSS(`form[action$="/login"] button[type=submit]`)))
	if h1() != "Enter your code" {
		t.Fatalf("not the code page: %q", pageText(t, ctx))
	}
	screenshot("code")
	setValue(t, ctx, "input[name=code]", ts.lastMail(mfaAddr).Code)
	load("enter the code", chromedp.Click(chromedp.CSS(`form[action$="/login/code"] button[type=submit]`)))
	if h1() != "Second factor" {
		t.Fatalf("not the second-factor page: %q", pageText(t, ctx))
	}
	screenshot("mfa")
	ts.Clock.Advance(30 * time.Second)
	setValue(t, ctx, "input[name=code]", ts.totpCode(secret, 0))
	load("enter the TOTP code", chromedp.Click(chromedp.CSS(`form[action$="/login/mfa"] button[type=submit]`)))
	// The client is third-party: the consent page, allowed.
	if h1() != "Allow Test App?" {
		t.Fatalf("not the consent page: %q", pageText(t, ctx))
	}
	screenshot("consent")
	load("allow", chromedp.Click(chromedp.CSS(`button[name=decision][value=allow]`)))
	wantAMR(t, back(verifier, "st1"), []string{"otp", "mfa"}, auth.ACRMultiFactor)

	// A passkey in Chromium's virtual authenticator.
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatalf("WebAuthn domain: %v", err)
	}
	va, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
		Options: &webauthn.VirtualAuthenticatorOptions{Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21,
			Transport: webauthn.AuthenticatorTransportInternal, HasResidentKey: true, HasUserVerification: true,
			IsUserVerified: true, AutomaticPresenceSimulation: true,
			// cdproto always sends the credential's generateCmtgKeyOnNextOperation,
			// which Chromium refuses for an authenticator without the extension.
			HasCmtgKey: true}})
	if err != nil {
		t.Fatalf("virtual authenticator: %v", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(cred.Key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, webauthn.AddCredential, webauthn.AddCredentialParams{AuthenticatorID: va.AuthenticatorID,
		Credential: &webauthn.Credential{CredentialID: cred.ID, IsResidentCredential: true, RpID: "localhost", PrivateKey: pkcs8,
			UserHandle: cred.UserHandle, SignCount: float64(cred.SignCount) + 1, BackupEligibility: true, BackupState: true}}); err != nil {
		t.Fatalf("add the credential: %v", err)
	}
	// Chromium answers the page's conditional request (autofill) with
	// the discoverable credential at once: the page posts it and the
	// browser is back at the app without a click.
	verifier = oauth2.GenerateVerifier()
	load("authorize again", chromedp.Navigate(rp.config.AuthCodeURL("st2", oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("prompt", "login"))))
	// A user new to the client: the consent page, allowed.
	do(t, ctx, "the consent page", chromedp.WaitVisible(chromedp.CSS(`button[name=decision][value=allow]`)))
	load("allow", chromedp.Click(chromedp.CSS(`button[name=decision][value=allow]`)))
	c := back(verifier, "st2")
	wantAMR(t, c, []string{"swk"}, auth.ACRSingleFactor)
	if h1() != "Back at the app" {
		t.Errorf("after the passkey: %q", pageText(t, ctx))
	}

	// A client that requires a second factor, a user who has none: the
	// second-factor page sets up TOTP (its QR code loads: the page's CSP
	// allows the data: image), and the app's code answers the request.
	if _, err := chromedp.Call(ctx, webauthn.RemoveVirtualAuthenticator, webauthn.RemoveVirtualAuthenticatorParams{AuthenticatorID: va.AuthenticatorID}); err != nil {
		t.Fatalf("remove the virtual authenticator: %v", err)
	}
	strict := ts.newRP(ts.Project.ID, map[string]any{"redirectUris": []string{app.URL + "/callback"}, "firstParty": true, "requireMfa": true})
	const setupAddr = "browser-setup@example.com"
	verifier = oauth2.GenerateVerifier()
	load("authorize for a client requiring a second factor", chromedp.Navigate(strict.config.AuthCodeURL("st3", oauth2.S256ChallengeOption(verifier),
		oauth2.SetAuthURLParam("prompt", "login"))))
	setValue(t, ctx, "input[name=email]", setupAddr)
	load("send the code", chromedp.Click(chromedp.CSS(`form[action$="/login"] button[type=submit]`)))
	setValue(t, ctx, "input[name=code]", ts.lastMail(setupAddr).Code)
	load("enter the code", chromedp.Click(chromedp.CSS(`form[action$="/login/code"] button[type=submit]`)))
	if h1() != "Set up an authenticator app" {
		t.Fatalf("not the set-up page: %q", pageText(t, ctx))
	}
	screenshot("mfa-setup-intro")
	load("start the set-up", chromedp.Click(chromedp.CSS(`form[action$="/login/mfa"] button[type=submit]`)))
	if !get(t, ctx, "QR code", chromedp.Evaluate[bool](`(function(i){return i.complete && i.naturalWidth > 0})(document.querySelector("main img"))`)) {
		t.Errorf("the set-up's QR code did not load")
	}
	screenshot("mfa-setup")
	ts.Clock.Advance(30 * time.Second)
	setValue(t, ctx, "input[name=code]", ts.totpCode(get(t, ctx, "key", chromedp.Text(chromedp.CSS("#totp-secret"))), 0))
	load("confirm the set-up", chromedp.Click(chromedp.CSS(`form[action$="/login/mfa"] button[type=submit]`)))
	select {
	case q := <-answers:
		if q.Get("state") != "st3" {
			t.Fatalf("authorization response %v", q)
		}
		wantAMR(t, strict.finish(&webPage{Status: http.StatusFound, Location: strict.config.RedirectURL + "?" + q.Encode()}, verifier),
			[]string{"otp", "mfa"}, auth.ACRMultiFactor)
	case <-time.After(10 * time.Second):
		t.Fatalf("the browser did not come back to the app after the set-up: %q", pageText(t, ctx))
	}
}

// screenshots returns a function that captures the page in ctx at 360
// and 1280 pixels wide as <prefix>-<name>-<width>.png, into
// LATCHKEY_SCREENSHOT_DIR when set (to keep them), else the test's temp
// dir, logging each file; at 360 pixels nothing may be wider than the
// window.
func screenshots(t *testing.T, ctx context.Context, prefix string) func(name string) {
	shots := os.Getenv("LATCHKEY_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	return func(name string) {
		t.Helper()
		for _, width := range []int64{360, 1280} {
			do(t, ctx, "viewport", chromedp.EmulateViewport(width, 800))
			shot := get(t, ctx, "screenshot", chromedp.FullScreenshot(100))
			file := filepath.Join(shots, prefix+"-"+name+"-"+strconv.FormatInt(width, 10)+".png")
			if err := os.WriteFile(file, shot, 0o600); err != nil {
				t.Fatal(err)
			}
			if len(shot) < 1000 || !bytes.HasPrefix(shot, []byte("\x89PNG\r\n\x1a\n")) {
				t.Fatalf("screenshot %s: %d bytes", file, len(shot))
			}
			if width == 360 && get(t, ctx, "scroll width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)) > 360 {
				t.Errorf("%s is wider than 360 pixels", name)
			}
			t.Logf("screenshot %s", file)
		}
	}
}
