package httpapi_test

import (
	"context"
	"latchkey/internal/testkit"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/httpapi"
	"latchkey/store"
)

// Forward-auth over real HTTP: the check as proxies call it (trusted
// and untrusted peers, nginx's X-Original-URL and the X-Forwarded-*
// headers), every rule and refusal, the admin API's settings, and the
// sign-in pages of proxied apps driven by a browser with a cookie jar.

// faDomain is the cookie domain of these tests: latchkey answers as
// auth.fa.localhost and the apps are under fa.localhost (names a
// cookie jar treats as a secure origin, like browsers; the tests'
// dialer sends every name to loopback).
const faDomain = "fa.localhost"

// faRules are the rules of the tests' project.
var faRules = []map[string]any{
	{"host": "app." + faDomain, "pathPrefix": "/public/", "policy": "bypass"},
	{"host": "app." + faDomain, "pathPrefix": "/admin/", "policy": "mfa"},
	{"host": "app." + faDomain, "pathPrefix": "/ops/", "policy": "signed_in", "groups": []string{"ops", "sre"}},
	{"host": "app." + faDomain, "policy": "signed_in"},
	{"host": "*.tools." + faDomain, "policy": "signed_in"},
}

// newFwdServer starts a server whose base URL is
// http://auth.fa.localhost:<port>, trusting 127.0.0.1 as a proxy, with
// the default project's forward-auth set to faRules.
func newFwdServer(t *testing.T) *testServer {
	t.Helper()
	return newFwdServerTrusting(t, "127.0.0.1/32")
}

// newFwdServerTrusting is newFwdServer trusting proxies at the addresses
// of prefix instead.
func newFwdServerTrusting(t *testing.T, prefix string) *testServer {
	t.Helper()
	ts := newTestServerWith(t, store.Options{}, func(c *httpapi.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix(prefix)}
	}, func(c *auth.Config) {
		c.BaseURL = strings.Replace(c.BaseURL, "127.0.0.1", "auth."+faDomain, 1)
	})
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{
		"forwardAuth": map[string]any{"cookieDomain": "." + faDomain, "rules": faRules}}))
	return ts
}

// faBase is the server's base URL (auth.fa.localhost).
func (ts *testServer) faBase() string {
	return strings.Replace(ts.URL, "127.0.0.1", "auth."+faDomain, 1)
}

// loopbackClient returns a client (with a cookie jar when jar) that
// dials loopback whatever the name, keeping the port, and follows no
// redirect.
func loopbackClient(t testing.TB, jar bool) *http.Client {
	d := &net.Dialer{}
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		return d.DialContext(ctx, network, "127.0.0.1:"+port)
	}}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if jar {
		j, err := cookiejar.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		c.Jar = j
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// fwdCheck calls the check for project pid from ip with headers
// (name: value) and cookie, the forward-auth cookie's value ("" for
// none).
func (ts *testServer) fwdCheck(ip, pid string, headers map[string]string, cookie string) *response {
	ts.t.Helper()
	req, err := http.NewRequest("GET", ts.URL+"/api/v1/forward-auth/"+pid, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: "lk_fa_" + pid, Value: cookie})
	}
	return ts.sendFrom(ip, req)
}

// fwdHeaders are the X-Forwarded-* headers of a GET of u (Caddy's and
// Traefik's way).
func fwdHeaders(u string) map[string]string {
	p, _ := url.Parse(u)
	return map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Proto": p.Scheme, "X-Forwarded-Host": p.Host, "X-Forwarded-Uri": p.RequestURI()}
}

// wantIdentity fails unless r is 200 with the identity headers of u
// and groups.
func wantIdentity(t *testing.T, r *response, u *store.User, groups string) {
	t.Helper()
	wantOK(t, r)
	for h, want := range map[string]string{"Remote-User": u.ID, "Remote-Email": u.Email, "Remote-Groups": groups, "Remote-Name": u.FirstName} {
		if got, ok := r.Header[h]; !ok || got[0] != want {
			t.Errorf("%s = %q (present %v), want %q", h, got, ok, want)
		}
	}
}

// TestForwardAuthCheck: every rule and refusal of the check, as a
// trusted proxy calls it: bypass without identity; the sign-in needed
// answered 401 to nginx (X-Original-URL) and 302 to the sign-in page
// with the original URL to the others; a session of the project passes
// with the identity headers; a path that leaves a bypass prefix with
// .. is held to the rule of the path it resolves to; an mfa rule wants
// a session that proved TOTP; a group rule refuses a user in none of
// its groups (403) and admits one in any; no rule is 403; a wildcard
// host; a revoked session, another project's session, garbage, an
// unknown project; and a rule change shows on the next check.
func TestForwardAuthCheck(t *testing.T) {
	t.Parallel()
	ts := newFwdServer(t)
	pid := ts.Project.ID
	const ip = "127.0.0.1"
	plain := str(t, ts.login("plain@example.com").Body, "token")
	mfaTok := str(t, ts.login("mfa@example.com").Body, "token")
	ts.enrollTOTP(mfaTok)
	opsTok := str(t, ts.login("ops@example.com").Body, "token")
	ops := ts.userByEmail("ops@example.com")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+ops.ID, map[string]any{"groups": []string{"sre"}}))
	wantOK(t, ts.do("PATCH", "/api/v1/user", opsTok, map[string]any{"firstName": "Opal"}))
	ops = ts.userByEmail("ops@example.com")
	app := "http://app." + faDomain

	// Bypass: no session needed, no identity given.
	r := ts.fwdCheck(ip, pid, fwdHeaders(app+"/public/style.css"), "")
	wantOK(t, r)
	if _, ok := r.Header["Remote-User"]; ok {
		t.Errorf("bypass answered with Remote-User %q", r.Header.Get("Remote-User"))
	}
	// No session: 302 to the sign-in page with the original URL (Caddy,
	// Traefik), 401 to nginx.
	r = ts.fwdCheck(ip, pid, fwdHeaders(app+"/page?x=1"), "")
	wantError(t, r, http.StatusFound, "SIGN_IN_REQUIRED")
	if want := ts.faBase() + "/oidc/" + pid + "/signin?rd=" + url.QueryEscape(app+"/page?x=1"); r.Header.Get("Location") != want {
		t.Errorf("Location %q, want %q", r.Header.Get("Location"), want)
	}
	wantError(t, ts.fwdCheck(ip, pid, map[string]string{"X-Original-URL": app + "/page"}, ""), http.StatusUnauthorized, "SIGN_IN_REQUIRED")
	wantError(t, ts.fwdCheck(ip, pid, map[string]string{"X-Original-URL": app + "/page"}, "garbage"), http.StatusUnauthorized, "SIGN_IN_REQUIRED")
	// .. out of the bypass prefix is the path it resolves to.
	wantError(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/public/..%2fadmin/"), ""), http.StatusFound, "SIGN_IN_REQUIRED")
	wantError(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/public/../admin/x"), plain), http.StatusFound, "SIGN_IN_REQUIRED")
	// A path a servlet container reads under another rule than nginx
	// does (/public/..;/admin/ is /admin/ to Tomcat) is refused, signed
	// in or not; one read alike by both passes.
	for _, u := range []string{"/public/..;/admin/", "/public/..;x/admin/", "/public/.%2e;/admin/", "/public\\..\\admin/", "/public/..%5cadmin/"} {
		r := ts.fwdCheck(ip, pid, fwdHeaders(app+u), mfaTok)
		wantError(t, r, http.StatusForbidden, "ACCESS_DENIED")
		if !strings.Contains(r.Body["error"].(string), "reads differently") {
			t.Errorf("%s: refusal %q, want it to say why", u, r.Body["error"])
		}
	}
	// A '#' in the path, which browsers never send: /public/#/../../admin/x
	// is /admin/x to servers that read it as a character (Go's), and
	// /admin#/../public/x is /admin to those that take it for the
	// fragment's start. Refused, by either header; in the query it is
	// no path's.
	for _, h := range []map[string]string{
		{"X-Original-URL": app + "/public/#/../../admin/x"},
		{"X-Original-URL": app + "/admin#/../public/x"},
		{"X-Forwarded-Proto": "http", "X-Forwarded-Host": "app." + faDomain, "X-Forwarded-Uri": "/public/#/../../admin/x"},
	} {
		r := ts.fwdCheck(ip, pid, h, "")
		wantError(t, r, http.StatusForbidden, "ACCESS_DENIED")
		if !strings.Contains(r.Body["error"].(string), "'#'") {
			t.Errorf("%v: refusal %q, want it to say why", h, r.Body["error"])
		}
	}
	wantOK(t, ts.fwdCheck(ip, pid, map[string]string{"X-Original-URL": app + "/public/style.css?v=1#x"}, ""))
	// A Host header that ends with '?' or '#' (nginx takes it, and
	// writes X-Original-URL from it) would move the whole path into a
	// query or a fragment, under the rule of /: refused, signed in or
	// not.
	for _, u := range []string{app + "?/admin/x", app + ":80?/admin/x", app + "#/admin/x", app + "?"} {
		wantError(t, ts.fwdCheck(ip, pid, map[string]string{"X-Original-URL": u}, mfaTok), http.StatusBadRequest, "FORWARDED_HEADERS_MISSING")
	}
	wantOK(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/public/a;v=1/style.css"), ""))
	wantIdentity(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/page;jsessionid=1"), plain), ts.userByEmail("plain@example.com"), "")

	// Signed in: the identity headers.
	wantIdentity(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/page"), plain), ts.userByEmail("plain@example.com"), "")
	wantIdentity(t, ts.fwdCheck(ip, pid, map[string]string{"X-Original-URL": "http://x.tools." + faDomain + ":8080/"}, plain),
		ts.userByEmail("plain@example.com"), "")
	// mfa: a session without a second factor is asked for one.
	r = ts.fwdCheck(ip, pid, map[string]string{"X-Original-URL": app + "/admin/"}, plain)
	wantError(t, r, http.StatusUnauthorized, "SIGN_IN_REQUIRED")
	if !strings.Contains(r.Body["error"].(string), "second factor") {
		t.Errorf("mfa refusal %q, want it to name the second factor", r.Body["error"])
	}
	wantIdentity(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/admin/"), mfaTok), ts.userByEmail("mfa@example.com"), "")
	// Groups: none of the rule's is 403; one of them passes.
	r = ts.fwdCheck(ip, pid, fwdHeaders(app+"/ops/"), plain)
	wantError(t, r, http.StatusForbidden, "ACCESS_DENIED")
	wantIdentity(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/ops/"), opsTok), ops, "sre")
	// No rule covers the host (nor the wildcard's domain itself).
	for _, u := range []string{"http://other." + faDomain + "/", "http://tools." + faDomain + "/", "http://app.example.com/"} {
		wantError(t, ts.fwdCheck(ip, pid, fwdHeaders(u), plain), http.StatusForbidden, "ACCESS_DENIED")
	}
	// A session of another project is no sign-in here.
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Other"})
	wantOK(t, other)
	otherID := str(t, obj(t, other.Body, "project"), "id")
	otherKey := ts.createKey(map[string]any{"projectId": otherID, "mode": "test"})
	wantOK(t, ts.do("POST", "/api/v1/otp/send", otherKey, map[string]any{"email": "x@example.com"}))
	v := ts.do("POST", "/api/v1/otp/verify", otherKey, map[string]any{"email": "x@example.com", "code": ts.lastMail("x@example.com").Code})
	wantOK(t, v)
	wantError(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/"), str(t, v.Body, "token")), http.StatusFound, "SIGN_IN_REQUIRED")
	// That project has no forward-auth: everything is refused; an
	// unknown project is 404.
	wantError(t, ts.fwdCheck(ip, otherID, fwdHeaders(app+"/public/"), ""), http.StatusForbidden, "ACCESS_DENIED")
	wantError(t, ts.fwdCheck(ip, "no-such-project", fwdHeaders(app+"/"), ""), http.StatusNotFound, "PROJECT_NOT_FOUND")

	// A rule change shows on the next check.
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"forwardAuth": map[string]any{
		"cookieDomain": faDomain, "rules": []map[string]any{{"host": "app." + faDomain, "policy": "bypass"}}}}))
	wantOK(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/ops/"), ""))
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"forwardAuth": nil}))
	wantError(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/ops/"), ""), http.StatusForbidden, "ACCESS_DENIED")

	// Sign-out: a revoked session is no sign-in.
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"forwardAuth": map[string]any{"cookieDomain": faDomain, "rules": faRules}}))
	wantOK(t, ts.do("POST", "/api/v1/logout", plain, nil))
	wantError(t, ts.fwdCheck(ip, pid, fwdHeaders(app+"/page"), plain), http.StatusFound, "SIGN_IN_REQUIRED")
}

// TestForwardAuthProxyHeaders: the check answers trusted proxies only,
// and says what is wrong, never with a redirect: a caller outside
// --trusted-proxies gets 400 UNTRUSTED_PROXY whatever its headers (a
// forged X-Forwarded-Host is not read), a trusted one without the
// headers, or with ones that are not a request, or with X-Original-URL
// and X-Forwarded-* naming different requests (one of them a browser's,
// passed on), 400 FORWARDED_HEADERS_MISSING naming them.
func TestForwardAuthProxyHeaders(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "refuses a proxy's headers before any store call")
	ts := newFwdServer(t)
	pid := ts.Project.ID
	app := "http://app." + faDomain
	for _, c := range []struct {
		name, ip string
		headers  map[string]string
		code     string
		says     string
	}{
		{"untrusted, forged headers", "127.0.0.2", fwdHeaders(app + "/public/"), "UNTRUSTED_PROXY", "--trusted-proxies"},
		{"untrusted, X-Original-URL", "127.0.0.2", map[string]string{"X-Original-URL": app + "/public/"}, "UNTRUSTED_PROXY", "--trusted-proxies"},
		{"untrusted, nothing", "127.0.0.2", nil, "UNTRUSTED_PROXY", "--trusted-proxies"},
		{"trusted, nothing", "127.0.0.1", nil, "FORWARDED_HEADERS_MISSING", "X-Forwarded-Proto, X-Forwarded-Host, X-Forwarded-Uri"},
		{"trusted, no host", "127.0.0.1", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Uri": "/"}, "FORWARDED_HEADERS_MISSING", "did not send X-Forwarded-Host:"},
		{"bad proto", "127.0.0.1", map[string]string{"X-Forwarded-Proto": "ftp", "X-Forwarded-Host": "app." + faDomain, "X-Forwarded-Uri": "/"}, "FORWARDED_HEADERS_MISSING", "http or https"},
		{"bad uri", "127.0.0.1", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "app." + faDomain, "X-Forwarded-Uri": "page"}, "FORWARDED_HEADERS_MISSING", "starting with /"},
		{"bad host", "127.0.0.1", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "a/b@c", "X-Forwarded-Uri": "/"}, "FORWARDED_HEADERS_MISSING", "X-Forwarded-Host"},
		{"X-Original-URL and X-Forwarded-* disagree", "127.0.0.1", map[string]string{"X-Original-URL": app + "/public/", "X-Forwarded-Proto": "http", "X-Forwarded-Host": "app." + faDomain, "X-Forwarded-Uri": "/page"}, "FORWARDED_HEADERS_MISSING", "name different requests"},
		{"bad original URL", "127.0.0.1", map[string]string{"X-Original-URL": "/relative"}, "FORWARDED_HEADERS_MISSING", "X-Original-URL"},
		{"undecodable path", "127.0.0.1", map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "app." + faDomain, "X-Forwarded-Uri": "/%zz"}, "FORWARDED_HEADERS_MISSING", "could not be read"},
	} {
		r := ts.fwdCheck(c.ip, pid, c.headers, "")
		wantError(t, r, http.StatusBadRequest, c.code)
		if msg, _ := r.Body["error"].(string); !strings.Contains(msg, c.says) {
			t.Errorf("%s: error %q, want it to say %q", c.name, msg, c.says)
		}
		if loc := r.Header.Get("Location"); loc != "" {
			t.Errorf("%s: redirected to %s", c.name, loc)
		}
	}
}

// TestForwardAuthSettings: the admin API keeps forwardAuth as given
// (the domain's leading dot dropped, hosts lowercased, groups sorted),
// shows null for a project without it, removes it with null, and
// refuses settings that cannot work, changing nothing.
func TestForwardAuthSettings(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	path := "/api/v1/admin/projects/" + ts.Project.ID
	r := ts.admin("GET", path, nil)
	wantOK(t, r)
	if v, ok := obj(t, r.Body, "project")["forwardAuth"]; !ok || v != nil {
		t.Fatalf("forwardAuth of a new project = %v (present %v), want null", v, ok)
	}
	r = ts.admin("PATCH", path, map[string]any{"forwardAuth": map[string]any{"cookieDomain": ".Example.COM", "rules": []map[string]any{
		{"host": "App.Example.com", "pathPrefix": "/a/", "policy": "signed_in", "groups": []string{"b", "a", "b"}},
		{"host": "*.example.com", "policy": "bypass"}}}})
	wantOK(t, r)
	fa := obj(t, obj(t, r.Body, "project"), "forwardAuth")
	if fa["cookieDomain"] != "example.com" {
		t.Errorf("cookieDomain %v, want example.com", fa["cookieDomain"])
	}
	rules := fa["rules"].([]any)
	first := rules[0].(map[string]any)
	if len(rules) != 2 || first["host"] != "app.example.com" || first["pathPrefix"] != "/a/" || first["policy"] != "signed_in" ||
		len(first["groups"].([]any)) != 2 || first["groups"].([]any)[0] != "a" {
		t.Errorf("rules %v", rules)
	}
	for _, c := range []struct {
		name string
		fa   any
		says string
	}{
		{"empty host", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"host": "", "policy": "bypass"}}}, "host is required"},
		{"no host", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"policy": "signed_in"}}}, "host is required"},
		{"host outside the domain", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"host": "app.example.org", "policy": "signed_in"}}}, "not under the cookie domain"},
		{"host with a port", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"host": "app.example.com:8080", "policy": "signed_in"}}}, "host name"},
		{"bad policy", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"host": "app.example.com", "policy": "open"}}}, "policy must be"},
		{"no policy", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"host": "app.example.com"}}}, "policy is required"},
		{"groups on bypass", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"host": "app.example.com", "policy": "bypass", "groups": []string{"a"}}}}, "bypass"},
		{"bad group", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"host": "app.example.com", "policy": "mfa", "groups": []string{"Admins!"}}}}, "not a group name"},
		{"relative prefix", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"host": "app.example.com", "policy": "mfa", "pathPrefix": "admin"}}}, "pathPrefix"},
		{"unclean prefix", map[string]any{"cookieDomain": "example.com", "rules": []map[string]any{{"host": "app.example.com", "policy": "mfa", "pathPrefix": "/a/../b"}}}, "pathPrefix"},
		{"address as domain", map[string]any{"cookieDomain": "10.0.0.1", "rules": []map[string]any{}}, "domain name"},
		{"no domain", map[string]any{"rules": []map[string]any{}}, "cookieDomain and rules"},
		{"no rules", map[string]any{"cookieDomain": "example.com"}, "cookieDomain and rules"},
		{"not an object", "on", "object"},
	} {
		r := ts.admin("PATCH", path, map[string]any{"forwardAuth": c.fa})
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		if msg, _ := r.Body["error"].(string); !strings.Contains(msg, c.says) {
			t.Errorf("%s: error %q, want it to say %q", c.name, msg, c.says)
		}
	}
	r = ts.admin("GET", path, nil)
	if got := obj(t, obj(t, r.Body, "project"), "forwardAuth")["cookieDomain"]; got != "example.com" {
		t.Errorf("after refused changes cookieDomain %v, want it unchanged", got)
	}
	wantOK(t, ts.admin("PATCH", path, map[string]any{"forwardAuth": nil}))
	if v := obj(t, ts.admin("GET", path, nil).Body, "project")["forwardAuth"]; v != nil {
		t.Errorf("after null, forwardAuth %v", v)
	}
	// Create takes it too.
	r = ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Proxied", "forwardAuth": map[string]any{"cookieDomain": "example.net",
		"rules": []map[string]any{{"host": "example.net", "policy": "mfa"}}}})
	wantOK(t, r)
	if got := obj(t, obj(t, r.Body, "project"), "forwardAuth")["cookieDomain"]; got != "example.net" {
		t.Errorf("created with cookieDomain %v", got)
	}
}

// fwdBrowser is a browser on the tests' names: a cookie jar, no
// redirect followed.
type fwdBrowser struct {
	ts     *testServer
	client *http.Client
}

// get opens u.
func (b *fwdBrowser) get(u string) *webPage {
	b.ts.t.Helper()
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		b.ts.t.Fatal(err)
	}
	return (&browser{ts: b.ts, client: b.client}).do(req)
}

// submit posts pg's form.
func (b *fwdBrowser) submit(pg *webPage, values map[string]string) *webPage {
	b.ts.t.Helper()
	return (&browser{ts: b.ts, client: b.client}).submit(pg, values)
}

// signIn signs addr in on the email page pg and returns the answer to
// the code form.
func (b *fwdBrowser) signIn(pg *webPage, addr string) *webPage {
	b.ts.t.Helper()
	return (&browser{ts: b.ts, client: b.client}).signIn(pg, addr)
}

// cookie returns the browser's forward-auth cookie for project pid, as
// an app under the cookie domain receives it ("" for none).
func (b *fwdBrowser) cookie(pid string) string {
	u, _ := url.Parse("http://app." + faDomain + "/")
	for _, c := range b.client.Jar.Cookies(u) {
		if c.Name == "lk_fa_"+pid {
			return c.Value
		}
	}
	return ""
}

// TestForwardAuthSignIn: the sign-in page of a proxied app, as a
// browser drives it: the email, the mailed code, then back to the
// original URL with the cookie set for the cookie domain (which an app
// under it sends, and the check accepts: a session listed with method
// forward-auth); an mfa address asks a user with TOTP for the code; an
// rd to another domain is refused with a page (no redirect); a request
// for an image (the app's favicon, sent to sign in like the page) gets
// no form and no CSRF cookie; a form from another browser is refused;
// sign-out ends the session.
func TestForwardAuthSignIn(t *testing.T) {
	t.Parallel()
	ts := newFwdServer(t)
	pid := ts.Project.ID
	signin := ts.faBase() + "/oidc/" + pid + "/signin?rd="
	app := "http://app." + faDomain

	// rd elsewhere: refused, never followed.
	for _, rd := range []string{"https://evil.example/", "http://app." + faDomain + ".evil.example/", "javascript:alert(1)", "", "//app." + faDomain + "/"} {
		b := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
		pg := b.get(signin + url.QueryEscape(rd))
		if pg.Status != http.StatusBadRequest || pg.Location != "" || !strings.Contains(pg.Body, "not under this project") {
			t.Errorf("rd %q: %d %s %s", rd, pg.Status, pg.Location, pg.Body)
		}
	}

	// The favicon a browser asks the app for, sent to the sign-in page
	// too (Sec-Fetch-Dest: image): no form, so no CSRF cookie to replace
	// the page's; a page (document) gets the form.
	for _, c := range []struct {
		dest   string
		status int
		cookie bool
	}{{"image", http.StatusUnauthorized, false}, {"document", http.StatusOK, true}, {"", http.StatusOK, true}} {
		req, _ := http.NewRequest("GET", signin+url.QueryEscape(app+"/favicon.ico"), nil)
		if c.dest != "" {
			req.Header.Set("Sec-Fetch-Dest", c.dest)
		}
		pg := (&browser{ts: ts, client: loopbackClient(t, true)}).do(req)
		if setsCookie := strings.Contains(strings.Join(pg.Header.Values("Set-Cookie"), ";"), "lk_csrf_"); pg.Status != c.status ||
			setsCookie != c.cookie || strings.Contains(pg.Body, "<form") != c.cookie {
			t.Errorf("sign-in page with Sec-Fetch-Dest %q: %d, CSRF cookie %v, want %d, %v: %s", c.dest, pg.Status, setsCookie, c.status, c.cookie, pg.Body)
		}
	}

	b := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	rd := app + "/page?x=1"
	back := b.signIn(b.get(signin+url.QueryEscape(rd)), "ada@example.com")
	if back.Status != http.StatusSeeOther || back.Location != rd {
		t.Fatalf("after the code: %d %s, want 303 to %s", back.Status, back.Location, rd)
	}
	tok := b.cookie(pid)
	if tok == "" {
		t.Fatal("no forward-auth cookie for the cookie domain")
	}
	wantIdentity(t, ts.fwdCheck("127.0.0.1", pid, fwdHeaders(rd), tok), ts.userByEmail("ada@example.com"), "")
	r := ts.do("GET", "/api/v1/sessions", b.sso(pid), nil)
	wantOK(t, r)
	if list := r.Body["sessions"].([]any); len(list) != 1 || list[0].(map[string]any)["method"] != "forward-auth" {
		t.Errorf("sessions %s, want one of method forward-auth", r.Raw)
	}
	// Signed in already: the page sends the browser straight back.
	if again := b.get(signin + url.QueryEscape(app+"/other")); again.Status != http.StatusSeeOther || again.Location != app+"/other" {
		t.Errorf("signed in, the sign-in page answered %d %s", again.Status, again.Location)
	}
	// An mfa address for a user without a second factor: a page that
	// says so, no redirect.
	if pg := b.get(signin + url.QueryEscape(app+"/admin/")); pg.Status != http.StatusForbidden || pg.Location != "" ||
		!strings.Contains(pg.Body, "requires a second factor") {
		t.Errorf("mfa address for a user without TOTP: %d %s %s", pg.Status, pg.Location, pg.Body)
	}
	// A form posted from another browser does nothing.
	first, other := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}, &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	form := first.get(signin + url.QueryEscape(rd))
	other.get(signin + url.QueryEscape(rd)) // its own CSRF cookie
	n := ts.mailCount()
	if pg := other.submit(form, map[string]string{"email": "eve@example.com"}); pg.Status != http.StatusForbidden || ts.mailCount() != n {
		t.Errorf("another browser's form: %d (mail %d -> %d), want 403 and nothing sent", pg.Status, n, ts.mailCount())
	}
	// Sign-out ends the session and clears the cookie.
	out := b.get(ts.faBase() + "/oidc/" + pid + "/logout?rd=" + url.QueryEscape(app+"/"))
	if out.Status != http.StatusSeeOther || out.Location != app+"/" {
		t.Errorf("sign-out: %d %s", out.Status, out.Location)
	}
	if b.cookie(pid) != "" {
		t.Error("the forward-auth cookie survived the sign-out")
	}
	wantError(t, ts.fwdCheck("127.0.0.1", pid, fwdHeaders(rd), tok), http.StatusFound, "SIGN_IN_REQUIRED")
}

// TestForwardAuthSecondFactor: an address whose rule is mfa asks a
// user with TOTP for the code after the email code (a wrong one shows
// the form again), then sends the browser back; the cookie then passes
// the mfa rule. The forward-auth cookie, which every app under the
// cookie domain receives, is set only then: not while the second factor
// is pending (it was, and the check refused it).
func TestForwardAuthSecondFactor(t *testing.T) {
	t.Parallel()
	ts := newFwdServer(t)
	pid := ts.Project.ID
	const addr = "totp@example.com"
	secret := ts.enrollTOTP(str(t, ts.login(addr).Body, "token"))
	b := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	rd := "http://app." + faDomain + "/admin/users"
	mfa := b.signIn(b.get(ts.faBase()+"/oidc/"+pid+"/signin?rd="+url.QueryEscape(rd)), addr)
	if mfa.Status != http.StatusOK || !strings.Contains(mfa.Body, "authenticator app") {
		t.Fatalf("after the email code: %d %s", mfa.Status, mfa.Body)
	}
	if b.sso(pid) == "" {
		t.Fatal("the emailed code set no single sign-on cookie")
	}
	if fa := b.cookie(pid); fa != "" {
		t.Fatalf("forward-auth cookie %q set while the second factor is pending", fa)
	}
	wrong := b.submit(mfa, map[string]string{"code": ts.wrongTOTP(secret)})
	if wrong.Status != http.StatusUnauthorized || !strings.Contains(wrong.Body, `class="error"`) {
		t.Fatalf("wrong TOTP code: %d %s", wrong.Status, wrong.Body)
	}
	ts.Clock.Advance(30 * time.Second)
	back := b.submit(wrong, map[string]string{"code": ts.totpCode(secret, 0)})
	if back.Status != http.StatusSeeOther || back.Location != rd {
		t.Fatalf("after TOTP: %d %s", back.Status, back.Location)
	}
	wantIdentity(t, ts.fwdCheck("127.0.0.1", pid, fwdHeaders(rd), b.cookie(pid)), ts.userByEmail(addr), "")
}
