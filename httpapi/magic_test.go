package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// magicToken sends a link to addr and returns its raw token.
func (ts *testServer) magicToken(addr string, body map[string]any) string {
	ts.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	body["email"] = addr
	wantOK(ts.t, ts.do("POST", "/api/v1/magic/send", ts.Key, body))
	link := ts.lastMail(addr).Link
	prefix := ts.URL + "/api/v1/magic/verify?token="
	if !strings.HasPrefix(link, prefix) {
		ts.t.Fatalf("link %q does not start with %q", link, prefix)
	}
	u, _ := url.Parse(link)
	return u.Query().Get("token")
}

func TestMagicLinkJSON(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.magicToken("m@example.com", map[string]any{"redirectUrl": "http://localhost:3000/welcome"})
	r := ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok), "", nil)
	wantOK(t, r)
	for _, f := range []string{"token", "userId", "user", "companyId", "deviceToken", "needsProfile", "redirectUrl"} {
		if _, ok := r.Body[f]; !ok {
			t.Fatalf("result lacks %q: %s", f, r.Raw)
		}
	}
	u := obj(t, r.Body, "user")
	for _, f := range []string{"id", "email", "company_id", "first_name"} {
		if _, ok := u[f]; !ok {
			t.Fatalf("user lacks %q: %s", f, r.Raw)
		}
	}
	if r.Body["needsProfile"] != true || r.Body["redirectUrl"] != "http://localhost:3000/welcome" {
		t.Fatalf("result=%s", r.Raw)
	}
	wantOK(t, ts.do("GET", "/api/v1/session", str(t, r.Body, "token"), nil))
	// Single use.
	wantError(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok), "", nil), 401, "INVALID_TOKEN")
	if eventCategories(ts)["already_used"] != 1 {
		t.Fatal("reuse not recorded as already_used")
	}

	// With a first name, needsProfile is false; no redirectUrl is null.
	jwt := str(t, r.Body, "token")
	wantOK(t, ts.do("PATCH", "/api/v1/user", jwt, map[string]any{"firstName": "Mo"}))
	ts.Clock.Advance(31 * time.Second)
	tok = ts.magicToken("m@example.com", nil)
	r = ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok), "", nil)
	wantOK(t, r)
	if r.Body["needsProfile"] != false || r.Body["redirectUrl"] != nil || obj(t, r.Body, "user")["first_name"] != "Mo" {
		t.Fatalf("result=%s", r.Raw)
	}
}

func TestMagicLinkRedirect(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.magicToken("r@example.com", nil)
	// A disallowed redirect_uri is refused and leaves the link unused.
	wantError(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok)+"&redirect_uri="+url.QueryEscape("https://evil.example/cb"), "", nil), 400, "INVALID_REDIRECT_URL")
	r := ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok)+"&redirect_uri="+url.QueryEscape("http://localhost:3000/cb?x=1"), "", nil)
	if r.Status != http.StatusFound {
		t.Fatalf("status=%d, want 302 (%s)", r.Status, r.Raw)
	}
	loc, _ := url.Parse(r.Header.Get("Location"))
	if loc.Host != "localhost:3000" || loc.Path != "/cb" || loc.Query().Get("x") != "1" {
		t.Fatalf("Location=%s", loc)
	}
	wantOK(t, ts.do("GET", "/api/v1/session", loc.Query().Get("token"), nil))
}

func TestMagicLinkErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantError(t, ts.do("GET", "/api/v1/magic/verify", "", nil), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("GET", "/api/v1/magic/verify?token=unknown", "", nil), 401, "INVALID_TOKEN")
	tok := ts.magicToken("e@example.com", nil)
	ts.Clock.Advance(15*time.Minute + time.Second)
	wantError(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok), "", nil), 401, "INVALID_TOKEN")
	if eventCategories(ts)["expired"] != 1 {
		t.Fatal("expiry not recorded")
	}
}

func TestMagicSendRedirectValidation(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	bad := []string{
		"https://localhost:3000/x",          // other scheme
		"http://localhost:3001/x",           // other port
		"http://localhost/x",                // no port
		"http://localhost:3000@evil.com/",   // userinfo trick
		"http://evil.com\\@localhost:3000/", // backslash
		"http://localhost%3A3000@evil.com/", // encoded
		"javascript:alert(1)",
		"//localhost:3000/x",
		"http:localhost:3000",
		"http://localhost:3000.evil.com/",
		"http://LOCALHOST:3000 /x",
	}
	for _, u := range bad {
		t.Run(u, func(t *testing.T) {
			wantError(t, ts.do("POST", "/api/v1/magic/send", ts.Key, map[string]any{"email": "a@example.com", "redirectUrl": u}), 400, "INVALID_REDIRECT_URL")
		})
	}
	if n := ts.mailCount(); n != 0 {
		t.Fatalf("%d messages queued", n)
	}
	wantOK(t, ts.do("POST", "/api/v1/magic/send", ts.Key, map[string]any{"email": "a@example.com", "redirectUrl": "HTTP://LocalHost:3000/ok#frag"}))
}

func TestMagicLinkScannerProtection(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.magicToken("b@example.com", map[string]any{"redirectUrl": "http://localhost:3000/app"})
	link := ts.URL + "/api/v1/magic/verify?token=" + url.QueryEscape(tok)

	// A browser navigation (and a scanner pretending to be one) gets a
	// confirm page; the token stays unused however often it is opened.
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("GET", link, nil)
		req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
		r := ts.send(req)
		if r.Status != 200 || !strings.Contains(string(r.Raw), "<form") || !strings.Contains(string(r.Raw), "default") {
			t.Fatalf("confirm page: status=%d body=%s", r.Status, r.Raw)
		}
	}
	// Only the page's POST consumes it, and redirects to the send-time URL.
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/magic/verify", strings.NewReader(url.Values{"token": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r := ts.send(req)
	if r.Status != http.StatusFound {
		t.Fatalf("POST status=%d body=%s", r.Status, r.Raw)
	}
	loc, _ := url.Parse(r.Header.Get("Location"))
	if loc.Path != "/app" {
		t.Fatalf("Location=%s", loc)
	}
	wantOK(t, ts.do("GET", "/api/v1/session", loc.Query().Get("token"), nil))
	// Now used: the JSON path says so.
	wantError(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok), "", nil), 401, "INVALID_TOKEN")
}

// get sends a GET with an optional Accept header.
func (ts *testServer) getAccept(path, accept string) *response {
	ts.t.Helper()
	req, err := http.NewRequest("GET", ts.URL+path, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	return ts.send(req)
}

// postForm posts the confirm page's form.
func (ts *testServer) postForm(path string, form url.Values) *response {
	ts.t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return ts.send(req)
}

// TestMagicVerifyAcceptHeaders: only a browser navigation gets the
// confirm page; scanners and API clients sending no Accept, */* or JSON
// get the JSON login result, which consumes the link.
func TestMagicVerifyAcceptHeaders(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, accept := range []string{"", "*/*", "application/json", "text/html, application/json", "application/json;q=0.9, text/html"} {
		t.Run("accept="+accept, func(t *testing.T) {
			ts.Clock.Advance(31 * time.Second)
			tok := ts.magicToken("acc@example.com", nil)
			r := ts.getAccept("/api/v1/magic/verify?token="+url.QueryEscape(tok), accept)
			wantOK(t, r)
			if r.Body["token"] == nil {
				t.Fatalf("body=%s", r.Raw)
			}
		})
	}
	ts.Clock.Advance(31 * time.Second)
	tok := ts.magicToken("acc@example.com", nil)
	for _, accept := range []string{"text/html", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"} {
		r := ts.getAccept("/api/v1/magic/verify?token="+url.QueryEscape(tok), accept)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(r.Raw), `method="post"`) {
			t.Fatalf("accept %q: status=%d body=%s", accept, r.Status, r.Raw)
		}
	}
	wantOK(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok), "", nil))
}

// TestMagicConfirmPage: the confirm page carries redirect_uri into its
// form, refuses one outside the origins without spending the link, and
// its POST shows a signed-in page when there is nowhere to redirect; a
// JSON POST is answered like the GET.
func TestMagicConfirmPage(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const browser = "text/html,application/xhtml+xml"
	tok := ts.magicToken("cp@example.com", nil)
	q := "/api/v1/magic/verify?token=" + url.QueryEscape(tok)

	r := ts.getAccept(q+"&redirect_uri="+url.QueryEscape("https://evil.example/"), browser)
	if r.Status != 400 || !strings.Contains(string(r.Raw), "not an allowed origin") {
		t.Fatalf("bad redirect page: status=%d body=%s", r.Status, r.Raw)
	}
	r = ts.postForm("/api/v1/magic/verify", url.Values{"token": {tok}, "redirect_uri": {"https://evil.example/"}})
	if r.Status != 400 {
		t.Fatalf("POST with bad redirect: status=%d body=%s", r.Status, r.Raw)
	}
	r = ts.getAccept(q+"&redirect_uri="+url.QueryEscape("http://localhost:3000/in"), browser)
	if r.Status != 200 || !strings.Contains(string(r.Raw), `name="redirect_uri" value="http://localhost:3000/in"`) {
		t.Fatalf("confirm page: status=%d body=%s", r.Status, r.Raw)
	}
	r = ts.postForm("/api/v1/magic/verify", url.Values{"token": {tok}})
	if r.Status != 200 || !strings.Contains(string(r.Raw), "signed in") {
		t.Fatalf("signed-in page: status=%d body=%s", r.Status, r.Raw)
	}
	r = ts.postForm("/api/v1/magic/verify", url.Values{"token": {tok}})
	if r.Status != 401 || !strings.Contains(string(r.Raw), "already used") {
		t.Fatalf("second POST: status=%d body=%s", r.Status, r.Raw)
	}
	r = ts.postForm("/api/v1/magic/verify", url.Values{})
	if r.Status != 400 {
		t.Fatalf("POST without token: status=%d body=%s", r.Status, r.Raw)
	}

	// The form's redirect_uri wins over the send-time redirectUrl.
	ts.Clock.Advance(31 * time.Second)
	tok = ts.magicToken("cp@example.com", map[string]any{"redirectUrl": "http://localhost:3000/saved"})
	r = ts.postForm("/api/v1/magic/verify", url.Values{"token": {tok}, "redirect_uri": {"http://localhost:3000/in?a=b"}})
	if loc := r.Header.Get("Location"); r.Status != http.StatusFound || !strings.HasPrefix(loc, "http://localhost:3000/in?a=b&token=") {
		t.Fatalf("POST with redirect_uri: status=%d Location=%q", r.Status, loc)
	}

	ts.Clock.Advance(31 * time.Second)
	tok = ts.magicToken("cp@example.com", map[string]any{"redirectUrl": "http://localhost:3000/saved"})
	j := ts.do("POST", "/api/v1/magic/verify", "", map[string]any{"token": tok})
	wantOK(t, j)
	if j.Body["redirectUrl"] != "http://localhost:3000/saved" || j.Body["token"] == nil {
		t.Fatalf("JSON POST: %s", j.Raw)
	}
	wantError(t, ts.do("POST", "/api/v1/magic/verify", "", map[string]any{"token": tok}), 401, "INVALID_TOKEN")
	wantError(t, ts.do("POST", "/api/v1/magic/verify", "", map[string]any{}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("POST", "/api/v1/magic/verify", "", map[string]any{"token": 5}), 400, "VALIDATION_ERROR")
}

// TestMagicRedirectTokenParam: the JWT joins the redirect URL's query
// with ? or &, before any fragment.
func TestMagicRedirectTokenParam(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, c := range []struct{ redirect, prefix, suffix string }{
		{"http://localhost:3000/cb", "http://localhost:3000/cb?token=", ""},
		{"http://localhost:3000/cb?a=1&b=2", "http://localhost:3000/cb?a=1&b=2&token=", ""},
		{"http://localhost:3000/cb#/route?x", "http://localhost:3000/cb?token=", "#/route?x"},
		{"http://localhost:3000", "http://localhost:3000?token=", ""},
	} {
		t.Run(c.redirect, func(t *testing.T) {
			ts.Clock.Advance(31 * time.Second)
			tok := ts.magicToken("rd@example.com", nil)
			r := ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok)+"&redirect_uri="+url.QueryEscape(c.redirect), "", nil)
			loc := r.Header.Get("Location")
			if r.Status != http.StatusFound || !strings.HasPrefix(loc, c.prefix) || !strings.HasSuffix(loc, c.suffix) {
				t.Fatalf("status=%d Location=%q, want %q…%q", r.Status, loc, c.prefix, c.suffix)
			}
			if r.Header.Get("Cache-Control") != "no-store" {
				t.Fatalf("Cache-Control=%q", r.Header.Get("Cache-Control"))
			}
			jwt := strings.TrimSuffix(strings.TrimPrefix(loc, c.prefix), c.suffix)
			wantOK(t, ts.do("GET", "/api/v1/session", jwt, nil))
		})
	}
}

// TestMagicLinkFailureTexts: unknown, used and expired links share 401
// INVALID_TOKEN; the texts tell used and expired apart.
func TestMagicLinkFailureTexts(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	used := ts.magicToken("ft@example.com", nil)
	wantOK(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(used), "", nil))
	ts.Clock.Advance(31 * time.Second)
	expired := ts.magicToken("ft@example.com", nil)
	ts.Clock.Advance(15 * time.Minute)
	for tok, text := range map[string]string{used: "already used", expired: "expired", "x": "Invalid"} {
		r := ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok), "", nil)
		wantError(t, r, 401, "INVALID_TOKEN")
		if !strings.Contains(r.Body["error"].(string), text) {
			t.Fatalf("text=%q, want it to say %q", r.Body["error"], text)
		}
	}
}
