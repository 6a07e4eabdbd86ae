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
