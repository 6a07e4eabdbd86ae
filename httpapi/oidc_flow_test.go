package httpapi_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/auth"
	"latchkey/store"
)

// The authorization code flow of a project's OpenID provider, end to
// end over real HTTP: coreos/go-oidc and x/oauth2 as the relying party,
// an http.Client with a cookie jar as the browser, the hosted sign-in
// pages with the code read from the mail the server queued.

// rpRedirect is the relying parties' redirect URI in these tests: the
// browser stops there (nothing listens), the test reads the answer.
const rpRedirect = "http://127.0.0.1:9/callback"

// oidcRP is a registered client and a relying party configured for it.
type oidcRP struct {
	ts       *testServer
	id       string
	secret   string
	issuer   string
	provider *gooidc.Provider
	config   oauth2.Config
}

// newRP registers a client of project pid (body adds to name, type and
// redirect URI) and discovers its issuer with go-oidc.
func (ts *testServer) newRP(pid string, body map[string]any) *oidcRP {
	t := ts.t
	t.Helper()
	in := map[string]any{"name": "Test App", "type": "confidential", "redirectUris": []string{rpRedirect}}
	for k, v := range body {
		in[k] = v
	}
	r := ts.admin("POST", "/api/v1/admin/projects/"+pid+"/clients", in)
	wantOK(t, r)
	rp := &oidcRP{ts: ts, id: str(t, obj(t, r.Body, "client"), "id"), issuer: ts.issuer(pid)}
	if s, ok := r.Body["clientSecret"].(string); ok {
		rp.secret = s
	}
	var err error
	if rp.provider, err = gooidc.NewProvider(ctx, rp.issuer); err != nil {
		t.Fatalf("go-oidc discovery: %v", err)
	}
	redirect := rpRedirect
	if uris, ok := in["redirectUris"].([]string); ok {
		redirect = uris[0]
	}
	rp.config = oauth2.Config{ClientID: rp.id, ClientSecret: rp.secret, Endpoint: rp.provider.Endpoint(), RedirectURL: redirect,
		Scopes: []string{gooidc.ScopeOpenID, "profile", "email"}}
	return rp
}

// browser is a browser: a cookie jar, redirects followed within the
// server, the last answer kept.
type browser struct {
	ts     *testServer
	client *http.Client
}

func (ts *testServer) newBrowser() *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	return &browser{ts: ts, client: &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if !strings.HasPrefix(req.URL.String(), ts.URL+"/") {
			return http.ErrUseLastResponse // the relying party's address
		}
		return nil
	}}}
}

// webPage is an answer the browser got.
type webPage struct {
	Status   int
	Header   http.Header
	Body     string
	URL      *url.URL // where it was answered from
	Location string   // for a redirect out of the server
	b        *browser // the browser that got it
}

// do sends req and follows redirects within the server.
func (b *browser) do(req *http.Request) *webPage {
	b.ts.t.Helper()
	res, err := b.client.Do(req)
	if err != nil {
		b.ts.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return &webPage{Status: res.StatusCode, Header: res.Header, Body: string(body), URL: res.Request.URL, Location: res.Header.Get("Location"), b: b}
}

// get opens u.
func (b *browser) get(u string) *webPage {
	b.ts.t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		b.ts.t.Fatal(err)
	}
	return b.do(req)
}

// submit posts the (first) form of pg with its hidden fields and values.
func (b *browser) submit(pg *webPage, values map[string]string) *webPage {
	b.ts.t.Helper()
	return b.submitTo(pg, "", values)
}

// submitTo posts the first form of pg whose action ends with path ("":
// the first form) with its hidden fields and values.
func (b *browser) submitTo(pg *webPage, path string, values map[string]string) *webPage {
	t := b.ts.t
	t.Helper()
	var action []string
	body := ""
	for _, m := range oidcFormAction.FindAllStringSubmatchIndex(pg.Body, -1) {
		if a := pg.Body[m[2]:m[3]]; strings.HasSuffix(unescape(a), path) {
			action, body = []string{pg.Body[m[0]:m[1]], a}, pg.Body[m[1]:]
			body, _, _ = strings.Cut(body, "</form>")
			break
		}
	}
	if action == nil {
		t.Fatalf("no form to %q on the page (%d): %s", path, pg.Status, pg.Body)
	}
	form := url.Values{}
	for _, m := range oidcHidden.FindAllStringSubmatch(body, -1) {
		form.Set(m[1], unescape(m[2]))
	}
	for k, v := range values {
		if v == "\x00" {
			form.Del(k)
			continue
		}
		form.Set(k, v)
	}
	req, err := http.NewRequest("POST", unescape(action[1]), strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var (
	oidcFormAction = regexp.MustCompile(`<form method="post" action="([^"]+)"[^>]*>`)
	oidcHidden     = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// unescape undoes html/template's escaping of an attribute.
func unescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(s)
}

// authorize sends the browser to the provider with PKCE S256, a nonce
// and a state, as the relying party does; it returns the first page.
func (rp *oidcRP) authorize(b *browser, verifier, state, nonce string, opts ...oauth2.AuthCodeOption) *webPage {
	opts = append(opts, gooidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier))
	return b.get(rp.config.AuthCodeURL(state, opts...))
}

// signIn signs addr in on the sign-in page pg (email, then the mailed
// code) and returns the answer to the code form.
func (b *browser) signIn(pg *webPage, addr string) *webPage {
	t := b.ts.t
	t.Helper()
	if pg.Status != http.StatusOK || !strings.Contains(pg.Body, `<input id="email" name="email" type="email" autocomplete="username webauthn"`) {
		t.Fatalf("not the sign-in page: %d %s %s", pg.Status, pg.URL, pg.Body)
	}
	code := b.submit(pg, map[string]string{"email": addr})
	if code.Status != http.StatusOK || !strings.Contains(code.Body, `<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code"`) {
		t.Fatalf("not the code page: %d %s", code.Status, code.Body)
	}
	return b.submit(code, map[string]string{"code": b.ts.lastMail(addr).Code})
}

// answer reads the provider's redirect to the relying party: its
// query, failing unless pg is one. A consent page on the way (a
// third-party client) is allowed first: TestOIDCConsent tests the page
// itself.
func (rp *oidcRP) answer(pg *webPage) url.Values {
	t := rp.ts.t
	t.Helper()
	if pg.Status == http.StatusOK && pg.b != nil && strings.Contains(pg.Body, `name="decision" value="allow"`) {
		pg = pg.b.submit(pg, map[string]string{"decision": "allow"})
	}
	if pg.Status != http.StatusFound || !strings.HasPrefix(pg.Location, rp.config.RedirectURL+"?") {
		t.Fatalf("not a redirect to the client: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	u, err := url.Parse(pg.Location)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("iss") != rp.issuer {
		t.Fatalf("iss=%q in the authorization response, want %q (RFC 9207)", q.Get("iss"), rp.issuer)
	}
	return q
}

// ssoToken returns the browser's session token for project pid (its
// SSO cookie).
func (b *browser) ssoToken(pid string) string {
	u, _ := url.Parse(b.ts.issuer(pid) + "/login")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "lk_sso_"+pid {
			return c.Value
		}
	}
	return ""
}

// jwtPart decodes part i (0 header, 1 claims) of a JWT.
func jwtPart(t *testing.T, tok string, i int) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[i])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// userinfo calls the userinfo endpoint with access token at.
func (rp *oidcRP) userinfo(at string) *response {
	req, err := http.NewRequest("GET", rp.issuer+"/userinfo", nil)
	if err != nil {
		rp.ts.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+at)
	return rp.ts.send(req)
}

// TestOIDCCodeFlow: the whole code flow with a confidential client, as
// go-oidc and x/oauth2 run it: discovery; authorize with PKCE S256, a
// nonce and a state; the sign-in page (email, then the mailed code);
// the callback's redirect with the code, the state and the issuer; the
// exchange; the ID token verified (signature, nonce, at_hash) with
// sub, amr, auth_time, sid and acr; the access token an RFC 9068 JWT;
// userinfo; the session listed by GET /sessions with its method; a
// second authorization signed in at once by the cookie (single
// sign-on); and, once the session is revoked, userinfo refuses the
// token (401 with WWW-Authenticate).
func TestOIDCCodeFlow(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	const addr = "ada@example.com"
	verifier, state, nonce := oauth2.GenerateVerifier(), "state-1", "nonce-1"

	first := rp.authorize(b, verifier, state, nonce)
	if !strings.HasPrefix(first.URL.Path, "/oidc/"+ts.Project.ID+"/login") {
		t.Fatalf("authorize led to %s, want the sign-in page", first.URL)
	}
	for h, want := range map[string]string{"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"} {
		if got := first.Header.Get(h); got != want {
			t.Errorf("sign-in page %s=%q, want %q", h, got, want)
		}
	}
	csp := first.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "'nonce-") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("sign-in page CSP %q, want a nonce and frame-ancestors 'none'", csp)
	}
	q := rp.answer(b.signIn(first, addr))
	if q.Get("state") != state || q.Get("code") == "" {
		t.Fatalf("answer %v, want the state and a code", q)
	}
	tok, err := rp.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	rawID, _ := tok.Extra("id_token").(string)
	idt, err := rp.provider.Verifier(&gooidc.Config{ClientID: rp.id}).Verify(ctx, rawID)
	if err != nil {
		t.Fatalf("ID token: %v", err)
	}
	if idt.Nonce != nonce {
		t.Errorf("nonce=%q, want %q", idt.Nonce, nonce)
	}
	if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
		t.Errorf("at_hash: %v", err)
	}
	var claims struct {
		Sub           string   `json:"sub"`
		Email         string   `json:"email"`
		EmailVerified bool     `json:"email_verified"`
		AMR           []string `json:"amr"`
		ACR           string   `json:"acr"`
		SID           string   `json:"sid"`
		AuthTime      int64    `json:"auth_time"`
		AZP           string   `json:"azp"`
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	u := ts.userByEmail(addr)
	if claims.Sub != u.ID || claims.Email != addr || !claims.EmailVerified || claims.ACR != auth.ACRSingleFactor ||
		!slices.Equal(claims.AMR, []string{"otp"}) || claims.SID == "" || claims.AuthTime != ts.Clock.Now().Unix() {
		t.Errorf("ID token claims %+v (user %s, now %d)", claims, u.ID, ts.Clock.Now().Unix())
	}
	h, at := jwtPart(t, tok.AccessToken, 0), jwtPart(t, tok.AccessToken, 1)
	if h["typ"] != "at+jwt" || h["alg"] != "RS256" {
		t.Errorf("access token header %v, want typ at+jwt, RS256", h)
	}
	if at["iss"] != rp.issuer || at["sub"] != u.ID || at["client_id"] != rp.id || at["sid"] != claims.SID || at["jti"] == "" ||
		at["scope"] != "openid profile email" {
		t.Errorf("access token claims %v", at)
	}
	info, err := rp.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	if info.Subject != u.ID || info.Email != addr || !info.EmailVerified {
		t.Errorf("userinfo %+v", info)
	}

	// The session: a latchkey session, listed with its method.
	session := b.ssoToken(ts.Project.ID)
	if session == "" {
		t.Fatal("no SSO cookie")
	}
	r := ts.do("GET", "/api/v1/sessions", session, nil)
	wantOK(t, r)
	list, _ := r.Body["sessions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != claims.SID || list[0].(map[string]any)["method"] != "oidc:Test App" {
		t.Fatalf("sessions %s, want the one session %s by oidc:Test App", r.Raw, claims.SID)
	}

	// Single sign-on: a second client of the project, no page; its ID
	// and access tokens are ES256, as it asks.
	rp2 := ts.newRP(ts.Project.ID, map[string]any{"name": "Second App", "idTokenAlg": "ES256"})
	q2 := rp2.answer(rp2.authorize(b, verifier, "state-2", "nonce-2"))
	tok2, err := rp2.config.Exchange(ctx, q2.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("second exchange: %v", err)
	}
	idt2, err := rp2.provider.Verifier(&gooidc.Config{ClientID: rp2.id}).Verify(ctx, tok2.Extra("id_token").(string))
	if err != nil || idt2.Subject != u.ID || idt2.Nonce != "nonce-2" {
		t.Fatalf("second ID token %+v %v", idt2, err)
	}
	for what, tok := range map[string]string{"ID token": tok2.Extra("id_token").(string), "access token": tok2.AccessToken} {
		if h := jwtPart(t, tok, 0); h["alg"] != "ES256" {
			t.Errorf("the ES256 client's %s header %v", what, h)
		}
	}
	if r := rp2.userinfo(tok2.AccessToken); r.Status != http.StatusOK || r.Body["sub"] != u.ID {
		t.Errorf("userinfo with the ES256 access token: %d %s", r.Status, r.Raw)
	}

	// Revoking the session ends its tokens.
	wantOK(t, ts.do("DELETE", "/api/v1/sessions/"+claims.SID, session, nil))
	for _, c := range []struct {
		rp *oidcRP
		at string
	}{{rp, tok.AccessToken}, {rp2, tok2.AccessToken}} {
		r := c.rp.userinfo(c.at)
		if r.Status != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), `error="invalid_token"`) ||
			r.Body["error"] != "invalid_token" {
			t.Errorf("userinfo after the session's revocation: %d %v %s", r.Status, r.Header, r.Raw)
		}
	}
	// The cookie's session is gone too: the next authorization asks to
	// sign in.
	if pg := rp.authorize(b, verifier, "state-3", "nonce-3"); !strings.Contains(pg.Body, `name="email"`) {
		t.Errorf("authorize after the revocation: %d %s", pg.Status, pg.Body)
	}
}

// userByEmail reads the project's user of addr from the store.
func (ts *testServer) userByEmail(addr string) *store.User {
	ts.t.Helper()
	var u *store.User
	if err := ts.DB.View(ctx, func(tx store.Tx) (err error) { u, err = tx.UserByEmail(ts.Project.ID, addr); return err }); err != nil {
		ts.t.Fatalf("user %s: %v", addr, err)
	}
	return u
}

// code runs an authorization that the browser's session answers at
// once (single sign-on) and returns its code.
func (rp *oidcRP) code(b *browser, verifier string) string {
	rp.ts.t.Helper()
	return rp.answer(rp.authorize(b, verifier, "st", "no")).Get("code")
}

// exchange posts a code to the token endpoint with the client's secret
// (Basic) as x/oauth2 does, and returns the raw answer.
func (rp *oidcRP) exchange(code, verifier string) *response {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rp.config.RedirectURL},
		"code_verifier": {verifier}}
	req, err := http.NewRequest("POST", rp.provider.Endpoint().TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		rp.ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(rp.id), url.QueryEscape(rp.secret))
	return rp.ts.send(req)
}

// wantOAuthError fails unless r is an RFC 6749 error answer: status,
// JSON {error, error_description} with code.
func wantOAuthError(t *testing.T, r *response, status int, code string) {
	t.Helper()
	if r.Status != status || r.Body["error"] != code {
		t.Fatalf("status=%d body=%s, want %d error=%s", r.Status, r.Raw, status, code)
	}
	if d, _ := r.Body["error_description"].(string); d == "" {
		t.Fatalf("no error_description: %s", r.Raw)
	}
}

// wantErrorPage fails unless pg is latchkey's error page with status:
// HTML, no redirect, the pages' headers.
func wantErrorPage(t *testing.T, pg *webPage, status int, text string) {
	t.Helper()
	if pg.Status != status || pg.Location != "" || !strings.HasPrefix(pg.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(pg.Body, "<h1>Sign-in failed</h1>") || !strings.Contains(pg.Body, text) {
		t.Fatalf("got %d %q %s, want the error page %d saying %q", pg.Status, pg.Location, pg.Body, status, text)
	}
	if !strings.Contains(pg.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || pg.Header.Get("X-Frame-Options") != "DENY" ||
		pg.Header.Get("Cache-Control") != "no-store" || pg.Header.Get("Referrer-Policy") != "no-referrer" {
		t.Fatalf("error page headers %v", pg.Header)
	}
}

// TestOIDCRefusals: what the provider refuses, and how. At /authorize,
// an unknown client or a redirect URI the client did not register gets
// the error page (HTML, never a redirect, input not reflected); PKCE
// with plain, or a public client without a challenge, is an error
// redirect carrying iss. At the token endpoint (RFC 6749 JSON errors):
// a wrong code_verifier, a code shown twice (and the tokens the first
// exchange gave stop working), a code after 60 s, and a code of another
// project are invalid_grant; a wrong secret invalid_client. A form
// posted without its CSRF token is refused and sends nothing;
// prompt=none without a session answers login_required; the callback
// refuses another browser; userinfo refuses a token that is not one.
func TestOIDCRefusals(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, nil)
	verifier := oauth2.GenerateVerifier()
	authz := ts.issuer(ts.Project.ID) + "/authorize?"

	t.Run("authorize", func(t *testing.T) {
		b := ts.newBrowser()
		base := url.Values{"client_id": {rp.id}, "redirect_uri": {rpRedirect}, "response_type": {"code"}, "scope": {"openid"},
			"state": {"s"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}}
		with := func(k, v string) string {
			q := url.Values{}
			for key, vs := range base {
				q[key] = vs
			}
			q.Set(k, v)
			return authz + q.Encode()
		}
		wantErrorPage(t, b.get(with("redirect_uri", "https://evil.example/<b>cb</b>")), http.StatusBadRequest, "not registered")
		if pg := b.get(with("redirect_uri", "https://evil.example/<b>cb</b>")); strings.Contains(pg.Body, "evil.example") || strings.Contains(pg.Body, "<b>") {
			t.Errorf("the error page reflects the redirect URI: %s", pg.Body)
		}
		wantErrorPage(t, b.get(with("client_id", "no-such-client")), http.StatusBadRequest, "not known")
		wantErrorPage(t, b.get(with("client_id", "")), http.StatusBadRequest, "not known")
		for _, c := range []struct{ name, url string }{
			{"plain", with("code_challenge_method", "plain")},
			{"no method", with("code_challenge_method", "")},
		} {
			q := rp.answer(b.get(c.url))
			if q.Get("error") != "invalid_request" || q.Get("state") != "s" || !strings.Contains(q.Get("error_description"), "S256") {
				t.Errorf("%s: answer %v, want invalid_request about S256", c.name, q)
			}
		}
		pub := ts.newRP(ts.Project.ID, map[string]any{"name": "CLI", "type": "public", "redirectUris": []string{"http://127.0.0.1/cb"}})
		q := url.Values{"client_id": {pub.id}, "redirect_uri": {"http://127.0.0.1:4711/cb"}, "response_type": {"code"}, "scope": {"openid"}, "state": {"p"}}
		pg := b.get(authz + q.Encode())
		if !strings.HasPrefix(pg.Location, "http://127.0.0.1:4711/cb?") {
			t.Fatalf("public client without PKCE: %d %s", pg.Status, pg.Location)
		}
		u, _ := url.Parse(pg.Location)
		if u.Query().Get("error") != "invalid_request" || u.Query().Get("iss") != rp.issuer {
			t.Errorf("public client without PKCE: %s, want invalid_request with iss", pg.Location)
		}
		// prompt=none without a session.
		ans := rp.answer(b.get(with("prompt", "none")))
		if ans.Get("error") != "login_required" || ans.Get("state") != "s" {
			t.Errorf("prompt=none without a session: %v", ans)
		}
	})

	t.Run("forms", func(t *testing.T) {
		b := ts.newBrowser()
		pg := rp.authorize(b, verifier, "s", "n")
		before := ts.mailCount()
		for _, c := range []struct{ name, csrf string }{{"missing", "\x00"}, {"wrong", "x" + strings.Repeat("A", 42)}} {
			wantErrorPage(t, b.submit(pg, map[string]string{"email": "csrf@example.com", "csrf": c.csrf}), http.StatusForbidden, "not sent from its page")
			if ts.mailCount() != before {
				t.Fatalf("%s CSRF token: a code was sent", c.name)
			}
		}
		// Another browser cannot use this one's form.
		other := ts.newBrowser()
		other.get(rp.config.AuthCodeURL("x", oauth2.S256ChallengeOption(verifier)))
		wantErrorPage(t, other.submit(pg, map[string]string{"email": "csrf@example.com"}), http.StatusForbidden, "not sent from its page")
		// A wrong code shows the code form again with the reason.
		code := b.submit(pg, map[string]string{"email": "forms@example.com"})
		again := b.submit(code, map[string]string{"code": "000000"})
		if again.Status != http.StatusUnauthorized || !strings.Contains(again.Body, `class="error"`) || !strings.Contains(again.Body, `name="code"`) {
			t.Errorf("wrong code: %d %s", again.Status, again.Body)
		}
		// The callback refuses a browser other than the one signed in.
		done := allowConsent(b.submit(code, map[string]string{"code": ts.lastMail("forms@example.com").Code}))
		if done.Status != http.StatusFound {
			t.Fatalf("sign-in: %d %s", done.Status, done.Body)
		}
		id := strings.TrimPrefix(pg.URL.RawQuery, "authRequestID=")
		wantErrorPage(t, other.get(ts.issuer(ts.Project.ID)+"/authorize/callback?id="+id), http.StatusBadRequest, "cannot be completed in this browser")
	})

	t.Run("token", func(t *testing.T) {
		b := ts.newBrowser()
		ts.Clock.Advance(31 * time.Second)
		rp.answer(b.signIn(rp.authorize(b, verifier, "s", "n"), "tokens@example.com"))

		wantOAuthError(t, rp.exchange(rp.code(b, verifier), oauth2.GenerateVerifier()), http.StatusBadRequest, "invalid_grant")

		secret := rp.secret
		rp.secret = secret + "x"
		wantOAuthError(t, rp.exchange(rp.code(b, verifier), verifier), http.StatusUnauthorized, "invalid_client")
		rp.secret = secret

		// A replayed code: refused, and the first exchange's tokens die.
		code := rp.code(b, verifier)
		first := rp.exchange(code, verifier)
		if first.Status != http.StatusOK {
			t.Fatalf("exchange: %d %s", first.Status, first.Raw)
		}
		at := str(t, first.Body, "access_token")
		if r := rp.userinfo(at); r.Status != http.StatusOK {
			t.Fatalf("userinfo before the replay: %d %s", r.Status, r.Raw)
		}
		wantOAuthError(t, rp.exchange(code, verifier), http.StatusBadRequest, "invalid_grant")
		if r := rp.userinfo(at); r.Status != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("userinfo after the replay: %d %s", r.Status, r.Raw)
		}

		// A code 60 s old.
		code = rp.code(b, verifier)
		ts.Clock.Advance(auth.OIDCCodeLifetime)
		wantOAuthError(t, rp.exchange(code, verifier), http.StatusBadRequest, "invalid_grant")
		code = rp.code(b, verifier)
		ts.Clock.Advance(auth.OIDCCodeLifetime - time.Second)
		if r := rp.exchange(code, verifier); r.Status != http.StatusOK {
			t.Errorf("a code 59 s old: %d %s", r.Status, r.Raw)
		}

		// A code of this project at another project's token endpoint,
		// by that project's client of the same redirect URI.
		other := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Other"}).Body, "project"), "id")
		rpB := ts.newRP(other, nil)
		code = rp.code(b, verifier)
		wantOAuthError(t, rpB.exchange(code, verifier), http.StatusBadRequest, "invalid_grant")
		if r := rp.exchange(code, verifier); r.Status != http.StatusOK {
			t.Errorf("the code at its own project after the cross-project try: %d %s", r.Status, r.Raw)
		}

		for _, bad := range []string{"garbage", first.Body["id_token"].(string)} {
			r := rp.userinfo(bad)
			if r.Status != http.StatusUnauthorized || !strings.Contains(r.Header.Get("WWW-Authenticate"), "invalid_token") {
				t.Errorf("userinfo with %.10s…: %d %v %s", bad, r.Status, r.Header, r.Raw)
			}
		}
	})
}

// TestOIDCSecondFactor: a user with TOTP enrolled signs in with the
// email code, then the second-factor page (its form field "code"); a
// wrong code shows the page again with the reason, the right one
// answers the request: the ID token says amr otp and mfa, acr level 2.
// A client that requires a second factor offers a user who has none to
// set up TOTP on that page (a QR code and the key); a wrong code asks
// again for the code of the same set-up, the right one enrols TOTP and
// answers the request with amr otp and mfa, and the next sign-in asks for
// the enrolled TOTP.
func TestOIDCSecondFactor(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const addr = "mfa@example.com"
	tok := str(t, ts.login(addr).Body, "token")
	secret := ts.enrollTOTP(tok)

	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	mfa := b.signIn(rp.authorize(b, verifier, "s", "n"), addr)
	if mfa.Status != http.StatusOK || !strings.HasPrefix(mfa.URL.Path, "/oidc/"+ts.Project.ID+"/login/mfa") ||
		!strings.Contains(mfa.Body, `<input id="code" name="code"`) {
		t.Fatalf("after the email code: %d %s %s", mfa.Status, mfa.URL, mfa.Body)
	}
	wrong := b.submit(mfa, map[string]string{"code": "000000"})
	if wrong.Status != http.StatusUnauthorized || !strings.Contains(wrong.Body, `class="error"`) || !strings.Contains(wrong.Body, `name="code"`) {
		t.Fatalf("wrong TOTP code: %d %s", wrong.Status, wrong.Body)
	}
	ts.Clock.Advance(30 * time.Second)
	q := rp.answer(b.submit(wrong, map[string]string{"code": ts.totpCode(secret, 0)}))
	tk, err := rp.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	idt, err := rp.provider.Verifier(&gooidc.Config{ClientID: rp.id}).Verify(ctx, tk.Extra("id_token").(string))
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		AMR []string `json:"amr"`
		ACR string   `json:"acr"`
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(claims.AMR, []string{"otp", "mfa"}) || claims.ACR != auth.ACRMultiFactor {
		t.Errorf("amr %v acr %q, want [otp mfa] and %s", claims.AMR, claims.ACR, auth.ACRMultiFactor)
	}

	// A client that requires a second factor, a user without one.
	strict := ts.newRP(ts.Project.ID, map[string]any{"name": "Strict", "requireMfa": true})
	b2 := ts.newBrowser()
	intro := b2.signIn(strict.authorize(b2, verifier, "s", "n"), "plain@example.com")
	if intro.Status != http.StatusOK || strings.Contains(intro.Body, "totp-secret") || !strings.Contains(intro.Body, `name="method" value="enroll-start"`) {
		t.Fatalf("a requireMfa client, a user without a second factor: %d %s, want the set-up's intro", intro.Status, intro.Body)
	}
	// Loading the intro again changes nothing (the set-up starts with a
	// POST): no pending set-up is made by a GET.
	if again := b2.get(intro.URL.String()); again.Status != http.StatusOK || strings.Contains(again.Body, "totp-secret") {
		t.Fatalf("the intro loaded again: %d %s", again.Status, again.Body)
	}
	for _, e := range ts.events("") {
		if e["method"] == "totp" && e["email"] == "plain@example.com" {
			t.Fatalf("a TOTP event before the set-up was started: %v", e)
		}
	}
	setup := b2.submit(intro, nil)
	key := regexp.MustCompile(`<code id="totp-secret">([A-Z2-7]+)</code>`).FindStringSubmatch(setup.Body)
	if setup.Status != http.StatusOK || key == nil || !strings.Contains(setup.Body, `<img src="data:image/png;base64,`) ||
		!strings.Contains(setup.Body, `name="method" value="enroll"`) || !strings.Contains(setup.Header.Get("Content-Security-Policy"), "img-src data:") {
		t.Fatalf("a requireMfa client, a user without a second factor: %d %s %s", setup.Status, setup.Header, setup.Body)
	}
	again := b2.submit(setup, map[string]string{"code": "000000"})
	if again.Status != http.StatusUnauthorized || !strings.Contains(again.Body, `class="error"`) || strings.Contains(again.Body, "totp-secret") ||
		!strings.Contains(again.Body, `name="method" value="enroll"`) {
		t.Fatalf("a wrong code for the set-up: %d %s", again.Status, again.Body)
	}
	ts.Clock.Advance(30 * time.Second)
	q = strict.answer(b2.submit(again, map[string]string{"code": ts.totpCode(key[1], 0)}))
	tk, err = strict.config.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	idt, err = strict.provider.Verifier(&gooidc.Config{ClientID: strict.id}).Verify(ctx, tk.Extra("id_token").(string))
	if err != nil {
		t.Fatal(err)
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(claims.AMR, []string{"otp", "mfa"}) || claims.ACR != auth.ACRMultiFactor {
		t.Errorf("after setting up TOTP: amr %v acr %q, want [otp mfa] and %s", claims.AMR, claims.ACR, auth.ACRMultiFactor)
	}

	// A set-up left open past the step-up window: its code sends the
	// browser to sign in again, then the set-up starts anew.
	b4 := ts.newBrowser()
	late := b4.submit(b4.signIn(strict.authorize(b4, verifier, "s", "n"), "late@example.com"), nil)
	lateKey := regexp.MustCompile(`<code id="totp-secret">([A-Z2-7]+)</code>`).FindStringSubmatch(late.Body)
	if lateKey == nil {
		t.Fatalf("the late set-up: %d %s", late.Status, late.Body)
	}
	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	relogin := b4.submit(late, map[string]string{"code": ts.totpCode(lateKey[1], 0)})
	if relogin.Status != http.StatusOK || !strings.HasSuffix(relogin.URL.Path, "/login") || !strings.Contains(relogin.Body, `name="email"`) {
		t.Fatalf("a set-up's code past the step-up window: %d %s %s, want the sign-in page", relogin.Status, relogin.URL, relogin.Body)
	}
	ts.Clock.Advance(auth.SendInterval)
	if fresh := b4.signIn(relogin, "late@example.com"); fresh.Status != http.StatusOK || !strings.Contains(fresh.Body, `value="enroll-start"`) {
		t.Fatalf("signed in again: %d %s, want the set-up's intro", fresh.Status, fresh.Body)
	}

	b3 := ts.newBrowser()
	next := b3.signIn(strict.authorize(b3, verifier, "s", "n"), "plain@example.com")
	if next.Status != http.StatusOK || strings.Contains(next.Body, "totp-secret") || !strings.Contains(next.Body, `name="method" value="totp"`) {
		t.Fatalf("the next sign-in after the set-up: %d %s", next.Status, next.Body)
	}
}

// TestOIDCSetUpLimited: starting the second-factor page's TOTP set-up
// writes a new secret, so each start counts against the session's limit
// of the calls that write (sessionRateLimitPerMinute), as the API's
// enrolment does: past it the page answers 429 and makes no secret.
func TestOIDCSetUpLimited(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"sessionRateLimitPerMinute": 2}))
	strict := ts.newRP(ts.Project.ID, map[string]any{"name": "Strict", "firstParty": true, "requireMfa": true})
	b := ts.newBrowser()
	intro := b.signIn(strict.authorize(b, oauth2.GenerateVerifier(), "s", "n"), "limited@example.com")
	for i := range 2 {
		if pg := b.submit(intro, nil); pg.Status != http.StatusOK || !strings.Contains(pg.Body, "totp-secret") {
			t.Fatalf("set-up %d: %d %s", i+1, pg.Status, pg.Body)
		}
	}
	if pg := b.submit(intro, nil); pg.Status != http.StatusTooManyRequests || strings.Contains(pg.Body, "totp-secret") {
		t.Fatalf("a third set-up in the minute: %d %s, want 429 and no secret", pg.Status, pg.Body)
	}
}
