package httpapi_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/auth"
	"latchkey/auth/passkeytest"
)

// The hosted sign-in's other ways in and second factors, over real
// HTTP with go-oidc as the relying party: a magic link instead of the
// code, a passkey (the page's ceremony answered by a software
// authenticator), a provider's button, and SMS and backup codes on the
// second-factor page. Each ends with the code exchanged and the ID
// token verified, its amr and acr saying how the user signed in.

// oidcIDClaims are the ID token claims these tests check.
type oidcIDClaims struct {
	Sub string   `json:"sub"`
	AMR []string `json:"amr"`
	ACR string   `json:"acr"`
	SID string   `json:"sid"`
}

// finish exchanges the code of the authorization response pg with
// verifier and returns the verified ID token's claims.
func (rp *oidcRP) finish(pg *webPage, verifier string) oidcIDClaims {
	t := rp.ts.t
	t.Helper()
	q := rp.answer(pg)
	tk, err := rp.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	idt, err := rp.provider.Verifier(&gooidc.Config{ClientID: rp.id}).Verify(ctx, tk.Extra("id_token").(string))
	if err != nil {
		t.Fatalf("ID token: %v", err)
	}
	var c oidcIDClaims
	if err := idt.Claims(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// wantAMR fails unless c says amr and acr.
func wantAMR(t *testing.T, c oidcIDClaims, amr []string, acr string) {
	t.Helper()
	if !slices.Equal(c.AMR, amr) || c.ACR != acr {
		t.Errorf("amr %v acr %q, want %v and %s", c.AMR, c.ACR, amr, acr)
	}
}

// sessionMethod returns the method GET /session names for the browser's
// session (its cookie's token).
func (b *browser) sessionMethod(pid string) string {
	b.ts.t.Helper()
	r := b.ts.do("GET", "/api/v1/sessions", b.ssoToken(pid), nil)
	wantOK(b.ts.t, r)
	for _, s := range r.Body["sessions"].([]any) {
		if m := s.(map[string]any); m["current"] == true {
			return m["method"].(string)
		}
	}
	return ""
}

// TestOIDCMagicLink: on the code page the user asks for a link instead;
// the mail's link opens a confirm page under the issuer that uses
// nothing (a mail scanner opening it twice changes nothing), its button
// signs in and answers the request (amr otp, acr level 1, the session's
// method oidc:<client>); the link then works no more, and its button
// without the page's CSRF token is refused.
func TestOIDCMagicLink(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	const addr = "link@example.com"
	verifier := oauth2.GenerateVerifier()
	code := b.submit(rp.authorize(b, verifier, "s", "n"), map[string]string{"email": addr})
	sent := b.submitTo(code, auth.OIDCSendLinkPath, nil)
	if sent.Status != http.StatusOK || !strings.Contains(sent.Body, "We sent a sign-in link to "+addr) {
		t.Fatalf("after asking for a link: %d %s", sent.Status, sent.Body)
	}
	link := ts.lastMailOf(addr, "magic").Link
	if !strings.HasPrefix(link, rp.issuer+auth.OIDCLinkPath+"?authRequestID=") {
		t.Fatalf("the mail's link %q is not the request's confirm page", link)
	}
	b.get(link) // a scanner's visit, say: nothing is used
	confirm := b.get(link)
	if confirm.Status != http.StatusOK || !strings.Contains(confirm.Body, `name="token"`) {
		t.Fatalf("confirm page: %d %s", confirm.Status, confirm.Body)
	}
	wantErrorPage(t, b.submitTo(confirm, auth.OIDCLinkPath, map[string]string{"csrf": "forged"}), http.StatusForbidden, "not sent from its page")
	c := rp.finish(b.submitTo(confirm, auth.OIDCLinkPath, nil), verifier)
	wantAMR(t, c, []string{"otp"}, auth.ACRSingleFactor)
	if m := b.sessionMethod(ts.Project.ID); m != "oidc:Test App" {
		t.Errorf("session method %q", m)
	}
	// Its request is answered: the link's page says so. Its token on
	// another request's page is used up: the error page, no session.
	b2 := ts.newBrowser()
	wantErrorPage(t, b2.get(link), http.StatusNotFound, "expired or was already used")
	next := rp.authorize(b2, verifier, "s2", "n2")
	u, _ := url.Parse(link)
	replay := b2.get(rp.issuer + auth.OIDCLinkPath + "?authRequestID=" + next.URL.Query().Get("authRequestID") + "&token=" + url.QueryEscape(u.Query().Get("token")))
	wantErrorPage(t, b2.submitTo(replay, auth.OIDCLinkPath, nil), http.StatusUnauthorized, "already used")
	if b2.ssoToken(ts.Project.ID) != "" {
		t.Error("a used link signed a browser in")
	}
}

// pageOptions reads the passkey ceremony of a sign-in page: its
// options and challenge id.
var (
	pageOptions   = regexp.MustCompile(`id="passkey" data-options="([^"]+)"`)
	pageChallenge = regexp.MustCompile(`name="challengeId" value="([^"]+)"`)
)

// TestOIDCPasskeyPage: with the base URL on localhost (the project's
// rpId, its own origin allowed), the sign-in page offers passkeys: the
// email field says autocomplete "username webauthn", the page carries a
// discoverable ceremony and its script, allowed by the CSP's nonce.
// The authenticator's assertion posted with the page's passkey form
// signs in: amr swk for its synced (backup-eligible) passkey, hwk for a
// security key's (not backup eligible). A forged assertion shows the sign-in page again
// with the reason. On 127.0.0.1 (no domain for passkeys) the page has
// no ceremony and no script.
func TestOIDCPasskeyPage(t *testing.T) {
	t.Parallel()
	ts := newLocalhostServer(t)
	origin := ts.URL
	a := passkeytest.New(origin)
	const addr = "pk@example.com"
	ts.passkeySignUp(a, addr)

	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	pg := rp.authorize(b, verifier, "s", "n")
	csp := pg.Header.Get("Content-Security-Policy")
	m, ch := pageOptions.FindStringSubmatch(pg.Body), pageChallenge.FindStringSubmatch(pg.Body)
	if m == nil || ch == nil || !strings.Contains(pg.Body, `autocomplete="username webauthn"`) ||
		!strings.Contains(csp, "script-src 'nonce-") || !strings.Contains(pg.Body, `<script nonce="`) ||
		!strings.Contains(pg.Body, `mediation = mediation`) || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("sign-in page without its passkey ceremony: CSP %q %s", csp, pg.Body)
	}
	opts := []byte(unescape(m[1]))

	// A forged assertion (a wrong signature): the page again, with why.
	forged, _, err := a.Get(opts, passkeytest.Tweak{BadSignature: true})
	if err != nil {
		t.Fatal(err)
	}
	again := b.submitTo(pg, auth.OIDCPasskeyPath, map[string]string{"credential": string(forged)})
	if again.Status != http.StatusBadRequest || !strings.Contains(again.Body, `class="error"`) || pageOptions.FindStringSubmatch(again.Body) == nil {
		t.Fatalf("forged assertion: %d %s", again.Status, again.Body)
	}
	m = pageOptions.FindStringSubmatch(again.Body)
	cred, _, err := a.Get([]byte(unescape(m[1])))
	if err != nil {
		t.Fatal(err)
	}
	c := rp.finish(b.submitTo(again, auth.OIDCPasskeyPath, map[string]string{"credential": string(cred)}), verifier)
	wantAMR(t, c, []string{"swk"}, auth.ACRSingleFactor) // a synced (backup-eligible) passkey

	// A security key (not backup eligible, cross-platform): hwk.
	key := passkeytest.New(origin)
	key.BackupEligible, key.BackedUp, key.Attachment, key.Transports = false, false, "cross-platform", []string{"usb"}
	ts.passkeySignUp(key, "key@example.com")
	kb := ts.newBrowser()
	kpg := rp.authorize(kb, verifier, "s", "n")
	km := pageOptions.FindStringSubmatch(kpg.Body)
	if km == nil {
		t.Fatalf("no ceremony: %s", kpg.Body)
	}
	kcred, _, err := key.Get([]byte(unescape(km[1])))
	if err != nil {
		t.Fatal(err)
	}
	wantAMR(t, rp.finish(kb.submitTo(kpg, auth.OIDCPasskeyPath, map[string]string{"credential": string(kcred)}), verifier),
		[]string{"hwk"}, auth.ACRSingleFactor)

	// On 127.0.0.1 the pages offer no passkeys.
	plain := newTestServer(t)
	prp := plain.newRP(plain.Project.ID, nil)
	pb := plain.newBrowser()
	p2 := prp.authorize(pb, verifier, "s", "n")
	if strings.Contains(p2.Body, `id="passkey"`) || strings.Contains(p2.Body, "<script") || strings.Contains(p2.Header.Get("Content-Security-Policy"), "script-src") {
		t.Errorf("a page on 127.0.0.1 offers passkeys: %s", p2.Body)
	}
}

// TestOIDCPasskeyFirst: for a client that requires a second factor, a
// user whose only factor is a passkey and who signs in by email code
// gets the sign-in page again, saying to sign in with the passkey first
// (setting up a factor needs a recent passkey sign-in on such an
// account), with the passkey offered; the passkey's sign-in goes on to
// the authenticator app's set-up.
func TestOIDCPasskeyFirst(t *testing.T) {
	t.Parallel()
	ts := newLocalhostServer(t)
	a := passkeytest.New(ts.URL)
	const addr = "pk-first@example.com"
	// A verified account (an email code's sign-in) that adds a passkey: a
	// self-registered passkey account would be replaced by the email
	// code's sign-in.
	ts.addPasskey(a, str(t, ts.login(addr).Body, "token"))
	ts.Clock.Advance(time.Minute) // past the address's send throttle

	strict := ts.newRP(ts.Project.ID, map[string]any{"name": "Strict", "requireMfa": true})
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	pg := b.signIn(strict.authorize(b, verifier, "s", "n"), addr)
	m := pageOptions.FindStringSubmatch(pg.Body)
	if pg.Status != http.StatusOK || !strings.HasSuffix(pg.URL.Path, auth.OIDCLoginPath) || m == nil ||
		!strings.Contains(pg.Body, auth.BuiltInPageTexts()["mfa_passkey_first_text"]) || !strings.Contains(pg.Body, `name="email"`) {
		t.Fatalf("a passkey holder signed in by email code for a requireMfa client: %d %s %s, want the sign-in page asking for the passkey",
			pg.Status, pg.URL, pg.Body)
	}
	// A send that fails there (a bad address) keeps saying why.
	pg = b.submit(pg, map[string]string{"email": "not an address"})
	if m = pageOptions.FindStringSubmatch(pg.Body); pg.Status != http.StatusBadRequest || m == nil ||
		!strings.Contains(pg.Body, auth.BuiltInPageTexts()["mfa_passkey_first_text"]) || !strings.Contains(pg.Body, `class="error"`) {
		t.Fatalf("a failed send on the passkey-first page: %d %s", pg.Status, pg.Body)
	}
	cred, _, err := a.Get([]byte(unescape(m[1])))
	if err != nil {
		t.Fatal(err)
	}
	intro := b.submitTo(pg, auth.OIDCPasskeyPath, map[string]string{"credential": string(cred)})
	if intro.Status != http.StatusOK || !strings.Contains(intro.Body, `name="method" value="enroll-start"`) {
		t.Fatalf("after the passkey: %d %s %s, want the set-up's intro", intro.Status, intro.URL, intro.Body)
	}

	// A client that does not require a second factor takes the email
	// code alone.
	plain := ts.newRP(ts.Project.ID, nil)
	b2 := ts.newBrowser()
	ts.Clock.Advance(time.Minute)
	wantAMR(t, plain.finish(b2.signIn(plain.authorize(b2, verifier, "s", "n"), addr), verifier), []string{"otp"}, auth.ACRSingleFactor)

	// A request that asks for a new sign-in (prompt=login) still says
	// why after the email code; prompt=none is answered
	// interaction_required.
	b3 := ts.newBrowser()
	ts.Clock.Advance(time.Minute)
	again := b3.signIn(strict.authorize(b3, verifier, "s", "n", oauth2.SetAuthURLParam("prompt", "login")), addr)
	if !strings.Contains(again.Body, auth.BuiltInPageTexts()["mfa_passkey_first_text"]) || pageOptions.FindStringSubmatch(again.Body) == nil {
		t.Fatalf("prompt=login: %d %s %s, want the sign-in page asking for the passkey", again.Status, again.URL, again.Body)
	}
	if q := strict.answer(strict.authorize(b3, verifier, "s", "n", oauth2.SetAuthURLParam("prompt", "none"))); q.Get("error") != "interaction_required" || q.Get("code") != "" {
		t.Fatalf("prompt=none: %v, want interaction_required", q)
	}

	// Where the pages cannot offer passkeys (the project's origins do not
	// cover the base URL), the page says so rather than asking for one.
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{"https://elsewhere.example"}}))
	b4 := ts.newBrowser()
	ts.Clock.Advance(time.Minute)
	none := b4.signIn(strict.authorize(b4, verifier, "s", "n"), addr)
	if none.Status != http.StatusOK || !strings.Contains(none.Body, html.EscapeString(auth.BuiltInPageTexts()["mfa_passkey_unavailable_text"])) ||
		pageOptions.FindStringSubmatch(none.Body) != nil {
		t.Fatalf("passkeys unavailable: %d %s", none.Status, none.Body)
	}
}

// TestOIDCProviderButton: the sign-in page has a button per provider of
// the project; it sends the browser to the provider, whose sign-in
// comes back to the request's page and answers it (amr fed, the
// session's method oidc:<client>). A return without the browser's
// verifier cookie (another browser) is refused and signs no one in.
func TestOIDCProviderButton(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	var stopAt string // a path of the server where the browser stops
	b.client.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		u := req.URL.String()
		if stopAt != "" && strings.HasPrefix(req.URL.Path, stopAt) {
			return http.ErrUseLastResponse
		}
		if strings.HasPrefix(u, ts.URL+"/") || strings.HasPrefix(u, o.URL+"/") {
			return nil
		}
		return http.ErrUseLastResponse
	}
	verifier := oauth2.GenerateVerifier()
	pg := rp.authorize(b, verifier, "s", "n")
	if !strings.Contains(pg.Body, "Continue with Corp") {
		t.Fatalf("no provider button: %s", pg.Body)
	}
	// providerLogin presses the button and signs alice in at the
	// provider; it returns the last answer.
	providerLogin := func(pg *webPage) *webPage {
		t.Helper()
		at := b.submitTo(pg, auth.OIDCProviderPath, map[string]string{})
		id := at.URL.Query().Get("authRequestID")
		if at.Status != http.StatusOK || !strings.HasPrefix(at.URL.String(), o.URL) || id == "" {
			t.Fatalf("provider's login page: %d %s", at.Status, at.URL)
		}
		req, _ := http.NewRequest("POST", o.URL+"/login/username", strings.NewReader(url.Values{
			"username": {"alice"}, "password": {"verysecure"}, "id": {id}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return b.do(req)
	}
	c := rp.finish(providerLogin(pg), verifier)
	wantAMR(t, c, []string{"fed"}, auth.ACRSingleFactor)
	if m := b.sessionMethod(ts.Project.ID); m != "oidc:Test App" {
		t.Errorf("session method %q", m)
	}

	// The way back, taken by another browser (no verifier cookie).
	pg = rp.authorize(ts.newBrowser(), verifier, "s2", "n2", oauth2.SetAuthURLParam("prompt", "login"))
	b = ts.newBrowser()
	b.client.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.Path, "/oidc/") && strings.Contains(req.URL.Path, auth.OIDCProviderPath) {
			return http.ErrUseLastResponse
		}
		return nil
	}
	stopAt = ""
	pg = rp.authorize(b, verifier, "s3", "n3", oauth2.SetAuthURLParam("prompt", "login"))
	back := providerLogin(pg)
	if back.Status != http.StatusFound || !strings.Contains(back.Location, auth.OIDCProviderPath+"?") {
		t.Fatalf("the provider's way back: %d %s", back.Status, back.Location)
	}
	other := ts.newBrowser()
	refused := other.get(back.Location)
	if refused.Status != http.StatusForbidden || !strings.Contains(refused.Body, "started in another browser") || other.ssoToken(ts.Project.ID) != "" {
		t.Fatalf("the way back in another browser: %d %s", refused.Status, refused.Body)
	}
}

// TestOIDCSecondFactorSMSAndBackup: a user with SMS enrolled (and no
// TOTP) gets the SMS form after the email code: "Text me a code" texts
// the enrolled phone, whose code answers the request (amr otp mfa, acr
// level 2). A user with TOTP and backup codes may pick a backup code
// instead (a link on the page): it signs in again, proven by the backup
// code (amr otp, acr level 1); a client that requires a second factor
// takes no backup code.
func TestOIDCSecondFactorSMSAndBackup(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	const addr = "sms@example.com"
	tok := str(t, ts.login(addr).Body, "token")
	ts.enrollPhone(fake, tok, "+15551234567")

	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	mfa := b.signIn(rp.authorize(b, verifier, "s", "n"), addr)
	if mfa.Status != http.StatusOK || !strings.Contains(mfa.Body, `name="method" value="sms"`) || !strings.Contains(mfa.Body, "Text me a code") {
		t.Fatalf("SMS second factor page: %d %s", mfa.Status, mfa.Body)
	}
	texted := b.submitTo(mfa, auth.OIDCSendSMSPath, nil)
	to, code := fake.last(t)
	if texted.Status != http.StatusOK || to != "+15551234567" || !strings.Contains(texted.Body, "We texted a code") {
		t.Fatalf("after texting: %d to %s %s", texted.Status, to, texted.Body)
	}
	wantAMR(t, rp.finish(b.submitTo(texted, auth.OIDCSecondFactorPath, map[string]string{"code": code}), verifier),
		[]string{"otp", "mfa"}, auth.ACRMultiFactor)

	// Backup codes, made by a session that proved the phone.
	r := ts.do("POST", "/api/v1/backup-codes/generate", tok, map[string]any{})
	wantOK(t, r)
	backup := r.Body["codes"].([]any)[0].(string)
	ts.Clock.Advance(2 * time.Minute) // past the email code's send throttle
	b = ts.newBrowser()
	mfa = b.signIn(rp.authorize(b, verifier, "s", "n"), addr)
	link := regexp.MustCompile(`<a href="([^"]+method=backup)">Use a backup code</a>`).FindStringSubmatch(mfa.Body)
	if link == nil {
		t.Fatalf("no backup code link: %s", mfa.Body)
	}
	form := b.get(unescape(link[1]))
	if !strings.Contains(form.Body, `name="method" value="backup"`) || !strings.Contains(form.Body, `<input id="code" name="code"`) {
		t.Fatalf("backup code page: %s", form.Body)
	}
	first := b.ssoToken(ts.Project.ID)
	wantAMR(t, rp.finish(b.submit(form, map[string]string{"code": backup}), verifier), []string{"otp"}, auth.ACRSingleFactor)
	if b.ssoToken(ts.Project.ID) == first || b.sessionMethod(ts.Project.ID) != "oidc:Test App" {
		t.Errorf("a backup code did not sign in again as the client's session")
	}

	// A client that requires a second factor takes no backup code.
	strict := ts.newRP(ts.Project.ID, map[string]any{"name": "Strict", "requireMfa": true})
	ts.Clock.Advance(2 * time.Minute)
	b = ts.newBrowser()
	mfa = b.signIn(strict.authorize(b, verifier, "s", "n"), addr)
	if strings.Contains(mfa.Body, "Use a backup code") {
		t.Errorf("a requireMfa client's page offers backup codes")
	}
	refused := b.submit(mfa, map[string]string{"method": "backup", "code": r.Body["codes"].([]any)[1].(string)})
	if refused.Status != http.StatusForbidden || !strings.Contains(refused.Body, "A backup code cannot be used") {
		t.Fatalf("backup code for a requireMfa client: %d %s", refused.Status, refused.Body)
	}
}
