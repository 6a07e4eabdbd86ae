package httpapi_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// dashClient is a browser-like client with a cookie jar.
type dashClient struct {
	t    *testing.T
	ts   *testServer
	http *http.Client
}

func newDashClient(t *testing.T, ts *testServer) *dashClient {
	jar, _ := cookiejar.New(nil)
	return &dashClient{t: t, ts: ts, http: &http.Client{Jar: jar}}
}

func (c *dashClient) get(path string) (int, string) {
	c.t.Helper()
	res, err := c.http.Get(c.ts.URL + path)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (c *dashClient) post(path string, form url.Values) (int, string) {
	c.t.Helper()
	res, err := c.http.PostForm(c.ts.URL+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func TestDashboard(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := newDashClient(t, ts)
	if _, body := c.get("/admin/"); !strings.Contains(body, `name="token"`) {
		t.Fatal("no login form")
	}
	if code, _ := c.post("/admin/login", url.Values{"token": {"adm_wrongwrongwrongwrong"}}); code != 401 {
		t.Fatalf("wrong token: status %d", code)
	}
	// The session cookie is HttpOnly and SameSite=Strict.
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).
		PostForm(ts.URL+"/admin/login", url.Values{"token": {testAdminToken}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || len(res.Cookies()) != 1 {
		t.Fatalf("login: status %d, cookies %v", res.StatusCode, res.Header["Set-Cookie"])
	}
	if ck := res.Cookies()[0]; ck.Name != "latchkey_admin" || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/admin" || ck.Secure {
		t.Fatalf("cookie %q, want HttpOnly; SameSite=Strict; Path=/admin (not Secure on http)", res.Header.Get("Set-Cookie"))
	}
	code, body := c.post("/admin/login", url.Values{"token": {testAdminToken}})
	if code != 200 || !strings.Contains(body, "Projects") {
		t.Fatalf("login: %d", code)
	}
	csrf := csrfField.FindStringSubmatch(body)[1]

	// A POST without the session's CSRF token is refused and changes
	// nothing: none, a wrong one, or another session's.
	wrong := "A" + csrf[1:]
	if csrf[0] == 'A' {
		wrong = "B" + csrf[1:]
	}
	other := newDashClient(t, ts)
	_, otherBody := other.post("/admin/login", url.Values{"token": {testAdminToken}})
	otherCSRF := csrfField.FindStringSubmatch(otherBody)[1]
	for name, form := range map[string]url.Values{
		"none":          {"name": {"Forged"}},
		"wrong":         {"name": {"Forged"}, "csrf": {wrong}},
		"other session": {"name": {"Forged"}, "csrf": {otherCSRF}},
	} {
		if code, _ := c.post("/admin/projects", form); code != 403 {
			t.Fatalf("csrf %s: status %d, want 403", name, code)
		}
	}
	if ps := ts.admin("GET", "/api/v1/admin/projects", nil); len(ps.Body["projects"].([]any)) != 1 {
		t.Fatalf("forged POSTs created a project: %s", ps.Raw)
	}
	code, body = c.post("/admin/projects", url.Values{"name": {"Shop"}, "origins": {"https://shop.example\nhttp://localhost:5173"}, "csrf": {csrf}})
	if code != 200 || !strings.Contains(body, "<h1>Shop</h1>") || !strings.Contains(body, "https://shop.example") {
		t.Fatalf("create project: %d", code)
	}
	projPath := regexp.MustCompile(`action="(/admin/projects/[0-9a-f-]+)/keys#keys"`).FindStringSubmatch(body)[1]
	code, body = c.post(projPath+"/keys", url.Values{"mode": {"test"}, "csrf": {csrf}})
	key := regexp.MustCompile(`sk_test_[A-Za-z0-9]{8}_[A-Za-z0-9]{32}`).FindString(body)
	if code != 200 || key == "" || !strings.Contains(body, "shown once") {
		t.Fatalf("create key: %d", code)
	}
	// Shown once: reloading the page does not show it again.
	if _, body = c.get(projPath); strings.Contains(body, key) {
		t.Fatal("key shown twice")
	}
	wantOK(t, ts.do("GET", "/api/v1/me", key, nil))

	// A failed OTP verify shows up in the events page and chart.
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "z@example.com", "code": "123456"}), 401, "INVALID_CODE")
	_, body = c.get("/admin/events?failure=invalid_code")
	if !strings.Contains(body, "z@example.com") || !strings.Contains(body, "<title>invalid_code: 1</title>") {
		t.Fatal("event or chart bar missing")
	}
	if code, _ := c.post("/admin/logout", url.Values{"csrf": {csrf}}); code != 200 {
		t.Fatalf("logout: %d", code)
	}
	if _, body = c.get("/admin/"); !strings.Contains(body, `name="token"`) {
		t.Fatal("still signed in after logout")
	}
}

// signedIn returns a dashboard client signed in with the admin token.
func signedIn(t *testing.T, ts *testServer) *dashClient {
	t.Helper()
	c := newDashClient(t, ts)
	if code, _ := c.post("/admin/login", url.Values{"token": {testAdminToken}}); code != 200 {
		t.Fatalf("login: %d", code)
	}
	return c
}

var (
	eventRow  = regexp.MustCompile(`<tr><td>\d{4}-\d\d-\d\dT[^<]*</td><td>(?:<a href="/admin/projects/[^"]+">[^<]*</a>|<span class="muted">—</span>)</td><td>email_otp`)
	userRow   = regexp.MustCompile(`<tr><td><a href="/admin/users/[0-9a-f-]+">(user\d{4}@example\.com)</a></td>`)
	olderLink = regexp.MustCompile(`<a id="older" href="([^"]+)">`)
	nextLink  = regexp.MustCompile(`<a id="next-users" href="([^"]+)">`)
)

// TestDashboardPages: the events page shows 100 events and links to
// older ones; a project's users come 100 a page with a next-page link;
// failures counted but not stored are shown beside the events and in the
// chart, which reads hourly counters.
func TestDashboardPages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	all := ts.addUsers(230)
	start := ts.Clock.Now().Add(-time.Hour)
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		for i := range 250 {
			e := &store.AuthEvent{ID: fmt.Sprint("ev-", i), ProjectID: ts.Project.ID, Email: fmt.Sprintf("ev%03d@example.com", i), Method: "email_otp",
				Action: "verify", FailureCode: "expired", CreatedAt: start.Add(time.Duration(i) * time.Second)}
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		ts.do("GET", "/api/v1/magic/verify?token=made-up-"+fmt.Sprint(i), "", nil)
	}
	c := signedIn(t, ts)

	var seen []string
	page := "/admin/events?project=" + ts.Project.ID
	for n := 0; page != ""; n++ {
		code, body := c.get(page)
		if code != 200 {
			t.Fatalf("%s: %d", page, code)
		}
		rows := eventRow.FindAllString(body, -1)
		if len(rows) > 100 {
			t.Fatalf("page %d shows %d events", n, len(rows))
		}
		for _, m := range regexp.MustCompile(`ev\d{3}@example\.com`).FindAllString(body, -1) {
			seen = append(seen, m)
		}
		page = ""
		if m := olderLink.FindStringSubmatch(body); m != nil {
			page = html.UnescapeString(m[1])
		}
	}
	if len(seen) != 250 || seen[0] != "ev249@example.com" || seen[249] != "ev000@example.com" {
		t.Fatalf("pages showed %d events (%v … %v)", len(seen), seen[0], seen[len(seen)-1])
	}
	// Without a project filter: the unknown tokens (no project), 10 stored
	// and 15 counted, in the list and the chart.
	_, body := c.get("/admin/events")
	if !strings.Contains(body, `<span id="suppressed-total">15</span>`) || !strings.Contains(body, "<title>invalid_code: 25</title>") ||
		!strings.Contains(body, "<title>expired: 250</title>") || !strings.Contains(body, "Includes 15 failures counted but not stored") {
		t.Fatalf("suppressed failures missing from the events page or chart")
	}
	if _, body := c.get("/admin/"); !strings.Contains(body, "<title>invalid_code: 25</title>") {
		t.Fatal("chart on the projects page misses the suppressed failures")
	}

	seen = nil
	page = "/admin/projects/" + ts.Project.ID
	for page != "" {
		_, body := c.get(page)
		rows := userRow.FindAllStringSubmatch(body, -1)
		if len(rows) > 100 {
			t.Fatalf("a page shows %d users", len(rows))
		}
		for _, r := range rows {
			seen = append(seen, r[1])
		}
		page = ""
		if m := nextLink.FindStringSubmatch(body); m != nil {
			page = html.UnescapeString(m[1])
		}
	}
	if !slices.Equal(seen, all) {
		t.Fatalf("pages showed %d users, want %d", len(seen), len(all))
	}
	// A search pages too.
	_, body = c.get("/admin/projects/" + ts.Project.ID + "?q=user0")
	if n := len(userRow.FindAllString(body, -1)); n != 100 || nextLink.FindStringSubmatch(body) == nil {
		t.Fatalf("search shows %d users", n)
	}
	if code, _ := c.get("/admin/projects/" + ts.Project.ID + "?cursor=!!"); code != 400 {
		t.Fatalf("bad cursor: %d", code)
	}
}

// TestDashboardEmailChange: the project's settings form shows and saves
// emailChange; the users table shows emailVerified.
func TestDashboardEmailChange(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.login("seen@example.com")
	c := newDashClient(t, ts)
	_, body := c.post("/admin/login", url.Values{"token": {testAdminToken}})
	csrf := csrfField.FindStringSubmatch(body)[1]
	path := "/admin/projects/" + ts.Project.ID
	if _, body = c.get(path); !strings.Contains(body, `<option value="verify" selected>`) || !regexp.MustCompile(`>seen@example.com</a></td><td>true</td>`).MatchString(body) {
		t.Fatal("settings form without emailChange verify selected, or users table without Verified")
	}
	if code, _ := c.post(path, url.Values{"csrf": {csrf}, "emailChange": {"direct"}}); code != 200 {
		t.Fatalf("save: status %d", code)
	}
	if got := obj(t, ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID, nil).Body, "project")["emailChange"]; got != "direct" {
		t.Fatalf("emailChange=%v after saving direct", got)
	}
	if _, body = c.get(path); !strings.Contains(body, `<option value="direct" selected>`) {
		t.Fatal("direct not selected after saving it")
	}
	if code, _ := c.post(path, url.Values{"csrf": {csrf}, "emailChange": {"sometimes"}}); code != 400 {
		t.Fatalf("a bad value: status %d, want 400", code)
	}
}

// TestDashboardSignInReturns: the sign-in form shown for a dashboard
// page carries it, and signing in goes back there; a next that is not a
// dashboard page of this server goes to the overview, and GET
// /admin/login (a bookmark) to the overview's sign-in.
func TestDashboardSignInReturns(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c := newDashClient(t, ts)
	if _, body := c.get("/admin/outbox?project=x"); !strings.Contains(body, `<input type="hidden" name="next" value="/admin/outbox?project=x">`) {
		t.Fatalf("the sign-in form for /admin/outbox does not carry it: %s", body)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct{ next, want string }{
		{"/admin/outbox?project=x", "/admin/outbox?project=x"},
		{"/admin/projects/abc", "/admin/projects/abc"},
		{"", "/admin/"},
		{"//evil.example/admin/", "/admin/"},
		{"https://evil.example/admin/", "/admin/"},
		{"/admin/\\evil.example", "/admin/"},
		{"/admin//evil.example", "/admin/"},
		{"/admin/login", "/admin/"},
		{"/other", "/admin/"},
		{"/admin/../x", "/admin/"},
		{"/admin/projects/../../x", "/admin/"},
		{"/admin/projects/../outbox", "/admin/outbox"}, // a dashboard page once cleaned, as the redirect cleans it
		{"/admin/outbox?x=" + strings.Repeat("a", 2100), "/admin/"},
	} {
		res, err := noFollow.PostForm(ts.URL+"/admin/login", url.Values{"token": {testAdminToken}, "next": {tc.next}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != tc.want {
			t.Errorf("next %q: %d to %q, want 303 to %q", tc.next, res.StatusCode, res.Header.Get("Location"), tc.want)
		}
	}
	// A wrong token shows the form again, still carrying next.
	if _, body := c.post("/admin/login", url.Values{"token": {"adm_wrongwrongwrongwrong"}, "next": {"/admin/outbox"}}); !strings.Contains(body, `<input type="hidden" name="next" value="/admin/outbox">`) {
		t.Fatalf("the form after a wrong token does not carry next: %s", body)
	}
	res, err := noFollow.Get(ts.URL + "/admin/login")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/admin/" {
		t.Fatalf("GET /admin/login: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
}
