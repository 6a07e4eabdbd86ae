package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// The consent page of third-party clients, over real HTTP with go-oidc
// and x/oauth2 as the relying party.

// isConsentPage reports whether pg is the consent page.
func isConsentPage(pg *webPage) bool {
	return pg.Status == http.StatusOK && strings.Contains(pg.Body, `name="decision" value="allow"`)
}

// allowConsent allows the consent page pg, when it is one, and returns
// the answer (pg itself otherwise).
func allowConsent(pg *webPage) *webPage {
	if !isConsentPage(pg) {
		return pg
	}
	return pg.b.submit(pg, map[string]string{"decision": "allow"})
}

// wantConsentPage fails unless pg is the consent page for client name
// listing the plain words of every scope of words.
func wantConsentPage(t *testing.T, pg *webPage, name string, words ...string) {
	t.Helper()
	if !isConsentPage(pg) || !strings.Contains(pg.Body, `<button type="submit" name="decision" value="deny"`) ||
		!strings.Contains(pg.Body, "<strong>"+name+"</strong> would like to:") || !strings.Contains(pg.Body, `name="csrf" value="`) {
		t.Fatalf("not the consent page of %s: %d %s %s", name, pg.Status, pg.URL, pg.Body)
	}
	for _, w := range words {
		if !strings.Contains(pg.Body, "<li>"+w+"</li>") {
			t.Errorf("the consent page does not say %q: %s", w, pg.Body)
		}
	}
	if !strings.Contains(pg.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || pg.Header.Get("Cache-Control") != "no-store" ||
		pg.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Errorf("consent page headers %v", pg.Header)
	}
}

// Plain words of scopes on the consent page.
const (
	wordsOpenID  = "Know who you are: your account identifier"
	wordsProfile = "See your name"
	wordsEmail   = "See your email address and whether it is verified"
	wordsOffline = "Stay connected to your account while you are away, until you revoke it"
)

// TestOIDCConsent: a third-party client's sign-in stops at the consent
// page (the client's name, its scopes in plain words, allow and deny
// buttons, the pages' headers); a decision posted without the form's
// CSRF token is refused and records nothing; allow goes on to the
// client (the code exchanges for tokens; no refresh token without
// offline_access) and emits oidc.consent_granted; the next sign-in with
// the same scopes skips the page; a new scope (offline_access) asks
// again and only then gives a refresh token; prompt=consent asks even
// when covered; prompt=none without consent answers consent_required;
// deny answers access_denied; another browser cannot see the page; a
// first-party client never asks.
func TestOIDCConsent(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"name": "Photo Printer", "grantTypes": refreshGrants})
	const addr = "consent@example.com"
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	pg := b.signIn(rp.authorize(b, verifier, "st", "n1"), addr)
	wantConsentPage(t, pg, "Photo Printer", wordsOpenID, wordsProfile, wordsEmail)
	if strings.Contains(pg.Body, wordsOffline) {
		t.Errorf("offline access shown though not asked for")
	}

	// The callback is refused while the consent is pending.
	id := pg.URL.Query().Get("authRequestID")
	wantErrorPage(t, b.get(rp.issuer+"/authorize/callback?id="+id), http.StatusBadRequest, "cannot be completed")
	// Another browser cannot see the page nor answer it.
	other := ts.newBrowser()
	wantErrorPage(t, other.get(pg.URL.String()), http.StatusNotFound, "not for this browser")
	// Without the CSRF token, or with a wrong one: refused, nothing
	// recorded.
	events := len(ts.outbox())
	for _, csrf := range []string{"\x00", "x" + strings.Repeat("A", 42)} {
		wantErrorPage(t, b.submit(pg, map[string]string{"decision": "allow", "csrf": csrf}), http.StatusForbidden, "not sent from its page")
	}
	if got := ts.admin("GET", "/api/v1/admin/users/"+ts.userByEmail(addr).ID+"/consents", nil); len(got.Body["consents"].([]any)) != 0 {
		t.Fatalf("consent recorded without a CSRF token: %s", got.Raw)
	}
	// Neither allow nor deny: the page again.
	if again := b.submit(pg, map[string]string{"decision": "maybe"}); again.Status != http.StatusBadRequest || !strings.Contains(again.Body, `name="decision" value="allow"`) {
		t.Fatalf("decision=maybe: %d %s", again.Status, again.Body)
	}

	// Allow: the code, the tokens, the event.
	q := rp.answer(b.submit(pg, map[string]string{"decision": "allow"}))
	if q.Get("state") != "st" {
		t.Fatalf("state %q", q.Get("state"))
	}
	tok, err := rp.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if tok.RefreshToken != "" {
		t.Errorf("a refresh token without offline_access: %q", tok.RefreshToken)
	}
	if _, err := rp.provider.Verifier(&gooidc.Config{ClientID: rp.id}).Verify(ctx, tok.Extra("id_token").(string)); err != nil {
		t.Fatalf("ID token: %v", err)
	}
	evs := ts.outboxSince(events)
	if len(evs) != 1 || evs[0].Type != "oidc.consent_granted" || evs[0].Data["client_id"] != rp.id ||
		evs[0].Data["user_id"] != ts.userByEmail(addr).ID || evs[0].Data["client_name"] != "Photo Printer" {
		t.Fatalf("events after allow: %+v", evs)
	}
	if sc, _ := evs[0].Data["scopes"].([]any); len(sc) != 3 {
		t.Errorf("event scopes %v", evs[0].Data["scopes"])
	}

	// The same scopes again: no page.
	q = rp.answer(rp.authorize(b, verifier, "st2", "n2"))
	if q.Get("code") == "" {
		t.Fatalf("no code on the second sign-in: %v", q)
	}

	// A new scope asks again; allowed, it gives a refresh token.
	rp.config.Scopes = append(rp.config.Scopes, gooidc.ScopeOfflineAccess)
	v2 := oauth2.GenerateVerifier()
	pg = rp.authorize(b, v2, "st3", "n3")
	wantConsentPage(t, pg, "Photo Printer", wordsOffline)
	q = rp.answer(b.submit(pg, map[string]string{"decision": "allow"}))
	tok, err = rp.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(v2))
	if err != nil || !strings.HasPrefix(tok.RefreshToken, "lkrt_") {
		t.Fatalf("exchange after offline_access allowed: %v %+v", err, tok)
	}
	list := ts.admin("GET", "/api/v1/admin/users/"+ts.userByEmail(addr).ID+"/consents", nil)
	wantOK(t, list)
	cs := list.Body["consents"].([]any)
	if len(cs) != 1 {
		t.Fatalf("consents %s", list.Raw)
	}
	c := cs[0].(map[string]any)
	var scopes []string
	for _, s := range c["scopes"].([]any) {
		scopes = append(scopes, s.(string))
	}
	if c["clientId"] != rp.id || c["clientName"] != "Photo Printer" || !slices.Equal(scopes, []string{"openid", "profile", "email", "offline_access"}) {
		t.Errorf("consent %v", c)
	}
	if _, err := time.Parse(time.RFC3339, str(t, c, "grantedAt")); err != nil {
		t.Errorf("grantedAt: %v", err)
	}

	// prompt=consent asks though every scope is allowed.
	pg = rp.authorize(b, verifier, "st4", "n4", oauth2.SetAuthURLParam("prompt", "consent"))
	wantConsentPage(t, pg, "Photo Printer", wordsOpenID)
	// Deny: access_denied to the client, with state and iss.
	q = rp.answer(b.submit(pg, map[string]string{"decision": "deny"}))
	if q.Get("error") != "access_denied" || q.Get("state") != "st4" || q.Get("code") != "" {
		t.Fatalf("deny answered %v", q)
	}

	// prompt=none for a signed-in user who never allowed the client:
	// consent_required. The user signs in with a first-party client of
	// the project, which never asks.
	fp := ts.newRP(ts.Project.ID, map[string]any{"name": "Own App", "firstParty": true})
	b2 := ts.newBrowser()
	if q := rp.answer(b2.signIn(fp.authorize(b2, verifier, "fp", "n"), "other@example.com")); q.Get("code") == "" {
		t.Fatalf("first-party sign-in: %v", q)
	}
	q = rp.answer(rp.authorize(b2, verifier, "st5", "n5", oauth2.SetAuthURLParam("prompt", "none")))
	if q.Get("error") != "consent_required" || q.Get("state") != "st5" {
		t.Fatalf("prompt=none without consent answered %v", q)
	}
	// Without prompt=none the page is shown; deny there too.
	pg = rp.authorize(b2, verifier, "st6", "n6")
	wantConsentPage(t, pg, "Photo Printer")
	if q := rp.answer(b2.submit(pg, map[string]string{"decision": "deny"})); q.Get("error") != "access_denied" {
		t.Fatalf("deny answered %v", q)
	}
	if list := ts.admin("GET", "/api/v1/admin/users/"+ts.userByEmail("other@example.com").ID+"/consents", nil); len(list.Body["consents"].([]any)) != 0 {
		t.Fatalf("a denied consent was recorded: %s", list.Raw)
	}
}

// TestOIDCConsentRevoke: an operator lists a user's consents and revokes
// one: the client's refresh token and access token for the user are
// refused from then on, the next sign-in asks for consent again, and a
// second revoke is 404 CONSENT_NOT_FOUND. Unknown users are 404
// USER_NOT_FOUND; the user's consents to other clients stay.
func TestOIDCConsentRevoke(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"name": "Calendar Sync", "grantTypes": refreshGrants})
	rp.config.Scopes = append(rp.config.Scopes, gooidc.ScopeOfflineAccess)
	other := ts.newRP(ts.Project.ID, map[string]any{"name": "Other Tool"})
	const addr = "revoke@example.com"
	tok, b := rp.signedIn(addr)
	if tok.RefreshToken == "" {
		t.Fatal("no refresh token after consent")
	}
	other.answer(other.authorize(b, oauth2.GenerateVerifier(), "o", "n"))
	uid := ts.userByEmail(addr).ID
	path := "/api/v1/admin/users/" + uid + "/consents"
	list := ts.admin("GET", path, nil)
	wantOK(t, list)
	if n := len(list.Body["consents"].([]any)); n != 2 {
		t.Fatalf("%d consents: %s", n, list.Raw)
	}
	if r := rp.userinfo(tok.AccessToken); r.Status != http.StatusOK {
		t.Fatalf("userinfo before the revoke: %d", r.Status)
	}

	wantOK(t, ts.admin("DELETE", path+"/"+url.PathEscape(rp.id), nil))
	wantRefused(t, rp.refresh(tok.RefreshToken), http.StatusBadRequest, "invalid_grant")
	if r := rp.userinfo(tok.AccessToken); r.Status != http.StatusUnauthorized {
		t.Fatalf("userinfo after the revoke: %d %s", r.Status, r.Raw)
	}
	list = ts.admin("GET", path, nil)
	if cs := list.Body["consents"].([]any); len(cs) != 1 || cs[0].(map[string]any)["clientId"] != other.id {
		t.Fatalf("consents after the revoke: %s", list.Raw)
	}
	wantConsentPage(t, rp.authorize(b, oauth2.GenerateVerifier(), "again", "n"), "Calendar Sync", wordsOffline)

	wantError(t, ts.admin("DELETE", path+"/"+url.PathEscape(rp.id), nil), http.StatusNotFound, "CONSENT_NOT_FOUND")
	wantError(t, ts.admin("DELETE", "/api/v1/admin/users/nobody/consents/"+rp.id, nil), http.StatusNotFound, "USER_NOT_FOUND")
	wantError(t, ts.admin("GET", "/api/v1/admin/users/nobody/consents", nil), http.StatusNotFound, "USER_NOT_FOUND")
	if r := ts.do("GET", path, "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("without the admin token: %d", r.Status)
	}
}

// TestAccountPageApps: the account page lists the apps the user
// consented to, with the scopes allowed; removing one's access revokes
// the consent (its tokens are refused, the next sign-in asks again);
// removing it again is refused and changes nothing.
func TestAccountPageApps(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"name": "Calendar Sync"})
	const addr = "apps@example.com"
	tok, b := rp.signedIn(addr)
	pg := b.get(ts.accountURL())
	wantPanel(t, "the page", pg, http.StatusOK, `<h2 id="apps">Apps</h2>`, "Calendar Sync", "openid profile email",
		`name="clientId" value="`+rp.id+`"`)
	if r := rp.userinfo(tok.AccessToken); r.Status != http.StatusOK {
		t.Fatalf("userinfo before: %d", r.Status)
	}
	done := b.submitTo(pg, "/app-revoke", map[string]string{"clientId": rp.id})
	wantPanel(t, "remove access", done, http.StatusOK, "The app no longer has access", "No apps have access to your account.")
	if r := rp.userinfo(tok.AccessToken); r.Status != http.StatusUnauthorized {
		t.Fatalf("userinfo after the app's access was removed: %d %s", r.Status, r.Raw)
	}
	wantPanel(t, "remove it again", b.submitTo(pg, "/app-revoke", map[string]string{"clientId": rp.id}),
		http.StatusNotFound, `class="error"`)
	wantConsentPage(t, rp.authorize(b, oauth2.GenerateVerifier(), "again", "n"), "Calendar Sync", wordsEmail)
}
