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

// TestDashboardInChromium drives the admin dashboard in headless Chromium
// (no JavaScript on its pages): sign in with the admin token, create a
// project (a refused form first: the error beside it, the input kept),
// edit its settings (a refused origin likewise, scrolled into view),
// create a key and see it exactly once, see a failed OTP verify among
// the events (with the project's name) and in the chart, search, disable
// a user through the confirmation page (cancel once, then confirm) and
// enable them, end a user's sessions from the user's page, register an
// external method (secret shown once) and disable it after confirming,
// list the webhooks and one's deliveries, revoke the key after
// confirming, take screenshots and sign out.
func TestDashboardInChromium(t *testing.T) {
	t.Parallel()
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
	text := func(sel string) string {
		t.Helper()
		return get(t, ctx, "text of "+sel, chromedp.Evaluate[string](`(n => n ? n.innerText : "<none>")(document.querySelector(`+jsString(sel)+`))`))
	}
	value := func(sel string) string {
		t.Helper()
		return get(t, ctx, "value of "+sel, chromedp.Value(chromedp.CSS(sel)))
	}
	// inView reports whether the element is within the window (a refused
	// form's page opens at the form).
	inView := func(sel string) bool {
		t.Helper()
		return get(t, ctx, "position of "+sel, chromedp.Evaluate[bool](`(r => r.top >= -1 && r.bottom <= innerHeight)(document.querySelector(`+jsString(sel)+`).getBoundingClientRect())`))
	}
	shots := os.Getenv("LATCHKEY_SCREENSHOT_DIR") // keep them to look at
	if shots == "" {
		shots = t.TempDir()
	}
	var files []string
	screenshot := func(name string) {
		t.Helper()
		shot := get(t, ctx, "screenshot", chromedp.FullScreenshot(100))
		file := filepath.Join(shots, "dashboard-"+name+".png")
		if err := os.WriteFile(file, shot, 0o600); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(file); err != nil || fi.Size() < 1000 || !bytes.HasPrefix(shot, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("screenshot %s: %v, %d bytes", file, err, len(shot))
		}
		files = append(files, file)
	}
	location := func() string {
		t.Helper()
		return get(t, ctx, "location", chromedp.Location())
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

	// Create a project: a bad origin is refused beside the form, with
	// what was typed kept; then the fixed form creates it.
	setValue(t, ctx, `#new-project input[name=name]`, "Shop")
	setValue(t, ctx, `#new-project textarea[name=origins]`, "shop.example")
	click(`#new-project button`)
	if h1() != "Projects" || text("#new-project-error") == "<none>" || value(`#new-project input[name=name]`) != "Shop" ||
		value(`#new-project textarea[name=origins]`) != "shop.example" {
		t.Fatalf("refused creation: page %q, error %q", h1(), text("#new-project-error"))
	}
	setValue(t, ctx, `#new-project textarea[name=origins]`, "https://shop.example")
	click(`#new-project button`)
	if h1() != "Shop" || text("#notice") != "Project Shop created." {
		t.Fatalf("after create: %q", pageText(t, ctx))
	}
	loc, _, _ := strings.Cut(location(), "#")
	projectID := loc[strings.LastIndex(loc, "/")+1:]
	r := ts.admin("GET", "/api/v1/admin/projects/"+projectID, nil)
	wantOK(t, r)
	if p := obj(t, r.Body, "project"); p["name"] != "Shop" || len(p["allowedOrigins"].([]any)) != 1 {
		t.Fatalf("created project: %s", r.Raw)
	}
	if n := len(ts.admin("GET", "/api/v1/admin/projects", nil).Body["projects"].([]any)); n != 2 {
		t.Fatalf("%d projects after one refused and one accepted creation, want 2", n)
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
	if got := value(`#settings textarea[name=origins]`); !strings.Contains(got, "http://localhost:5173") || text("#notice") != "Settings saved." {
		t.Fatalf("origins field after save: %q, notice %q", got, text("#notice"))
	}
	// A bad origin and a bad session lifetime are refused beside the
	// form, which keeps them and is scrolled into view; nothing changes.
	setValue(t, ctx, `#settings textarea[name=origins]`, "not an origin")
	click(`#settings button`)
	if got := text("#settings-error"); got == "<none>" || !inView("#settings-error") || value(`#settings textarea[name=origins]`) != "not an origin" {
		t.Fatalf("bad origin: error %q (in view %v: %s at %s), origins field %q", got, inView("#settings-error"), get(t, ctx, "r", chromedp.Evaluate[string](`JSON.stringify(document.querySelector("#settings-error").getBoundingClientRect())+" "+scrollY+" "+innerHeight`)), location(), value(`#settings textarea[name=origins]`))
	}
	setValue(t, ctx, `#settings textarea[name=origins]`, "https://shop.example")
	setValue(t, ctx, `#settings input[name=sessionTtlSeconds]`, "one day")
	click(`#settings button`)
	if got := text("#settings-error"); !strings.Contains(got, "sessionTtlSeconds must be a whole number") || value(`#settings input[name=sessionTtlSeconds]`) != "one day" {
		t.Fatalf("bad session lifetime: error %q", got)
	}
	screenshot("form-error")
	r = ts.admin("GET", "/api/v1/admin/projects/"+projectID, nil)
	if p := obj(t, r.Body, "project"); len(p["allowedOrigins"].([]any)) != 2 || p["sessionTtlSeconds"] != 86400.0 {
		t.Fatalf("project after refused edits: %s", r.Raw)
	}
	load("back to the project", chromedp.Navigate(ts.URL+"/admin/projects/"+projectID))

	// Create a key: shown once, then gone after a reload.
	click(`#key-form button`)
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

	// The app registers a webhook with the key; its receiver refuses the
	// first delivery.
	rcv := newReceiver(t, 503)
	hook := ts.do("POST", "/api/v1/webhooks", key, map[string]any{"url": rcv.URL + "/hooks/latchkey"})
	wantOK(t, hook)
	hookSecret := str(t, obj(t, hook.Body, "webhook"), "secret")

	// A failed OTP verify through the API, then two sign-ups.
	wantOK(t, ts.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "ann@example.com"}))
	wantError(t, ts.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "ann@example.com", "code": "000000"}), 401, "INVALID_CODE")
	code := ts.lastMail("ann@example.com").Code
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "ann@example.com", "code": code}))
	wantOK(t, ts.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "bob@example.com"}))
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "bob@example.com", "code": ts.lastMail("bob@example.com").Code}))
	ts.deliver()

	// Events, filtered by project and failure, in the table and the chart.
	load("events", chromedp.Navigate(ts.URL+"/admin/events"))
	do(t, ctx, "filter",
		chromedp.SetValue(chromedp.CSS(`select[name=project]`), projectID),
		chromedp.SetValue(chromedp.CSS(`select[name=failure]`), "invalid_code"))
	click(`form[action="/admin/events"] button`)
	if loc := location(); !strings.Contains(loc, "project="+projectID) || !strings.Contains(loc, "failure=invalid_code") {
		t.Fatalf("filter URL %s", loc)
	}
	rows := get(t, ctx, "event rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#events tr")].slice(1).map(r => r.innerText)`))
	if len(rows) != 1 || !strings.Contains(rows[0], "ann@example.com") || !strings.Contains(rows[0], "invalid_code") || !strings.Contains(rows[0], "otp") ||
		!strings.Contains(rows[0], "\tShop\t") {
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
	projects := get(t, ctx, "project column", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#events tr")].slice(1).map(r => r.cells[1].innerText)`))
	for _, p := range projects {
		if p != "Shop" {
			t.Fatalf("project column %q, want Shop in every row", projects)
		}
	}
	screenshot("events")

	// Users: search, disable through the confirmation page (cancelled
	// once), enable.
	load("project", chromedp.Navigate(ts.URL+"/admin/projects/"+projectID))
	setValue(t, ctx, `input[name=q]`, "ann")
	click(`form[method=get] button`)
	users := get(t, ctx, "user rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#users tr")].slice(1).map(r => r.innerText)`))
	if len(users) != 1 || !strings.Contains(users[0], "ann@example.com") || !strings.Contains(users[0], "false") {
		t.Fatalf("search ann: %q", users)
	}
	click(`#users a.disable`)
	if h1() != "Disable this user?" || !strings.Contains(text("#confirm-facts"), "ann@example.com") || !strings.Contains(text("#effects"), "USER_DISABLED") {
		t.Fatalf("confirmation page: %q", pageText(t, ctx))
	}
	click(`#cancel`)
	if h1() != "Shop" || userDisabled(t, ts, projectID, "ann@example.com") {
		t.Fatalf("after cancel: page %q, disabled %v", h1(), userDisabled(t, ts, projectID, "ann@example.com"))
	}
	setValue(t, ctx, `input[name=q]`, "ann")
	click(`form[method=get] button`)
	click(`#users a.disable`)
	screenshot("confirm")
	click(`#confirm button`)
	if !userDisabled(t, ts, projectID, "ann@example.com") || text("#notice") != "ann@example.com disabled." || h1() != "Shop" {
		t.Fatalf("after confirming: disabled %v, notice %q, page %q", userDisabled(t, ts, projectID, "ann@example.com"), text("#notice"), h1())
	}
	wantError(t, ts.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "ann@example.com"}), 403, "USER_DISABLED")
	if got := text("#users"); !strings.Contains(got, "true") || !strings.Contains(got, "Enable") {
		t.Fatalf("after disable the users table reads %q", got)
	}
	click(`#users form[action$="/enable"] button`)
	if userDisabled(t, ts, projectID, "ann@example.com") {
		t.Fatal("ann is still disabled")
	}

	// Bob's page: verified, one session; end it after confirming.
	click(`#users a[href^="/admin/users/"]`)
	if h1() != "ann@example.com" {
		t.Fatalf("user page of %q", h1())
	}
	load("project", chromedp.Navigate(ts.URL+"/admin/projects/"+projectID+"?q=bob"))
	click(`#users a[href^="/admin/users/"]`)
	if h1() != "bob@example.com" || text("#email-verified") != "yes" || count("#sessions tr") != 2 {
		t.Fatalf("bob's page: %q", pageText(t, ctx))
	}
	screenshot("user")
	click(`#revoke-sessions`)
	if h1() != "End every session of this user?" {
		t.Fatalf("confirmation page: %q", h1())
	}
	click(`#confirm button`)
	if text("#notice") != "1 session of bob@example.com ended." || !strings.Contains(text("#sessions"), "No live sessions.") {
		t.Fatalf("after ending sessions: notice %q, sessions %q", text("#notice"), text("#sessions"))
	}

	// External methods: a refused name, then a registration whose secret
	// is shown once; disabling asks first.
	load("project", chromedp.Navigate(ts.URL+"/admin/projects/"+projectID))
	click(`nav.tabs a[href$="/methods"]`)
	if h1() != "External methods of Shop" || !strings.Contains(text("#methods"), "No external methods.") {
		t.Fatalf("methods page: %q", pageText(t, ctx))
	}
	setValue(t, ctx, `#method-form input[name=method]`, "Bank ID")
	click(`#method-form button`)
	if got := text("#method-error"); !strings.Contains(got, "method must match") || value(`#method-form input[name=method]`) != "Bank ID" {
		t.Fatalf("refused method: error %q", got)
	}
	setValue(t, ctx, `#method-form input[name=method]`, "bank_id")
	click(`#method-form button`)
	secret := text("#new-secret")
	if len(secret) != 64 || !strings.Contains(pageText(t, ctx), "shown once") {
		t.Fatalf("new method secret %q", secret)
	}
	screenshot("methods")
	load("reload", chromedp.Reload())
	if count("#new-secret") != 0 || strings.Contains(pageText(t, ctx), secret) {
		t.Fatal("the method secret is shown again after a reload")
	}
	click(`#methods a.disable`)
	if h1() != "Disable external method bank_id?" {
		t.Fatalf("confirmation page: %q", h1())
	}
	click(`#confirm button`)
	if text("#notice") != "Method bank_id disabled." || !strings.Contains(text("#methods"), "inactive") {
		t.Fatalf("after disabling: notice %q, table %q", text("#notice"), text("#methods"))
	}

	// Webhooks: listed without the secret, with the last delivery
	// recorded: the refused first attempt or the next event's, which
	// starts once the refusal is answered and may commit first (see the
	// deliveries below); the deliveries page lists the attempts.
	click(`nav.tabs a[href$="/webhooks"]`)
	if got := text("#webhooks"); !strings.Contains(got, rcv.URL+"/hooks/latchkey") ||
		!strings.Contains(got, "succeeded · HTTP 200 · attempt 1") && !strings.Contains(got, "pending · HTTP 503 · attempt 1 · user.registered") {
		t.Fatalf("webhooks table: %q", got)
	}
	if strings.Contains(pageText(t, ctx), hookSecret) {
		t.Fatal("the webhook secret is shown")
	}
	screenshot("webhooks")
	click(`#webhooks a[href*="/webhooks/"]`)
	deliveries := get(t, ctx, "delivery rows", chromedp.Evaluate[[]string](`[...document.querySelectorAll("#deliveries tr")].slice(1).map(r => r.innerText)`))
	// The refused first attempt is listed (records are numbered as their
	// outcomes commit: the next event's attempt, which starts once the
	// refusal is answered, may commit first on a loaded machine).
	refused := false
	for _, d := range deliveries {
		refused = refused || strings.Contains(d, "user.registered") && strings.Contains(d, "pending\t503")
	}
	if len(deliveries) < 2 || !refused {
		t.Fatalf("deliveries: %q", deliveries)
	}
	screenshot("deliveries")

	// Revoke the key after confirming.
	load("project", chromedp.Navigate(ts.URL+"/admin/projects/"+projectID))
	click(`#keys a.revoke`)
	if h1() != "Revoke API key "+key[:16]+"?" {
		t.Fatalf("confirmation page: %q", h1())
	}
	click(`#confirm button`)
	wantError(t, ts.do("GET", "/api/v1/me", key, nil), 401, "API_KEY_REVOKED")
	if n := count(`#keys a.revoke`); n != 0 || text("#notice") != "Key "+key[:16]+" revoked." {
		t.Fatalf("%d revoke buttons after revoking the only key; notice %q", n, text("#notice"))
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
	t.Logf("dashboard in Chromium: %v; screenshots %s", time.Since(start).Round(time.Millisecond), strings.Join(files, ", "))
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
