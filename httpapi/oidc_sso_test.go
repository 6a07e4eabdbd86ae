package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/auth"
)

// TestOIDCSingleSignOnAtAuthorize: a browser whose session may serve an
// authorization request gets its code from the authorization endpoint
// itself (no hop through the sign-in page and the callback): a redirect
// to the client with code, state and iss, in query mode, or the
// form_post page; the code exchanges once, for the session's user and
// sid. The same browser goes to the sign-in page when the request asks
// for a new sign-in (prompt=login), to the consent page of a third-party
// client, to the error page of a client that requires a second factor
// it has none of, and to the sign-in page once the session is revoked:
// a revoked session is refused at once.
func TestOIDCSingleSignOnAtAuthorize(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	first := ts.newRP(ts.Project.ID, map[string]any{"name": "First", "firstParty": true})
	first.answer(b.signIn(first.authorize(b, verifier, "st", "no"), "sso@example.com"))
	u := ts.userByEmail("sso@example.com")

	rp := ts.newRP(ts.Project.ID, map[string]any{"name": "Second", "firstParty": true})
	authorizePath := "/oidc/" + ts.Project.ID + "/authorize"
	pg := rp.authorize(b, verifier, "st-2", "no-2")
	if pg.URL.Path != authorizePath {
		t.Fatalf("the code came from %s, want the authorization endpoint itself", pg.URL)
	}
	q := rp.answer(pg)
	if q.Get("state") != "st-2" || q.Get("code") == "" {
		t.Fatalf("answer %v, want the state and a code", q)
	}
	r := rp.exchange(q.Get("code"), verifier)
	if r.Status != http.StatusOK {
		t.Fatalf("exchange: %d %s", r.Status, r.Raw)
	}
	claims := jwtPart(t, r.Body["id_token"].(string), 1)
	if claims["sub"] != u.ID || claims["nonce"] != "no-2" || claims["sid"] == "" || claims["sid"] == nil {
		t.Errorf("ID token claims %v, want the session's user %s, the nonce and a sid", claims, u.ID)
	}
	wantOAuthError(t, rp.exchange(q.Get("code"), verifier), http.StatusBadRequest, "invalid_grant")

	// form_post: the page that posts the code, from the same endpoint.
	pg = rp.authorize(b, verifier, "st-3", "no-3", oauth2.SetAuthURLParam("response_mode", "form_post"))
	if pg.URL.Path != authorizePath {
		t.Fatalf("the form_post answer came from %s, want the authorization endpoint", pg.URL)
	}
	if f := rp.formPostAnswer(pg); f.Get("state") != "st-3" || f.Get("code") == "" {
		t.Fatalf("form_post answer %v, want the state and a code", f)
	} else if r := rp.exchange(f.Get("code"), verifier); r.Status != http.StatusOK {
		t.Fatalf("form_post code's exchange: %d %s", r.Status, r.Raw)
	}

	// prompt=login: the sign-in page, no code.
	pg = rp.authorize(b, verifier, "st-4", "no-4", oauth2.SetAuthURLParam("prompt", "login"))
	if pg.Status != http.StatusOK || !strings.HasSuffix(pg.URL.Path, "/login") || pg.Location != "" {
		t.Fatalf("prompt=login with a session: %d %s %q, want the sign-in page", pg.Status, pg.URL, pg.Location)
	}

	// What the session cannot give at once goes on to its page: the
	// consent of a third-party client, and a client that requires a
	// second factor the user has none of (its page sets up TOTP; a
	// session older than the step-up window signs in again first, as
	// setting up a factor needs a recent sign-in).
	third := ts.newRP(ts.Project.ID, map[string]any{"name": "Third", "firstParty": false})
	pg = third.authorize(b, verifier, "st-6", "no-6")
	if pg.Status != http.StatusOK || !strings.Contains(pg.Body, `name="decision" value="allow"`) {
		t.Fatalf("a third-party client with a session: %d %s %q, want the consent page", pg.Status, pg.URL, pg.Location)
	}
	strict := ts.newRP(ts.Project.ID, map[string]any{"name": "Strict", "requireMfa": true})
	pg = strict.authorize(b, verifier, "st-7", "no-7")
	if pg.Status != http.StatusOK || !strings.HasSuffix(pg.URL.Path, "/login/mfa") || !strings.Contains(pg.Body, `value="enroll-start"`) {
		t.Fatalf("a requireMfa client, a session without a second factor: %d %s, want the TOTP set-up", pg.Status, pg.URL)
	}
	ts.Clock.Advance(auth.StepUpWindow + time.Second)
	pg = strict.authorize(b, verifier, "st-8", "no-8")
	if pg.Status != http.StatusOK || !strings.HasSuffix(pg.URL.Path, "/login") || strings.Contains(pg.Body, "enroll-start") {
		t.Fatalf("a requireMfa client, an older session without a second factor: %d %s, want the sign-in page", pg.Status, pg.URL)
	}

	// The session revoked: the sign-in page at once.
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+u.ID+"/sessions/revoke", nil))
	pg = rp.authorize(b, verifier, "st-5", "no-5")
	if pg.Status != http.StatusOK || !strings.HasSuffix(pg.URL.Path, "/login") || pg.Location != "" {
		t.Fatalf("a revoked session: %d %s %q, want the sign-in page", pg.Status, pg.URL, pg.Location)
	}
}

// TestOIDCSingleSignOnRepeatedParameters: an authorization request that
// repeats a parameter is answered as op reads it (the last value), the
// answer of a browser with a session included: a request whose last
// response_mode is form_post, or whose last redirect_uri is the one it is
// answered to, gets the form_post page for that redirect URI, as its
// stored request says and as the callback answers it, never a redirect
// with the code in the address. The direct answer, and the callback's,
// are not to be cached.
func TestOIDCSingleSignOnRepeatedParameters(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	const other = "http://127.0.0.1:9/other"
	rp := ts.newRP(ts.Project.ID, map[string]any{"firstParty": true, "redirectUris": []string{rpRedirect, other}})
	rp.answer(b.signIn(rp.authorize(b, verifier, "st", "no"), "repeat@example.com"))

	// The request's parameters with extra ones appended as given (the
	// first of a repeated one before the relying party's own).
	with := func(before, after string) string {
		u, err := url.Parse(rp.config.AuthCodeURL("st-r", gooidc.Nonce("no-r"), oauth2.S256ChallengeOption(verifier)))
		if err != nil {
			t.Fatal(err)
		}
		u.RawQuery = strings.Trim(before+"&"+u.RawQuery+"&"+after, "&")
		return u.String()
	}
	for _, c := range []struct{ name, url string }{
		{"response_mode query then form_post", with("", "response_mode=query&response_mode=form_post")},
		{"redirect_uri another then this one", with("redirect_uri="+url.QueryEscape(other), "response_mode=form_post")},
	} {
		pg := b.get(c.url)
		if pg.URL.Path != "/oidc/"+ts.Project.ID+"/authorize" {
			t.Fatalf("%s: answered from %s, want the authorization endpoint", c.name, pg.URL)
		}
		if f := rp.formPostAnswer(pg); f.Get("code") == "" || f.Get("state") != "st-r" {
			t.Fatalf("%s: form_post answer %v", c.name, f)
		} else if r := rp.exchange(f.Get("code"), verifier); r.Status != http.StatusOK {
			t.Fatalf("%s: exchange %d %s", c.name, r.Status, r.Raw)
		}
	}

	pg := rp.authorize(b, verifier, "st-c", "no-c")
	if q := rp.answer(pg); q.Get("code") == "" || pg.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the direct answer's headers %v, want Cache-Control no-store", pg.Header)
	}
	id, _, _ := strings.Cut(rp.answer(pg).Get("code"), ".")
	cb := b.get(rp.issuer + "/authorize/callback?id=" + id)
	if q := rp.answer(cb); q.Get("code") == "" || cb.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("the callback's answer's headers %v, want Cache-Control no-store", cb.Header)
	}
}

// ssoOutcome names what a browser got for an authorization request:
// "code" (a redirect to the client with a code), "error=<code>" (a
// redirect with an error), "sign-in", "consent" or "second factor" (the
// page), or what else it was.
func ssoOutcome(rp *oidcRP, pg *webPage) string {
	switch {
	case pg.Status == http.StatusFound && strings.HasPrefix(pg.Location, rp.config.RedirectURL+"?"):
		u, _ := url.Parse(pg.Location)
		if e := u.Query().Get("error"); e != "" {
			return "error=" + e
		}
		return "code"
	case pg.Status == http.StatusOK && isConsentPage(pg):
		return "consent"
	case pg.Status == http.StatusOK && strings.HasSuffix(pg.URL.Path, "/login/mfa"):
		return "second factor"
	case pg.Status == http.StatusOK && strings.HasSuffix(pg.URL.Path, "/login") && strings.Contains(pg.Body, `name="email" type="email"`):
		return "sign-in"
	}
	return pg.URL.Path + " " + http.StatusText(pg.Status)
}

// TestOIDCSingleSignOnAtAuthorizeRules: the authorization endpoint
// answers with a code only what the sign-in page would have answered at
// once with the same session. A new sign-in asked (prompt login or
// select_account, max_age 0 or passed, an id_token_hint or login_hint of
// someone else) gets the sign-in page; a third-party client without the
// user's consent, with a scope beyond it, or whose consent was revoked,
// the consent page (prompt=none: consent_required); a session whose
// second factor is pending, the second-factor page (prompt=none:
// interaction_required); another project's session token in the cookie,
// or a disabled user's, the sign-in page. The ID token of a code the
// endpoint issued says what the callback's did: the same auth_time, amr,
// acr and sid.
func TestOIDCSingleSignOnAtAuthorizeRules(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	verifier := oauth2.GenerateVerifier()
	param := oauth2.SetAuthURLParam
	rp := ts.newRP(ts.Project.ID, map[string]any{"name": "First", "firstParty": true})

	b := ts.newBrowser()
	q := rp.answer(b.signIn(rp.authorize(b, verifier, "st", "no"), "rules@example.com"))
	viaCallback := jwtPart(t, rp.exchange(q.Get("code"), verifier).Body["id_token"].(string), 1)
	b2 := ts.newBrowser()
	q = rp.answer(b2.signIn(rp.authorize(b2, verifier, "st", "no"), "someone@example.com"))
	someonesIDToken := rp.exchange(q.Get("code"), verifier).Body["id_token"].(string)

	pg := rp.authorize(b, verifier, "st", "no")
	if pg.URL.Path != "/oidc/"+ts.Project.ID+"/authorize" {
		t.Fatalf("answered from %s, want the authorization endpoint", pg.URL)
	}
	direct := jwtPart(t, rp.exchange(rp.answer(pg).Get("code"), verifier).Body["id_token"].(string), 1)
	for _, k := range []string{"auth_time", "acr", "sid", "sub"} {
		if direct[k] != viaCallback[k] {
			t.Errorf("%s: %v at the authorization endpoint, %v through the callback", k, direct[k], viaCallback[k])
		}
	}
	if fmt.Sprint(direct["amr"]) != fmt.Sprint(viaCallback["amr"]) {
		t.Errorf("amr: %v at the authorization endpoint, %v through the callback", direct["amr"], viaCallback["amr"])
	}

	ts.Clock.Advance(2 * time.Minute)
	third := ts.newRP(ts.Project.ID, map[string]any{"name": "Third"})
	for _, c := range []struct {
		name string
		rp   *oidcRP
		opts []oauth2.AuthCodeOption
		want string
	}{
		{"no parameter", rp, nil, "code"},
		{"prompt=none", rp, []oauth2.AuthCodeOption{param("prompt", "none")}, "code"},
		{"max_age not passed", rp, []oauth2.AuthCodeOption{param("max_age", "3600")}, "code"},
		{"login_hint of the user", rp, []oauth2.AuthCodeOption{param("login_hint", " Rules@Example.com")}, "code"},
		{"prompt=login", rp, []oauth2.AuthCodeOption{param("prompt", "login")}, "sign-in"},
		{"prompt=select_account", rp, []oauth2.AuthCodeOption{param("prompt", "select_account")}, "sign-in"},
		{"max_age=0", rp, []oauth2.AuthCodeOption{param("max_age", "0")}, "sign-in"},
		{"max_age passed", rp, []oauth2.AuthCodeOption{param("max_age", "60")}, "sign-in"},
		{"max_age past int64 seconds", rp, []oauth2.AuthCodeOption{param("max_age", "18446744073709551615")}, "sign-in"},
		{"login_hint of someone else", rp, []oauth2.AuthCodeOption{param("login_hint", "someone@example.com")}, "sign-in"},
		{"id_token_hint of someone else", rp, []oauth2.AuthCodeOption{param("id_token_hint", someonesIDToken)}, "sign-in"},
		{"third party, no consent", third, nil, "consent"},
		{"third party, no consent, prompt=none", third, []oauth2.AuthCodeOption{param("prompt", "none")}, "error=consent_required"},
	} {
		if got := ssoOutcome(c.rp, c.rp.authorize(b, verifier, "st", "no", c.opts...)); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}

	// Consent: given, then a scope beyond it, then revoked.
	third.answer(third.authorize(b, verifier, "st", "no"))
	if got := ssoOutcome(third, third.authorize(b, verifier, "st", "no")); got != "code" {
		t.Errorf("third party after its consent: %s, want code", got)
	}
	if got := ssoOutcome(third, third.authorize(b, verifier, "st", "no", param("scope", "openid profile email groups"))); got != "consent" {
		t.Errorf("third party, a scope beyond the consent: %s, want consent", got)
	}
	uid := ts.userByEmail("rules@example.com").ID
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/users/"+uid+"/consents/"+third.id, nil))
	if got := ssoOutcome(third, third.authorize(b, verifier, "st", "no")); got != "consent" {
		t.Errorf("third party, its consent revoked: %s, want consent", got)
	}

	// Another project's session token in this project's cookie.
	second := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Second"}).Body, "project"), "id")
	rpB := ts.newRP(second, map[string]any{"name": "B", "firstParty": true})
	stranger, tokenA := ts.newBrowser(), b.ssoToken(ts.Project.ID)
	if tokenA == "" {
		t.Fatal("the browser has no session cookie")
	}
	iss, _ := url.Parse(ts.issuer(second) + "/")
	stranger.client.Jar.SetCookies(iss, []*http.Cookie{{Name: "lk_sso_" + second, Value: tokenA, Path: iss.Path}})
	if got := ssoOutcome(rpB, rpB.authorize(stranger, verifier, "st", "no")); got != "sign-in" {
		t.Errorf("another project's session token: %s, want sign-in", got)
	}

	// A disabled user.
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+uid+"/disable", nil))
	if got := ssoOutcome(rp, rp.authorize(b, verifier, "st", "no")); got != "sign-in" {
		t.Errorf("a disabled user: %s, want sign-in", got)
	}

	// A session whose second factor is pending.
	const addr = "pending@example.com"
	tok := str(t, ts.login(addr).Body, "token")
	ts.enrollTOTP(tok)
	b3 := ts.newBrowser()
	if got := ssoOutcome(rp, b3.signIn(rp.authorize(b3, verifier, "st", "no"), addr)); got != "second factor" {
		t.Fatalf("after the email code: %s, want second factor", got)
	}
	if got := ssoOutcome(rp, rp.authorize(b3, verifier, "st", "no")); got != "second factor" {
		t.Errorf("a session whose second factor is pending: %s, want second factor", got)
	}
	if got := ssoOutcome(rp, rp.authorize(b3, verifier, "st", "no", param("prompt", "none"))); got != "error=interaction_required" {
		t.Errorf("a session whose second factor is pending, prompt=none: %s, want error=interaction_required", got)
	}
}
