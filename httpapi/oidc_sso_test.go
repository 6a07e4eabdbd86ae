package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
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
	// second factor the user has none of.
	third := ts.newRP(ts.Project.ID, map[string]any{"name": "Third", "firstParty": false})
	pg = third.authorize(b, verifier, "st-6", "no-6")
	if pg.Status != http.StatusOK || !strings.Contains(pg.Body, `name="decision" value="allow"`) {
		t.Fatalf("a third-party client with a session: %d %s %q, want the consent page", pg.Status, pg.URL, pg.Location)
	}
	strict := ts.newRP(ts.Project.ID, map[string]any{"name": "Strict", "requireMfa": true})
	wantErrorPage(t, strict.authorize(b, verifier, "st-7", "no-7"), http.StatusForbidden, "requires a second factor")

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
