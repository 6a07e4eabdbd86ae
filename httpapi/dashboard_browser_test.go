package httpapi_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

var apiKeyPattern = regexp.MustCompile(`sk_test_[A-Za-z0-9]{8}_[A-Za-z0-9]{32}`)

// TestDashboardInChromium drives the admin dashboard in headless Chromium:
// sign in with the admin token, create a project, edit its settings,
// create a key and see it exactly once, see a failed OTP verify among the
// events and in the chart, search, disable and enable a user, revoke the
// key, take a screenshot and sign out.
func TestDashboardInChromium(t *testing.T) {
	start := time.Now()
	ts := newTestServer(t)
	ctx := newBrowser(t)

	// load runs the actions (a click that submits a form, a navigation)
	// and waits for the next page's load event.
	load := func(what string, a chromedp.Action[chromedp.Void]) {
		t.Helper()
		get(t, ctx, what, chromedp.WaitEvent(page.LoadEventFired, nil, a))
	}
	click := func(sel string) {
		t.Helper()
		load("click "+sel, chromedp.Click(chromedp.CSS(sel)))
	}
	h1 := func() string {
		t.Helper()
		return get(t, ctx, "h1", chromedp.Text(chromedp.CSS("h1")))
	}
	count := func(sel string) int {
		t.Helper()
		return get(t, ctx, "count "+sel, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
	}

	// Sign in.
	do(t, ctx, "open the dashboard", chromedp.Navigate(ts.URL+"/admin/"))
	if h1() != "latchkey admin" || count(`input[name=token][type=password]`) != 1 {
		t.Fatalf("no login form: %q", pageText(t, ctx))
	}
	setValue(t, ctx, `input[name=token]`, "adm_wrongwrongwrongwrongwrong")
	click(`form[action="/admin/login"] button`)
	if got := pageText(t, ctx); !strings.Contains(got, "Wrong admin token.") {
		t.Fatalf("wrong token: page reads %q", got)
	}
	setValue(t, ctx, `input[name=token]`, testAdminToken)
	click(`form[action="/admin/login"] button`)
	if h1() != "Projects" {
		t.Fatalf("after sign-in: %q", pageText(t, ctx))
	}
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{ts.URL + "/admin/"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(cookies.Cookies) != 1 {
		t.Fatalf("cookies: %+v", cookies.Cookies)
	}
	if c := cookies.Cookies[0]; c.Name != "latchkey_admin" || !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Path != "/admin" {
		t.Fatalf("dashboard cookie: %+v, want HttpOnly, SameSite=Strict, Path=/admin", c)
	}
	if jsCookies := get(t, ctx, "document.cookie", chromedp.Evaluate[string](`document.cookie`)); jsCookies != "" {
		t.Fatalf("scripts can read the cookie: %q", jsCookies)
	}

	// Create a project.
	setValue(t, ctx, `input[name=name]`, "Shop")
	setValue(t, ctx, `form[action="/admin/projects"] textarea[name=origins]`, "https://shop.example")
	click(`form[action="/admin/projects"] button`)
	if h1() != "Shop" {
		t.Fatalf("after create: %q", pageText(t, ctx))
	}
	loc := get(t, ctx, "location", chromedp.Location())
	projectID := loc[strings.LastIndex(loc, "/")+1:]
	r := ts.admin("GET", "/api/v1/admin/projects/"+projectID, nil)
	wantOK(t, r)
	if p := obj(t, r.Body, "project"); p["name"] != "Shop" || len(p["allowedOrigins"].([]any)) != 1 {
		t.Fatalf("created project: %s", r.Raw)
	}

	// Edit its origins and deny list.
	setValue(t, ctx, `#settings textarea[name=origins]`, "https://shop.example\nhttp://localhost:5173\n")
	setValue(t, ctx, `#settings textarea[name=denyCidrs]`, "203.0.113.0/24")
	click(`#settings button`)
	r = ts.admin("GET", "/api/v1/admin/projects/"+projectID, nil)
	wantOK(t, r)
	p := obj(t, r.Body, "project")
	if o, d := p["allowedOrigins"].([]any), p["denyCidrs"].([]any); len(o) != 2 || o[1] != "http://localhost:5173" || len(d) != 1 || d[0] != "203.0.113.0/24" {
		t.Fatalf("project after edit: %s", r.Raw)
	}
	if got := get(t, ctx, "origins", chromedp.Value(chromedp.CSS(`#settings textarea[name=origins]`))); !strings.Contains(got, "http://localhost:5173") {
		t.Fatalf("origins field after save: %q", got)
	}
	// A bad origin is refused with the reason and changes nothing.
	setValue(t, ctx, `#settings textarea[name=origins]`, "not an origin")
	click(`#settings button`)
	if got := get(t, ctx, "error", chromedp.Text(chromedp.CSS(".err"))); got == "" {
		t.Fatal("no error shown for a bad origin")
	}
	r = ts.admin("GET", "/api/v1/admin/projects/"+projectID, nil)
	if o := obj(t, r.Body, "project")["allowedOrigins"].([]any); len(o) != 2 {
		t.Fatalf("origins after a refused edit: %v", o)
	}
	load("back to the project", chromedp.Navigate(ts.URL+"/admin/projects/"+projectID))

	// Create a key: shown once, then gone after a reload.
	click(`form[action$="/keys"] button`)
	shown := get(t, ctx, "new key", chromedp.Text(chromedp.ID("new-key")))
	key := apiKeyPattern.FindString(shown)
	if key == "" || key != shown {
		t.Fatalf("new key element reads %q", shown)
	}
	if !strings.Contains(pageText(t, ctx), "shown once") {
		t.Fatal("the key is not marked as shown once")
	}
	wantOK(t, ts.do("GET", "/api/v1/me", key, nil))
	load("reload", chromedp.Reload())
	if n := count("#new-key"); n != 0 || strings.Contains(pageText(t, ctx), key) {
		t.Fatal("the key is shown again after a reload")
	}
	if got := get(t, ctx, "keys table", chromedp.Text(chromedp.ID("keys"))); !strings.Contains(got, key[:16]) {
		t.Fatalf("keys table lacks the prefix %s: %q", key[:16], got)
	}
	k := ts.admin("GET", "/api/v1/admin/keys?projectId="+projectID, nil)
	wantOK(t, k)
	if n := len(k.Body["apiKeys"].([]any)); n != 1 {
		t.Fatalf("%d keys after create and reload, want 1", n)
	}

	// A failed OTP verify through the API, then a successful sign-up.
	wantOK(t, ts.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "ann@example.com"}))
	wantError(t, ts.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "ann@example.com", "code": "000000"}), 401, "INVALID_CODE")
	code := ts.lastMail("ann@example.com").Code
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "ann@example.com", "code": code}))
	wantOK(t, ts.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "bob@example.com"}))
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "bob@example.com", "code": ts.lastMail("bob@example.com").Code}))

	// Events, filtered by project and failure, in the table and the chart.
	load("events", chromedp.Navigate(ts.URL+"/admin/events"))
	do(t, ctx, "filter",
		chromedp.SetValue(chromedp.CSS(`select[name=project]`), projectID),
		chromedp.SetValue(chromedp.CSS(`select[name=failure]`), "invalid_code"))
	click(`form[action="/admin/events"] button`)
	if loc := get(t, ctx, "location", chromedp.Location()); !strings.Contains(loc, "project="+projectID) || !strings.Contains(loc, "failure=invalid_code") {
		t.Fatalf("filter URL %s", loc)
	}
	rows := get(t, ctx, "event rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#events tr")].slice(1).map(r => r.innerText)`))
	if len(rows) != 1 || !strings.Contains(rows[0], "ann@example.com") || !strings.Contains(rows[0], "invalid_code") || !strings.Contains(rows[0], "otp") {
		t.Fatalf("filtered events: %q", rows)
	}
	type box struct{ Width, Height float64 }
	chart := get(t, ctx, "chart size", chromedp.Evaluate[box](`(b => ({width: b.width, height: b.height}))(document.getElementById("failure-chart").getBoundingClientRect())`))
	if chart.Width < 300 || chart.Height < 100 {
		t.Fatalf("chart renders %+v", chart)
	}
	bars := get(t, ctx, "chart bars", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#failure-chart rect > title")].map(t => t.textContent)`))
	if len(bars) != 1 || bars[0] != "invalid_code: 1" {
		t.Fatalf("chart bars %q, want [invalid_code: 1]", bars)
	}
	if h := get(t, ctx, "bar height", chromedp.Evaluate[float64](`document.querySelector("#failure-chart rect").getBoundingClientRect().height`)); h < 10 {
		t.Fatalf("the only bar is %v px high", h)
	}
	load("all events", chromedp.Navigate(ts.URL+"/admin/events?project="+projectID))
	if n := count("#events tr"); n < 5 { // header, 3 sends, 3 verifies
		t.Fatalf("%d rows of all events", n)
	}
	shot := get(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	file := filepath.Join(t.TempDir(), "dashboard-events.png")
	if err := os.WriteFile(file, shot, 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() < 1000 || !bytes.HasPrefix(shot, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot %s: %v, %d bytes", file, err, len(shot))
	}

	// Users: search, disable, enable.
	load("project", chromedp.Navigate(ts.URL+"/admin/projects/"+projectID))
	setValue(t, ctx, `input[name=q]`, "ann")
	click(`form[method=get] button`)
	users := get(t, ctx, "user rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#users tr")].slice(1).map(r => r.innerText)`))
	if len(users) != 1 || !strings.Contains(users[0], "ann@example.com") || !strings.Contains(users[0], "false") {
		t.Fatalf("search ann: %q", users)
	}
	click(`#users form[action$="/disable"] button`)
	if !userDisabled(t, ts, projectID, "ann@example.com") {
		t.Fatal("ann is not disabled")
	}
	wantError(t, ts.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "ann@example.com"}), 403, "USER_DISABLED")
	if got := get(t, ctx, "users", chromedp.Text(chromedp.ID("users"))); !strings.Contains(got, "true") || !strings.Contains(got, "Enable") {
		t.Fatalf("after disable the users table reads %q", got)
	}
	click(`#users form[action$="/enable"] button`)
	if userDisabled(t, ts, projectID, "ann@example.com") {
		t.Fatal("ann is still disabled")
	}

	// Revoke the key.
	click(`#keys form[action$="/revoke"] button`)
	wantError(t, ts.do("GET", "/api/v1/me", key, nil), 401, "API_KEY_REVOKED")
	if n := count(`#keys form[action$="/revoke"]`); n != 0 {
		t.Fatalf("%d revoke buttons after revoking the only key", n)
	}

	// Sign out.
	click(`header form[action="/admin/logout"] button`)
	if count(`input[name=token]`) != 1 {
		t.Fatalf("after sign-out: %q", pageText(t, ctx))
	}
	load("projects after sign-out", chromedp.Navigate(ts.URL+"/admin/"))
	if count(`input[name=token]`) != 1 {
		t.Fatal("still signed in after sign-out")
	}
	t.Logf("dashboard in Chromium: %v; screenshot %s", time.Since(start).Round(time.Millisecond), file)
}

// userDisabled reports the disabled flag of the project's user email.
func userDisabled(t *testing.T, ts *testServer, projectID, email string) bool {
	t.Helper()
	r := ts.admin("GET", "/api/v1/admin/users?projectId="+projectID+"&email="+email, nil)
	wantOK(t, r)
	us := r.Body["users"].([]any)
	if len(us) != 1 {
		t.Fatalf("users %s: %s", email, r.Raw)
	}
	return us[0].(map[string]any)["disabled"] == true
}
