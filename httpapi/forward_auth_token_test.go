package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// sso returns the browser's single sign-on cookie for project pid, which
// only latchkey's own pages receive ("" for none).
func (b *fwdBrowser) sso(pid string) string {
	u, _ := url.Parse(b.ts.faBase() + "/oidc/" + pid + "/login")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "lk_sso_"+pid {
			return c.Value
		}
	}
	return ""
}

// TestForwardAuthCookieIsNoSessionToken: the forward-auth cookie, which
// every app under the cookie domain receives, holds a token only
// forward-auth takes. An app that reads it (or a host under the domain
// that a link sends a signed-in browser to: the sign-in page sets the
// cookie from the single sign-on cookie and redirects to any host under
// the domain without a click) passes the project's proxies as the user,
// and that is all: the API refuses it (reads and changes), the hosted
// sign-in pages do not take it as their single sign-on cookie (no code
// for another app), and the account page sends it to sign in. The
// browser's own cookies keep working, and the sign-out ends the session
// the cookie names.
func TestForwardAuthCookieIsNoSessionToken(t *testing.T) {
	t.Parallel()
	ts := newFwdServer(t)
	pid := ts.Project.ID
	app := "http://app." + faDomain
	b := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	signin := ts.faBase() + "/oidc/" + pid + "/signin?rd="
	if back := b.signIn(b.get(signin+url.QueryEscape(app+"/")), "ada@example.com"); back.Status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", back.Status, back.Body)
	}
	fa, sso := b.cookie(pid), b.sso(pid)
	if fa == "" || sso == "" || fa == sso {
		t.Fatalf("forward-auth cookie %q, single sign-on cookie %q: want two different tokens", fa, sso)
	}
	wantIdentity(t, ts.fwdCheck("127.0.0.1", pid, fwdHeaders(app+"/"), fa), ts.userByEmail("ada@example.com"), "")
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/session"}, {"GET", "/api/v1/user"}, {"GET", "/api/v1/sessions"}, {"PATCH", "/api/v1/user"},
		{"POST", "/api/v1/passkey/register/start"}, {"DELETE", "/api/v1/user"},
	} {
		var body any
		if c.method != "GET" && c.method != "DELETE" {
			body = map[string]any{"email": "mallory@example.com"}
		}
		wantError(t, ts.do(c.method, c.path, fa, body), http.StatusUnauthorized, "INVALID_SESSION")
	}
	wantOK(t, ts.do("GET", "/api/v1/session", sso, nil))

	// Planted as the single sign-on cookie of another browser: the
	// account page and the providers' sign-in ask for a sign-in.
	thief := ts.newBrowser()
	u, _ := url.Parse(ts.issuer(pid) + "/")
	thief.client.Jar.SetCookies(u, []*http.Cookie{{Name: "lk_sso_" + pid, Value: fa, Path: u.Path}})
	if pg := thief.get(ts.accountURL()); pg.Status != http.StatusSeeOther || !strings.Contains(pg.Location, "/signin?rd=") ||
		strings.Contains(pg.Body, `id="account-email"`) {
		t.Fatalf("the account page with the forward-auth token: %d %s %s", pg.Status, pg.URL, pg.Body)
	}
	r := ts.admin("POST", "/api/v1/admin/projects/"+pid+"/clients", map[string]any{"name": "Other app", "type": "confidential",
		"firstParty": true, "redirectUris": []string{rpRedirect}})
	wantOK(t, r)
	other := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	issuer, _ := url.Parse(ts.faBase() + "/oidc/" + pid + "/")
	other.client.Jar.SetCookies(issuer, []*http.Cookie{{Name: "lk_sso_" + pid, Value: fa, Path: issuer.Path}})
	q := url.Values{"client_id": {str(t, obj(t, r.Body, "client"), "id")}, "redirect_uri": {rpRedirect}, "response_type": {"code"},
		"scope": {"openid"}, "state": {"st"}}
	pg := other.get(ts.faBase() + "/oidc/" + pid + "/authorize?" + q.Encode())
	if pg.Status != http.StatusFound || !strings.Contains(pg.Location, "/login?authRequestID=") {
		t.Fatalf("authorize: %d %q", pg.Status, pg.Location)
	}
	if pg = other.get(pg.Location); pg.Status != http.StatusOK || !strings.Contains(pg.Body, `name="email"`) {
		t.Fatalf("the provider with the forward-auth token as its cookie: %d %q %s, want the sign-in page", pg.Status, pg.Location, pg.Body)
	}

	// The sign-out takes the cookie and ends its session.
	out := b.get(ts.faBase() + "/oidc/" + pid + "/logout?rd=" + url.QueryEscape(app+"/"))
	if out.Status != http.StatusSeeOther || alive(ts, sso) {
		t.Fatalf("sign-out: %d %s, session alive %v", out.Status, out.Body, alive(ts, sso))
	}
	if r := ts.fwdCheck("127.0.0.1", pid, fwdHeaders(app+"/"), fa); r.Status == http.StatusOK {
		t.Fatalf("the forward-auth token after the sign-out: %d %s", r.Status, r.Raw)
	}
}
