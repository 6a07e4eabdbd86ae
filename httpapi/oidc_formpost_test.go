package httpapi_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// formPostAnswer reads the page that posts an authorization response to
// the relying party (response_mode=form_post): its action must be the
// redirect URI, its headers the pages' (a CSP that runs only the page's
// own script, by nonce, no framing, no caching, no referrer); it
// returns the posted fields, which must carry iss (RFC 9207).
func (rp *oidcRP) formPostAnswer(pg *webPage) url.Values {
	t := rp.ts.t
	t.Helper()
	if pg.Status == http.StatusOK && pg.b != nil && strings.Contains(pg.Body, `name="decision" value="allow"`) {
		pg = pg.b.submit(pg, map[string]string{"decision": "allow"})
	}
	m := oidcFormAction.FindStringSubmatch(pg.Body)
	if pg.Status != http.StatusOK || pg.Location != "" || m == nil || unescape(m[1]) != rp.config.RedirectURL {
		t.Fatalf("not a form_post page to %s: %d %q %s", rp.config.RedirectURL, pg.Status, pg.Location, pg.Body)
	}
	csp := pg.Header.Get("Content-Security-Policy")
	nonce := regexp.MustCompile(`<script nonce="([^"]+)">document.forms\[0\].submit\(\)</script>`).FindStringSubmatch(pg.Body)
	if nonce == nil || !strings.Contains(csp, "script-src 'nonce-"+nonce[1]+"'") || !strings.Contains(csp, "default-src 'none'") ||
		!strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(pg.Body, "onload=") {
		t.Fatalf("form_post page: CSP %q, body %s: want its submit script allowed by nonce only", csp, pg.Body)
	}
	if pg.Header.Get("X-Frame-Options") != "DENY" || pg.Header.Get("Cache-Control") != "no-store" ||
		pg.Header.Get("Referrer-Policy") != "no-referrer" || !strings.HasPrefix(pg.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("form_post page headers %v", pg.Header)
	}
	if !strings.Contains(pg.Body, `<noscript><button type="submit">Continue</button></noscript>`) {
		t.Errorf("form_post page without a button for a browser without scripts: %s", pg.Body)
	}
	q := url.Values{}
	for _, f := range oidcHidden.FindAllStringSubmatch(pg.Body, -1) {
		q.Add(f[1], unescape(f[2]))
	}
	if q.Get("iss") != rp.issuer {
		t.Fatalf("iss=%q in the form_post response, want %q (RFC 9207): %s", q.Get("iss"), rp.issuer, pg.Body)
	}
	return q
}

// TestOIDCFormPost: an authorization request with response_mode=form_post
// is answered by a page that posts code, state and iss to the redirect
// URI (op's own page carried no iss, which relying parties that check
// RFC 9207, as discovery announces, refuse), and the code exchanges as
// usual. Its refusals are posted too, with iss: an error of the sign-in
// pages (prompt=none without a session: login_required), one of the
// authorization endpoint (PKCE with plain: invalid_request) and a denied
// consent (access_denied). A request in query mode is still a redirect.
func TestOIDCFormPost(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"firstParty": true})
	formPost := oauth2.SetAuthURLParam("response_mode", "form_post")

	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	q := rp.formPostAnswer(b.signIn(rp.authorize(b, verifier, "st-fp", "no-fp", formPost), "formpost@example.com"))
	if q.Get("state") != "st-fp" || q.Get("code") == "" || q.Get("error") != "" {
		t.Fatalf("form_post answer %v, want code and state", q)
	}
	tok, err := rp.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange of the posted code: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := rp.provider.Verifier(&gooidc.Config{ClientID: rp.id}).Verify(ctx, raw)
	if err != nil || idt.Nonce != "no-fp" {
		t.Fatalf("ID token of the posted code: %v, nonce %v", err, idt)
	}

	// Single sign-on in form_post mode: the page again, no sign-in.
	q = rp.formPostAnswer(rp.authorize(b, oauth2.GenerateVerifier(), "st-sso", "n", formPost))
	if q.Get("state") != "st-sso" || q.Get("code") == "" {
		t.Errorf("single sign-on in form_post mode: %v", q)
	}
	// The same browser in query mode: a redirect, as before.
	if a := rp.answer(rp.authorize(b, oauth2.GenerateVerifier(), "st-q", "n")); a.Get("code") == "" {
		t.Errorf("query mode: %v", a)
	}

	// Refusals, posted.
	fresh := ts.newBrowser()
	q = rp.formPostAnswer(rp.authorize(fresh, oauth2.GenerateVerifier(), "st-none", "n", formPost, oauth2.SetAuthURLParam("prompt", "none")))
	if q.Get("error") != "login_required" || q.Get("state") != "st-none" || q.Get("code") != "" || q.Get("error_description") == "" {
		t.Errorf("prompt=none without a session in form_post mode: %v", q)
	}
	authz := url.Values{"client_id": {rp.id}, "redirect_uri": {rpRedirect}, "response_type": {"code"}, "scope": {"openid"},
		"state": {"st-plain"}, "response_mode": {"form_post"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)},
		"code_challenge_method": {"plain"}}
	q = rp.formPostAnswer(fresh.get(rp.issuer + "/authorize?" + authz.Encode()))
	if q.Get("error") != "invalid_request" || q.Get("state") != "st-plain" || !strings.Contains(q.Get("error_description"), "S256") {
		t.Errorf("PKCE plain in form_post mode: %v", q)
	}

	third := ts.newRP(ts.Project.ID, nil) // third-party: the consent page
	pg := fresh.signIn(third.authorize(fresh, oauth2.GenerateVerifier(), "st-deny", "n", formPost), "deny@example.com")
	if !strings.Contains(pg.Body, `name="decision" value="deny"`) {
		t.Fatalf("no consent page: %d %s", pg.Status, pg.Body)
	}
	q = third.formPostAnswer(fresh.submit(pg, map[string]string{"decision": "deny"}))
	if q.Get("error") != "access_denied" || q.Get("state") != "st-deny" || q.Get("code") != "" {
		t.Errorf("denied consent in form_post mode: %v", q)
	}
}

// TestOIDCFormPostStoreOutage: in form_post mode too, a store outage is
// the 503 error page with Retry-After, never a page posting a refusal
// to the client: for a browser with a session (single sign-on) and for
// one without (prompt=none, which would post login_required).
func TestOIDCFormPostStoreOutage(t *testing.T) {
	t.Parallel()
	ts, down := newOutageServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"firstParty": true})
	_, b := rp.signedIn("fp-outage@example.com")
	formPost := oauth2.SetAuthURLParam("response_mode", "form_post")
	down.Store(true)
	wantUnavailablePage(t, "authorize in form_post mode, signed in", rp.authorize(b, oauth2.GenerateVerifier(), "st", "n", formPost))
	wantUnavailablePage(t, "authorize in form_post mode, prompt=none",
		rp.authorize(ts.newBrowser(), oauth2.GenerateVerifier(), "st", "n", formPost, oauth2.SetAuthURLParam("prompt", "none")))
	down.Store(false)
	if q := rp.formPostAnswer(rp.authorize(b, oauth2.GenerateVerifier(), "st-after", "n", formPost)); q.Get("code") == "" {
		t.Fatalf("form_post after the outage: %v", q)
	}
}
