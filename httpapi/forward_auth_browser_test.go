package httpapi_test

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestForwardAuthNginxInChromium: forward-auth behind a real nginx
// (TestForwardAuthNginx's configuration), driven by a real browser.
// nginx connects to latchkey from 127.0.0.2, the only trusted proxy;
// the browser, on 127.0.0.1, is not one. Chromium resolves the
// *.fa.localhost names to loopback itself and treats them as secure
// origins, so the Secure cookie for the cookie domain is kept as on
// HTTPS. The browser sends forged X-Forwarded-* and Remote-User headers
// with every request (DevTools' extra headers): through nginx they
// change nothing (nginx's X-Original-URL is what latchkey reads, and
// proxy_set_header replaces the identity headers), and sent to the check
// directly from the browser's address they are refused (400
// UNTRUSTED_PROXY). Signed out, the browser lands on the sign-in page
// with the original URL; the code from the mail the server queued signs
// it in and nginx serves the app with the identity headers; a group rule
// refuses the user (403 from nginx) until she is in the group; a rule
// with policy mfa sends a user with TOTP through the second-factor page
// before the app; an rd to another domain gets an error page, never a
// redirect; sign-out ends the session nginx let through.
func TestForwardAuthNginxInChromium(t *testing.T) {
	t.Parallel()
	ts := newFwdServerTrusting(t, "127.0.0.2/32")
	pid := ts.Project.ID
	ng := startNginx(t, ts, pid, echoUpstream(t), "127.0.0.2")
	_, port, _ := net.SplitHostPort(ng)
	app := "http://app." + faDomain + ":" + port
	signin := ts.faBase() + "/oidc/" + pid + "/signin?rd="
	const adaAddr, totpAddr = "fa-ada@example.com", "fa-totp@example.com"
	secret := ts.enrollTOTP(str(t, ts.login(totpAddr).Body, "token"))

	ctx := newBrowser(t)
	c := &fwdChrome{t: t, ts: ts, ctx: ctx}
	navigate, location, h1, submit, signIn, appSays := c.navigate, c.location, c.h1, c.submit, c.signIn, c.appSays

	// The browser forges the headers a proxy would send, with every
	// request.
	forged := network.Headers{"X-Forwarded-Proto": "http", "X-Forwarded-Host": "app." + faDomain, "X-Forwarded-Uri": "/public/",
		"X-Forwarded-Method": "GET", "Remote-User": "forged", "Remote-Email": "forged@example.com"}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: forged}); err != nil {
		t.Fatalf("extra headers: %v", err)
	}
	// Sent to the check from the browser's address: refused, not read.
	if res := navigate(ts.faBase() + "/api/v1/forward-auth/" + pid); res.Status != http.StatusBadRequest ||
		!strings.Contains(pageText(t, ctx), "UNTRUSTED_PROXY") {
		t.Fatalf("the check called by the browser with forged headers: %d %q", res.Status, pageText(t, ctx))
	}
	// A bypass path, signed out: the app, without identity (the forged
	// Remote-User replaced by nginx's empty one).
	if res := navigate(app + "/public/x.css"); res.Status != http.StatusOK || pageText(t, ctx) != "app /public/x.css user= email= groups= name=" {
		t.Fatalf("bypass path: %d %q", res.Status, pageText(t, ctx))
	}

	// Signed out: nginx sends the browser to the sign-in page with the
	// original URL, forged headers or not.
	orig := app + "/page?x=1&y=2"
	if res := navigate(orig); res.Status != http.StatusOK || location() != signin+url.QueryEscape(orig) {
		t.Fatalf("signed out: %d at %s, want the sign-in page %s", res.Status, location(), signin+url.QueryEscape(orig))
	}
	// The email code: back at the original URL, the app served with the
	// identity nginx got from latchkey.
	res := signIn(adaAddr)
	if location() != orig {
		t.Fatalf("after the code the browser is at %s, want %s: %q", location(), orig, pageText(t, ctx))
	}
	appSays(res, "/page", adaAddr, "")
	// The cookie the sign-in set is for the cookie domain, Secure,
	// HttpOnly, SameSite=Lax.
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{app + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, c := range cookies.Cookies {
		if c.Name == "lk_fa_"+pid {
			found = true
			if c.Domain != "."+faDomain || !c.Secure || !c.HTTPOnly || c.SameSite != network.CookieSameSiteLax {
				t.Errorf("forward-auth cookie %+v, want Domain .%s, Secure, HttpOnly, SameSite Lax", c, faDomain)
			}
		}
	}
	if !found {
		t.Fatalf("no forward-auth cookie for %s among %d", app, len(cookies.Cookies))
	}

	// A group rule: ada is in none of its groups (nginx's 403); in sre,
	// she passes.
	if res := navigate(app + "/ops/"); res.Status != http.StatusForbidden || !strings.Contains(pageText(t, ctx), "403") {
		t.Fatalf("group rule, user in no group: %d %q", res.Status, pageText(t, ctx))
	}
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+ts.userByEmail(adaAddr).ID, map[string]any{"groups": []string{"sre"}}))
	appSays(navigate(app+"/ops/"), "/ops/", adaAddr, "sre")

	// An rd to another domain: an error page on latchkey, no redirect.
	for _, rd := range []string{"https://evil.example/", "http://app." + faDomain + ".evil.example/"} {
		res := navigate(signin + url.QueryEscape(rd))
		if res.Status != http.StatusBadRequest || location() != signin+url.QueryEscape(rd) || !strings.Contains(pageText(t, ctx), "not under this project") {
			t.Fatalf("rd %s: %d at %s: %q", rd, res.Status, location(), pageText(t, ctx))
		}
	}

	// Sign-out: back to the app, which sends the browser to sign in.
	out := app + "/page"
	if res := navigate(ts.faBase() + "/oidc/" + pid + "/logout?rd=" + url.QueryEscape(out)); res.Status != http.StatusOK || location() != signin+url.QueryEscape(out) {
		t.Fatalf("after sign-out: %d at %s, want the sign-in page", res.Status, location())
	}

	// mfa: a user with TOTP is asked for it after the email code, then
	// served.
	admin := app + "/admin/"
	navigate(admin)
	if location() != signin+url.QueryEscape(admin) {
		t.Fatalf("mfa path signed out: at %s", location())
	}
	signIn(totpAddr)
	if h1() != "Second factor" {
		t.Fatalf("mfa path after the email code: not the second-factor page at %s: %q", location(), pageText(t, ctx))
	}
	// Not yet: the app still sends the browser to sign in, where the
	// second factor is asked again.
	if navigate(admin); h1() != "Second factor" {
		t.Fatalf("mfa path before the second factor: %q at %s", pageText(t, ctx), location())
	}
	setValue(t, ctx, "input[name=code]", ts.totpCode(secret, 0))
	res = submit("enter the TOTP code", "/signin/mfa")
	if location() != admin {
		t.Fatalf("after TOTP the browser is at %s: %q", location(), pageText(t, ctx))
	}
	appSays(res, "/admin/", totpAddr, "")
	// ... and outside the ops rule's groups: 403.
	if res := navigate(app + "/ops/"); res.Status != http.StatusForbidden {
		t.Fatalf("group rule, second user: %d %q", res.Status, pageText(t, ctx))
	}
}
