package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
)

// Attacks from a neighbour: another host under the same parent domain
// (an app behind forward-auth), which may set cookies for the whole
// domain and whose pages are same-site to latchkey's.

// TestPageFormsFromNeighbour: a form of the account page posted by a
// browser that says it came from another origin changes nothing, even
// with a valid CSRF token of that browser's secret (which a neighbour
// that planted the secret's cookie knows): Sec-Fetch-Site same-site or
// cross-site, or, from a browser that sends no Sec-Fetch-Site, an
// Origin other than the issuer's. From the page's own origin, or with
// neither header (no browser), the token decides as before.
func TestPageFormsFromNeighbour(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const addr = "neighbour@example.com"
	b := ts.newBrowser()
	if pg := b.signIn(b.get(ts.accountURL()), addr); !strings.Contains(pg.Body, `id="account-email">`+addr+`<`) {
		t.Fatalf("not signed in to the account page: %d %s", pg.Status, pg.URL)
	}
	ts.Clock.Advance(time.Minute) // the address's next code
	other := str(t, ts.login(addr).Body, "token")
	otherID := str(t, ts.do("GET", "/api/v1/session", other, nil).Body["session"].(map[string]any), "id")
	secret := ""
	u, _ := url.Parse(ts.accountURL())
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "lk_csrf_"+ts.Project.ID {
			secret = c.Value
		}
	}
	if secret == "" {
		t.Fatal("the page set no CSRF cookie")
	}
	end := func(headers map[string]string) *webPage {
		form := url.Values{"sessionId": {otherID}, "csrf": {ts.Svc.AccountFormToken(secret)}}
		req, _ := http.NewRequest("POST", ts.accountURL()+"/session-end", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		return b.do(req)
	}
	for _, h := range []map[string]string{
		{"Sec-Fetch-Site": "same-site", "Origin": "http://evil.example.com"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "none"},
		{"Origin": "http://evil.example.com"},
		{"Origin": ts.URL + ".evil.example"},
	} {
		pg := end(h)
		if pg.Status != http.StatusForbidden || strings.Contains(pg.URL.String(), "done=") {
			t.Errorf("%v: %d %s, want the stale form's 403", h, pg.Status, pg.URL)
		}
		wantOK(t, ts.do("GET", "/api/v1/session", other, nil))
	}
	if pg := end(map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "null"}); !strings.Contains(pg.URL.String(), "done=") {
		t.Fatalf("from the page's own origin: %d %s", pg.Status, pg.URL)
	}
	wantError(t, ts.do("GET", "/api/v1/session", other, nil), http.StatusUnauthorized, "INVALID_SESSION")
}

// TestPageCookiesHostOnly: on an https issuer the pages' cookies are
// __Host- cookies (Secure, Path /, no Domain), which no other host can
// set; a cookie of the plain name, as a neighbour would plant for the
// parent domain, is not read: a form whose token matches it is refused,
// one whose token matches the __Host- cookie is taken.
func TestPageCookiesHostOnly(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *auth.Config) { c.BaseURL = "https://auth.example.com" })
	pid := ts.Project.ID
	res, err := http.Get(ts.URL + "/oidc/" + pid + auth.ForwardAuthSignInPath + "?rd=" + url.QueryEscape("https://auth.example.com/oidc/"+pid+auth.AccountPath))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	var csrf *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == "__Host-lk_csrf_"+pid {
			csrf = c
		}
	}
	if csrf == nil || !csrf.Secure || csrf.Path != "/" || csrf.Domain != "" || !csrf.HttpOnly {
		t.Fatalf("the sign-in page's cookies %v, want __Host-lk_csrf_%s, Secure, Path /, no Domain", res.Header.Values("Set-Cookie"), pid)
	}
	post := func(cookie string) int {
		const id = "no-such-request"
		form := url.Values{"authRequestID": {id}, "email": {"host@example.com"}, "csrf": {ts.Svc.OIDCFormToken(csrf.Value, id)}}
		req, _ := http.NewRequest("POST", ts.URL+"/oidc/"+pid+auth.OIDCLoginPath, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Cookie", cookie)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if st := post("lk_csrf_" + pid + "=" + csrf.Value); st != http.StatusForbidden {
		t.Errorf("a form with the plain-named cookie: %d, want 403", st)
	}
	if st := post("__Host-lk_csrf_" + pid + "=" + csrf.Value); st == http.StatusForbidden {
		t.Errorf("a form with the __Host- cookie: %d, want its request's answer", st)
	}
}

// TestAccountSignInForwardAuthCookieOnly: a browser that has kept its
// forward-auth cookie (it lasts) but lost its single sign-on cookie
// (gone with the browser session) is asked to sign in to the account
// page, which reads only the latter; before, the sign-in page sent it
// back to the account page, which sent it to the sign-in page, for ever.
func TestAccountSignInForwardAuthCookieOnly(t *testing.T) {
	t.Parallel()
	ts := newFwdServer(t)
	pid := ts.Project.ID
	b := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	app := "http://app." + faDomain + "/"
	if back := b.signIn(b.get(ts.faBase()+"/oidc/"+pid+"/signin?rd="+url.QueryEscape(app)), "restart@example.com"); back.Status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", back.Status, back.Body)
	}
	fa := b.cookie(pid)
	if fa == "" {
		t.Fatal("no forward-auth cookie")
	}
	account := ts.faBase() + "/oidc/" + pid + auth.AccountPath
	req, _ := http.NewRequest("GET", ts.faBase()+"/oidc/"+pid+auth.ForwardAuthSignInPath+"?rd="+url.QueryEscape(account), nil)
	req.Header.Set("Cookie", "lk_fa_"+pid+"="+fa)
	res, err := loopbackClient(t, false).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the account page's sign-in with the forward-auth cookie alone: %d to %q, want the sign-in form", res.StatusCode, res.Header.Get("Location"))
	}
}
