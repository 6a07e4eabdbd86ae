package httpapi_test

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/httpapi"
	"latchkey/store"
)

// signedInCSRF returns a signed-in dashboard client and its CSRF token.
func signedInCSRF(t *testing.T, ts *testServer) (*dashClient, string) {
	t.Helper()
	c := newDashClient(t, ts)
	code, body := c.post("/admin/login", url.Values{"token": {testAdminToken}})
	m := csrfField.FindStringSubmatch(body)
	if code != 200 || m == nil {
		t.Fatalf("login: %d", code)
	}
	return c, m[1]
}

// postRaw posts form without following a redirect and returns the
// status, the Location header and the body.
func (c *dashClient) postRaw(path string, form url.Values) (int, string, string) {
	c.t.Helper()
	client := *c.http
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.PostForm(c.ts.URL+path, form)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := res.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return res.StatusCode, res.Header.Get("Location"), b.String()
}

// elementText returns the text of the element with id in body, or ""
// (a flat element: its text up to the next tag).
func elementText(body, id string) string {
	m := regexp.MustCompile(`id="` + regexp.QuoteMeta(id) + `"[^>]*>([^<]*)<`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// with returns form plus the CSRF token.
func with(csrf string, form url.Values) url.Values {
	out := url.Values{"csrf": {csrf}}
	for k, v := range form {
		out[k] = v
	}
	return out
}

// TestDashboardFormErrors: a refused form comes back as the same page
// with the reason beside the form, the operator's input kept (escaped)
// and the error's status; nothing is changed, and no separate error page
// is shown.
func TestDashboardFormErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.method("bank_id", "direct")
	c, csrf := signedInCSRF(t, ts)
	proj := "/admin/projects/" + ts.Project.ID
	project := func() string { return string(ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID, nil).Raw) }
	stored, projects := project(), len(ts.admin("GET", "/api/v1/admin/projects", nil).Body["projects"].([]any))
	for _, tc := range []struct {
		name, path string
		form       url.Values
		status     int
		errID      string
		want       string   // in the error text
		kept       []string // in the page: the input as typed
	}{
		{"bad origin", proj, url.Values{"origins": {"https://ok.example\nnot an origin"}}, 400, "settings-error", "origin", []string{">https://ok.example\nnot an origin</textarea>"}},
		{"bad CIDR", proj, url.Values{"denyCidrs": {"10.0.0.0/99"}}, 400, "settings-error", "10.0.0.0/99", []string{">10.0.0.0/99</textarea>"}},
		{"TTL not a number", proj, url.Values{"sessionTtlSeconds": {"a day"}}, 400, "settings-error", "sessionTtlSeconds must be a whole number", []string{`name="sessionTtlSeconds" value="a day"`}},
		{"TTL too short", proj, url.Values{"sessionTtlSeconds": {"60"}, "rateLimitPerMinute": {"500"}}, 400, "settings-error", "sessionTtlSeconds must be between 300", []string{`name="sessionTtlSeconds" value="60"`, `name="rateLimitPerMinute" value="500"`}},
		{"rate limit zero", proj, url.Values{"rateLimitPerMinute": {"0"}}, 400, "settings-error", "rateLimitPerMinute", []string{`name="rateLimitPerMinute" value="0"`}},
		{"session rate limit too high", proj, url.Values{"sessionRateLimitPerMinute": {"100001"}}, 400, "settings-error", "sessionRateLimitPerMinute must be between 1 and 100000", []string{`name="sessionRateLimitPerMinute" value="100001"`}},
		{"session rate limit not a number", proj, url.Values{"sessionRateLimitPerMinute": {"lots"}}, 400, "settings-error", "sessionRateLimitPerMinute must be a whole number", []string{`name="sessionRateLimitPerMinute" value="lots"`}},
		{"idle time not a number", proj, url.Values{"sessionIdleSeconds": {"a week"}}, 400, "settings-error", "sessionIdleSeconds must be a whole number", []string{`name="sessionIdleSeconds" value="a week"`}},
		{"idle time under the token", proj, url.Values{"sessionTtlSeconds": {"3600"}, "sessionIdleSeconds": {"600"}}, 400, "settings-error", "sessionIdleSeconds must be at least sessionTtlSeconds", []string{`name="sessionIdleSeconds" value="600"`}},
		{"maximum under the idle time", proj, url.Values{"sessionMaxSeconds": {"3600"}}, 400, "settings-error", "sessionMaxSeconds must be at least sessionIdleSeconds", []string{`name="sessionMaxSeconds" value="3600"`}},
		{"markup kept escaped", proj, url.Values{"name": {`<b>x</b>"`}, "sessionTtlSeconds": {"1"}}, 400, "settings-error", "sessionTtlSeconds", []string{`name="name" value="&lt;b&gt;x&lt;/b&gt;&#34;"`}},
		{"empty name", proj, url.Values{"name": {"  "}}, 400, "settings-error", "name", nil},
		{"bad address change", proj, url.Values{"emailChange": {"sometimes"}}, 400, "settings-error", "emailChange", nil},
		{"new project without a name", "/admin/projects", url.Values{"name": {""}, "origins": {"https://kept.example"}}, 400, "new-project-error", "name", []string{">https://kept.example</textarea>"}},
		{"new project bad origin", "/admin/projects", url.Values{"name": {"Kept name"}, "origins": {"ftp://x.example"}}, 400, "new-project-error", "", []string{`value="Kept name"`, ">ftp://x.example</textarea>"}},
		{"key bad expiry", proj + "/keys", url.Values{"mode": {"live"}, "expiresAt": {"tomorrow"}}, 400, "key-error", "expiresAt", []string{`value="tomorrow"`, `<option value="live" selected>`}},
		{"key bad mode", proj + "/keys", url.Values{"mode": {"staging"}}, 400, "key-error", "mode", nil},
		{"method bad name", proj + "/methods", url.Values{"method": {"Bank ID"}, "pattern": {"webhook"}}, 400, "method-error", "method must match", []string{`value="Bank ID"`, `<option value="webhook" selected>`}},
		{"method bad pattern", proj + "/methods", url.Values{"method": {"sso"}, "pattern": {"carrier pigeon"}}, 400, "method-error", "pattern", []string{`value="sso"`}},
		{"method exists", proj + "/methods", url.Values{"method": {"bank_id"}, "pattern": {"direct"}}, 409, "method-error", "already has a method", []string{`value="bank_id"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, loc, body := c.postRaw(tc.path, with(csrf, tc.form))
			if code != tc.status || loc != "" {
				t.Fatalf("status=%d location=%q, want %d and the page itself", code, loc, tc.status)
			}
			if strings.Contains(body, "Something went wrong") {
				t.Fatal("a separate error page, want the form's page")
			}
			got := elementText(body, tc.errID)
			if got == "" || !strings.Contains(got, tc.want) {
				t.Fatalf("error beside the form %q reads %q, want it to mention %q", tc.errID, got, tc.want)
			}
			if n := strings.Count(body, `class="err"`); n != 1 {
				t.Fatalf("%d error boxes on the page, want 1", n)
			}
			for _, k := range tc.kept {
				if !strings.Contains(body, k) {
					t.Fatalf("page lacks the kept input %q", k)
				}
			}
			if strings.Contains(body, "<b>x</b>") {
				t.Fatal("markup from the form is not escaped")
			}
		})
	}
	if project() != stored {
		t.Fatalf("refused forms changed the project:\n%s\nwant\n%s", project(), stored)
	}
	if n := len(ts.admin("GET", "/api/v1/admin/projects", nil).Body["projects"].([]any)); n != projects {
		t.Fatalf("%d projects after refused creations, want %d", n, projects)
	}
	if n := len(ts.admin("GET", "/api/v1/admin/keys?projectId="+ts.Project.ID, nil).Body["apiKeys"].([]any)); n != 1 {
		t.Fatalf("%d keys after refused creations, want 1", n)
	}
	if n := len(ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID+"/external-methods", nil).Body["registrations"].([]any)); n != 1 {
		t.Fatalf("%d external methods after refused registrations, want 1", n)
	}
	// A form that passes saves everything it holds and says so.
	code, body := c.post(proj, with(csrf, url.Values{"name": {"Renamed"}, "origins": {"https://a.example"}, "denyCidrs": {"203.0.113.0/24"},
		"sessionTtlSeconds": {"3600"}, "rateLimitPerMinute": {"250"}, "emailChange": {"direct"}, "sessionRateLimitPerMinute": {"600"},
		"sessionIdleSeconds": {"7200"}, "sessionMaxSeconds": {"86400"}}))
	if code != 200 || elementText(body, "notice") != "Settings saved." || !strings.Contains(body, `name="sessionTtlSeconds" value="3600"`) ||
		!strings.Contains(body, `name="sessionRateLimitPerMinute" value="600"`) || !strings.Contains(body, `name="sessionIdleSeconds" value="7200"`) ||
		!strings.Contains(body, `name="sessionMaxSeconds" value="86400"`) {
		t.Fatalf("save: %d, notice %q", code, elementText(body, "notice"))
	}
	p := obj(t, ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID, nil).Body, "project")
	if p["name"] != "Renamed" || p["sessionTtlSeconds"] != 3600.0 || p["rateLimitPerMinute"] != 250.0 || p["emailChange"] != "direct" ||
		p["sessionRateLimitPerMinute"] != 600.0 || p["sessionIdleSeconds"] != 7200.0 || p["sessionMaxSeconds"] != 86400.0 ||
		fmt.Sprint(p["allowedOrigins"]) != "[https://a.example]" || fmt.Sprint(p["denyCidrs"]) != "[203.0.113.0/24]" {
		t.Fatalf("project after save: %v", p)
	}
	// The notice is shown once.
	if _, body := c.get(proj); strings.Contains(body, "Settings saved.") {
		t.Fatal("notice shown twice")
	}
	// The projects page shows both limits.
	if _, body := c.get("/admin/"); !strings.Contains(body, "<th>Session rate/min</th>") || !strings.Contains(body, "<td>250</td><td>600</td>") {
		t.Fatal("the projects page does not show the per-session limit")
	}
}

// TestDashboardConfirmations: each destructive action asks first. GET
// shows what it acts on and a form that posts with the CSRF token and
// confirm=yes; a POST without confirm=yes shows the same page and
// changes nothing, as does one without the CSRF token (403); the
// confirmed POST acts and redirects to a page that says what was done.
// Enabling needs no confirmation.
func TestDashboardConfirmations(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c, csrf := signedInCSRF(t, ts)
	login := ts.login("ann@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	tok2 := str(t, ts.login("ann@example.com").Body, "token")
	bob := str(t, ts.login("bob@example.com").Body, "userId")
	// TOTP enrolled, then locked by 10 wrong codes.
	enroll := ts.do("POST", "/api/v1/totp/enroll", tok, map[string]any{})
	wantOK(t, enroll)
	secret := str(t, enroll.Body, "secret")
	wantOK(t, ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": ts.totpCode(secret, 0)}))
	for range 10 {
		ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": "000000"})
	}
	totpFailures := func() int {
		var n int
		ts.DB.View(ctx, func(tx store.Tx) error {
			f, err := tx.Factor(uid, "totp")
			if err == nil {
				n = f.Failures
			}
			return nil
		})
		return n
	}
	if totpFailures() != 10 {
		t.Fatalf("TOTP failures %d, want 10", totpFailures())
	}
	key := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "test"})
	prefix := apiKeyPattern.FindString(key)[:16]
	mid, _ := ts.method("bank_id", "direct")
	doomed := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Doomed"}).Body, "project"), "id")
	proj := "/admin/projects/" + ts.Project.ID
	user := "/admin/users/" + uid

	for _, a := range []struct {
		name, path string
		facts      []string // shown on the confirmation page
		done       func() bool
		back       string // where the confirmed POST leads
		notice     string
	}{
		{"reset TOTP", user + "/reset-totp", []string{"ann@example.com", "TOTP failures", "TOTP locked until"},
			func() bool { return totpFailures() == 0 }, user, "TOTP lockout of ann@example.com reset."},
		{"end sessions", user + "/revoke-sessions", []string{"ann@example.com", "<th>Live sessions</th><td>2</td>"},
			func() bool { return ts.do("GET", "/api/v1/session", tok2, nil).Status == 401 }, user, "2 sessions of ann@example.com ended."},
		{"disable user", user + "/disable", []string{"ann@example.com", "<th>Project</th><td>default</td>"},
			func() bool { return userDisabled(t, ts, ts.Project.ID, "ann@example.com") }, user, "ann@example.com disabled."},
		{"delete user", "/admin/users/" + bob + "/delete", []string{"bob@example.com"},
			func() bool {
				return len(ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID+"&email=bob@example.com", nil).Body["users"].([]any)) == 0
			}, proj + "#users", "bob@example.com deleted."},
		{"revoke key", proj + "/keys/" + prefix + "/revoke", []string{prefix, "<th>Mode</th><td>test</td>"},
			func() bool { return ts.do("GET", "/api/v1/me", key, nil).Status == 401 }, proj + "#keys", "Key " + prefix + " revoked."},
		{"disable method", proj + "/methods/" + mid + "/disable", []string{"bank_id", "<th>Pattern</th><td>direct</td>"},
			func() bool { return methodStatus(t, ts, ts.Project.ID, mid) == "inactive" }, proj + "/methods", "Method bank_id disabled."},
		{"delete project", "/admin/projects/" + doomed + "/delete", []string{"Doomed", doomed},
			func() bool { return ts.admin("GET", "/api/v1/admin/projects/"+doomed, nil).Status == 404 }, "/admin/", "Project Doomed deleted."},
	} {
		t.Run(a.name, func(t *testing.T) {
			code, body := c.get(a.path)
			if code != 200 || !strings.Contains(body, `<form id="confirm" method="post" action="`+a.path+`">`) ||
				!strings.Contains(body, `<input type="hidden" name="csrf" value="`+csrf+`">`) || !strings.Contains(body, `name="confirm" value="yes"`) {
				t.Fatalf("confirmation page: %d\n%s", code, body)
			}
			for _, f := range a.facts {
				if !strings.Contains(body, f) {
					t.Fatalf("confirmation page lacks %q", f)
				}
			}
			if a.done() {
				t.Fatal("done by showing the confirmation")
			}
			if code, _, body := c.postRaw(a.path, url.Values{"csrf": {csrf}}); code != 200 || !strings.Contains(body, `<form id="confirm"`) || a.done() {
				t.Fatalf("POST without confirm=yes: %d, done %v; want the confirmation page again", code, a.done())
			}
			if code, _, _ := c.postRaw(a.path, url.Values{"confirm": {"yes"}}); code != 403 || a.done() {
				t.Fatalf("POST without the CSRF token: %d, done %v; want 403, nothing done", code, a.done())
			}
			code, loc, _ := c.postRaw(a.path, url.Values{"csrf": {csrf}, "confirm": {"yes"}})
			if code != http.StatusSeeOther || loc != a.back || !a.done() {
				t.Fatalf("confirmed POST: %d to %q, done %v; want 303 to %s, done", code, loc, a.done(), a.back)
			}
			if _, body := c.get(a.back); elementText(body, "notice") != a.notice {
				t.Fatalf("notice %q, want %q", elementText(body, "notice"), a.notice)
			}
		})
	}

	// Enabling acts at once.
	if code, loc, _ := c.postRaw(user+"/enable", url.Values{"csrf": {csrf}}); code != 303 || loc != user || userDisabled(t, ts, ts.Project.ID, "ann@example.com") {
		t.Fatalf("enable: %d to %q", code, loc)
	}
	if code, loc, _ := c.postRaw(user+"/enable", url.Values{"csrf": {csrf}, "from": {"project"}}); code != 303 || loc != proj+"#users" {
		t.Fatalf("enable from the project's list: %d to %q", code, loc)
	}
	if code, loc, _ := c.postRaw(proj+"/methods/"+mid+"/enable", url.Values{"csrf": {csrf}}); code != 303 || loc != proj+"/methods" || methodStatus(t, ts, ts.Project.ID, mid) != "active" {
		t.Fatalf("enable method: %d to %q", code, loc)
	}
	// Started from the project's list, the confirmation returns there.
	_, body := c.get(user + "/disable?from=project")
	if !strings.Contains(body, `<input type="hidden" name="from" value="project">`) || !strings.Contains(body, `id="cancel" href="`+proj+`#users"`) {
		t.Fatal("confirmation from the project's list does not return there")
	}

	// Unknown or mismatched objects: 404 on the error page, nothing done.
	other := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Other"}).Body, "project"), "id")
	otherKey := apiKeyPattern.FindString(ts.createKey(map[string]any{"projectId": other, "mode": "test"}))[:16]
	for _, path := range []string{"/admin/users/nobody/delete", "/admin/projects/nope/delete", proj + "/keys/" + otherKey + "/revoke",
		"/admin/projects/" + other + "/methods/" + mid + "/disable", "/admin/users/" + uid + "/nonsense"} {
		if code, body := c.get(path); code != 404 {
			t.Fatalf("GET %s: %d %s, want 404", path, code, body)
		}
		if code, _, _ := c.postRaw(path, url.Values{"csrf": {csrf}, "confirm": {"yes"}}); code != 404 {
			t.Fatalf("POST %s: %d, want 404", path, code)
		}
	}
	// A user without TOTP has no lockout to reset.
	noTOTP := str(t, ts.login("cy@example.com").Body, "userId")
	if code, body := c.get("/admin/users/" + noTOTP + "/reset-totp"); code != 404 || !strings.Contains(body, "TOTP is not enrolled") {
		t.Fatalf("reset TOTP without TOTP: %d", code)
	}
}

// methodStatus returns the status of project's external method id.
func methodStatus(t *testing.T, ts *testServer, project, id string) string {
	t.Helper()
	r := ts.admin("GET", "/api/v1/admin/projects/"+project+"/external-methods", nil)
	wantOK(t, r)
	for _, m := range r.Body["registrations"].([]any) {
		if m := m.(map[string]any); m["id"] == id {
			return m["status"].(string)
		}
	}
	t.Fatalf("method %s not listed: %s", id, r.Raw)
	return ""
}

var (
	secretShown = regexp.MustCompile(`<code class="secret" id="new-secret">([0-9a-f]{64})</code>`)
	deliveryRow = regexp.MustCompile(`<tr><td class="t">[^<]+</td><td>user\.registered<br><code class="muted">(evt-\d{3})</code>`)
)

// TestDashboardMethods: registering an external method shows its secret
// once (and that secret signs confirms); the list shows method, pattern,
// status, creation time and the callback URL of a webhook-pattern
// method; disabling after confirmation makes confirms 403.
func TestDashboardMethods(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c, csrf := signedInCSRF(t, ts)
	path := "/admin/projects/" + ts.Project.ID + "/methods"
	if _, body := c.get(path); !strings.Contains(body, "No external methods.") {
		t.Fatal("empty list not said")
	}
	code, loc, _ := c.postRaw(path, with(csrf, url.Values{"method": {"bank_id"}, "pattern": {"direct"}}))
	if code != 303 || loc != path+"#secret-notice" {
		t.Fatalf("register: %d to %q", code, loc)
	}
	_, body := c.get(path)
	m := secretShown.FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, "shown once") {
		t.Fatal("the new secret is not shown")
	}
	if _, again := c.get(path); strings.Contains(again, m[1]) || strings.Contains(again, `id="new-secret"`) {
		t.Fatal("the secret is shown twice")
	}
	confirm := ts.confirmBody(map[string]any{"externalUserId": "ext-1", "method": "bank_id", "email": "ext@example.com"})
	wantOK(t, ts.confirm(confirm, sign(m[1], confirm)))

	c.post(path, with(csrf, url.Values{"method": {"callback_id"}, "pattern": {"webhook"}}))
	r := ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID+"/external-methods", nil)
	regs := r.Body["registrations"].([]any)
	if len(regs) != 2 {
		t.Fatalf("registrations: %s", r.Raw)
	}
	ids := map[string]string{}
	for _, reg := range regs {
		ids[reg.(map[string]any)["method"].(string)] = reg.(map[string]any)["id"].(string)
	}
	hookID := ids["callback_id"]
	_, body = c.get(path)
	rows := regexp.MustCompile(`(?s)<table id="methods">.*?</table>`).FindString(body)
	for _, want := range []string{"<code>bank_id</code></td><td>direct</td>", "<code>callback_id</code></td><td>webhook</td>", ">active<",
		"<code>" + ts.URL + "/api/v1/external-auth/callback/" + hookID + "</code>"} {
		if !strings.Contains(rows, want) {
			t.Fatalf("methods table lacks %q:\n%s", want, rows)
		}
	}
	if regexp.MustCompile(`[0-9a-f]{64}`).MatchString(body) {
		t.Fatal("a secret is shown after creation")
	}

	bankID := ids["bank_id"]
	c.post(path+"/"+bankID+"/disable", with(csrf, url.Values{"confirm": {"yes"}}))
	ts.Clock.Advance(time.Second)
	confirm = ts.confirmBody(map[string]any{"externalUserId": "ext-1", "method": "bank_id"})
	wantError(t, ts.confirm(confirm, sign(m[1], confirm)), 403, "INACTIVE_REGISTRATION")
	if _, body = c.get(path); !strings.Contains(body, `<span class="bad">inactive</span>`) || !strings.Contains(body, "/"+bankID+`/enable"`) {
		t.Fatal("the disabled method is not shown as inactive with Enable")
	}
}

// TestDashboardWebhooks: the webhooks page lists a project's webhooks of
// both modes with URL, mode, event types, creation time and the last
// delivery, never a secret; a webhook's deliveries come 50 a page,
// newest first, through an "older" cursor; another project's webhook,
// an unknown one and a bad cursor are refused.
func TestDashboardWebhooks(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c, _ := signedInCSRF(t, ts)
	path := "/admin/projects/" + ts.Project.ID + "/webhooks"
	if _, body := c.get(path); !strings.Contains(body, "No webhooks.") {
		t.Fatal("empty list not said")
	}
	rcv := newReceiver(t, 500)
	id, secret := ts.createWebhook(rcv.URL+"/hook", []string{"user.registered"})
	liveKey := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live"})
	// (subscribed to an event the test never sends: nothing leaves the machine)
	r := ts.do("POST", "/api/v1/webhooks", liveKey, map[string]any{"url": "https://1.1.1.1/live", "eventTypes": []string{"passkey.removed"}})
	wantOK(t, r)
	liveSecret := str(t, obj(t, r.Body, "webhook"), "secret")
	ts.login("ann@example.com")
	ts.deliver()

	_, body := c.get(path)
	rows := regexp.MustCompile(`(?s)<table id="webhooks">.*?</table>`).FindString(body)
	for _, want := range []string{"<code>" + rcv.URL + "/hook</code></td><td>test</td>\n<td>user.registered<br></td>",
		"<code>https://1.1.1.1/live</code></td><td>live</td>\n<td>passkey.removed<br></td>",
		`<span class="pending">pending</span> · HTTP 500 · attempt 1 · user.registered<br><span class="muted">2026-11-22T10:00:31.000Z; next attempt 2026-11-22T10:01:01.000Z</span>`,
		"none yet", path + "/" + id} {
		if !strings.Contains(rows, want) {
			t.Fatalf("webhooks table lacks %q:\n%s", want, rows)
		}
	}
	if strings.Contains(body, secret) || strings.Contains(body, liveSecret) {
		t.Fatal("a webhook secret is shown")
	}

	// 120 more attempts: pages of 50, newest first, each once.
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		for i := range 120 {
			if err := tx.AddDelivery(&store.Delivery{ID: fmt.Sprintf("d-%03d", i), WebhookID: id, EventID: fmt.Sprintf("evt-%03d", i), EventType: "user.registered",
				Attempt: 1, Status: "succeeded", ResponseStatus: 200, DurationMS: 7, CreatedAt: ts.Clock.Now()}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	page := path + "/" + id
	for n := 0; page != ""; n++ {
		code, body := c.get(page)
		if code != 200 {
			t.Fatalf("%s: %d", page, code)
		}
		got := deliveryRow.FindAllStringSubmatch(body, -1)
		if len(got) > 50 {
			t.Fatalf("page %d shows %d attempts", n, len(got))
		}
		for _, m := range got {
			seen = append(seen, m[1])
		}
		if n == 0 && !strings.Contains(body, "<h1>Deliveries to <code>"+rcv.URL+"/hook</code></h1>") {
			t.Fatal("deliveries page does not name the webhook")
		}
		if n == 2 && !strings.Contains(body, `<span class="pending">pending</span></td><td>500</td>`) {
			t.Fatal("the last page lacks the first, failed attempt")
		}
		page = ""
		if m := olderLink.FindStringSubmatch(body); m != nil {
			page = html.UnescapeString(m[1])
		}
	}
	if len(seen) != 120 || seen[0] != "evt-119" || seen[119] != "evt-000" {
		t.Fatalf("pages showed %d attempts (%v … %v)", len(seen), seen[0], seen[len(seen)-1])
	}

	other := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Other"}).Body, "project"), "id")
	for p, want := range map[string]int{
		"/admin/projects/" + other + "/webhooks/" + id: 404,
		path + "/00000000-0000-0000-0000-000000000000": 404,
		path + "/" + id + "?before=yesterday":          400,
		"/admin/projects/nope/webhooks":                404,
	} {
		if code, _ := c.get(p); code != want {
			t.Fatalf("GET %s: %d, want %d", p, code, want)
		}
	}
}

// TestDashboardUser: a user's page shows the address and whether it is
// verified, the factors and the newest sessions (at most 100, saying
// when there are more), all bounded whatever the number of sessions.
func TestDashboardUser(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c, _ := signedInCSRF(t, ts)
	tok := ts.loginFrom("ann@example.com", "198.51.100.7", "Firefox/140")
	ann := str(t, obj(t, ts.do("GET", "/api/v1/user", tok, nil).Body, "user"), "id")
	_, body := c.get("/admin/users/" + ann)
	for _, want := range []string{"<h1>ann@example.com</h1>", `<td id="email-verified"><span class="ok">yes</span></td>`, "198.51.100.7", "Firefox/140",
		`<td id="status">enabled</td>`, `id="revoke-sessions"`, `id="delete-user"`, `id="disable"`, "<th>TOTP</th><td><span class=\"muted\">none</span>"} {
		if !strings.Contains(body, want) {
			t.Fatalf("user page lacks %q", want)
		}
	}
	if strings.Contains(body, "more-sessions") {
		t.Fatal("says there are more sessions")
	}
	for _, want := range []string{`<td id="groups"><span class="muted">—</span></td>`, `<td id="metadata"><span class="muted">—</span></td>`} {
		if !strings.Contains(body, want) {
			t.Fatalf("user page without groups and metadata lacks %q", want)
		}
	}
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+ann, map[string]any{"groups": []string{"staff", "admins"}, "metadata": map[string]any{"note": "<b>vip</b>"}}))
	_, body = c.get("/admin/users/" + ann)
	for _, want := range []string{`<td id="groups"><code>admins</code>, <code>staff</code></td>`,
		`<td id="metadata"><code>{&#34;note&#34;:&#34;&lt;b&gt;vip&lt;/b&gt;&#34;}</code></td>`} {
		if !strings.Contains(body, want) {
			t.Fatalf("user page lacks %q", want)
		}
	}
	// 150 sessions: the page lists the newest 100 and says there are more.
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		for i := range 150 {
			s := &store.Session{ID: fmt.Sprintf("01ff%04d-0000-7000-8000-000000000000", i), UserID: ann, ProjectID: ts.Project.ID, Method: "email_otp",
				IssuedAt: ts.Clock.Now(), ExpiresAt: ts.Clock.Now().Add(time.Hour), IP: fmt.Sprintf("bulk-%03d", i)}
			if err := tx.PutSession(s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_, body = c.get("/admin/users/" + ann)
	if n := strings.Count(body, "<td>bulk-"); n != 100 || !strings.Contains(body, "<td>bulk-149</td>") || !strings.Contains(body, `id="more-sessions"`) {
		t.Fatalf("user page lists %d bulk sessions, want the newest 100 and a note", n)
	}
	if code, _ := c.get("/admin/users/nobody"); code != 404 {
		t.Fatalf("unknown user: %d", code)
	}
}

// TestDashboardEventsProject: the events list names each event's
// project, "—" for events without one and the id of a deleted project.
func TestDashboardEventsProject(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	c, _ := signedInCSRF(t, ts)
	gone := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Gone"}).Body, "project"), "id")
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		for i, p := range []string{ts.Project.ID, gone, ""} {
			e := &store.AuthEvent{ID: fmt.Sprint("ev-", i), ProjectID: p, Email: fmt.Sprintf("p%d@example.com", i), Method: "email_otp", Action: "verify",
				FailureCode: "expired", CreatedAt: ts.Clock.Now().Add(time.Duration(i) * time.Second)}
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+gone, nil))
	_, body := c.get("/admin/events")
	for _, want := range []string{
		`<td><a href="/admin/projects/` + ts.Project.ID + `">default</a></td><td>email_otp</td><td>verify</td><td>no</td><td>expired</td><td>p0@example.com</td>`,
		`<td><code title="deleted project">` + gone + `</code> <span class="muted">(deleted)</span></td><td>email_otp</td><td>verify</td><td>no</td><td>expired</td><td>p1@example.com</td>`,
		`<td><span class="muted">—</span></td><td>email_otp</td><td>verify</td><td>no</td><td>expired</td><td>p2@example.com</td>`,
		`<th>Project</th>`,
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("events page lacks %q\n%s", want, regexp.MustCompile(`(?s)<table id="events">.*?</table>`).FindString(body))
		}
	}
	// A signed-in user's events link to the user's page.
	uid := str(t, ts.login("ann@example.com").Body, "userId")
	if _, body := c.get("/admin/events?project=" + ts.Project.ID); !strings.Contains(body, `<a href="/admin/users/`+uid+`">ann@example.com</a>`) {
		t.Fatal("the event's email does not link to its user")
	}
}

// TestDashboardNotReady: while a readiness check fails, every signed-in
// page shows a banner naming it, with the check's detail (which GET
// /ready, unauthenticated, leaves out); the sign-in page shows nothing,
// and the banner goes when the check passes.
func TestDashboardNotReady(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	ts := newTestServerAPI(t, func(c *httpapi.Config) {
		c.ReadyChecks = []httpapi.ReadyCheck{{Name: "mail",
			Check: func() error {
				if failing.Load() {
					return errors.New("the SMTP server refuses the configuration")
				}
				return nil
			},
			Detail: func() error {
				if failing.Load() {
					return errors.New("535 5.7.8 authentication failed")
				}
				return nil
			}}}
	})
	c, _ := signedInCSRF(t, ts)
	pages := []string{"/admin/", "/admin/events", "/admin/projects/" + ts.Project.ID, "/admin/projects/" + ts.Project.ID + "/webhooks", "/admin/projects/" + ts.Project.ID + "/methods"}
	for _, p := range pages {
		if _, body := c.get(p); strings.Contains(body, "not-ready") {
			t.Fatalf("%s: a banner while ready", p)
		}
	}
	failing.Store(true)
	for _, p := range pages {
		_, body := c.get(p)
		if !strings.Contains(body, `<div class="banner" id="not-ready" role="alert">`) ||
			!strings.Contains(body, "<li><strong>mail</strong>: the SMTP server refuses the configuration<br><span class=\"detail\">535 5.7.8 authentication failed</span>") ||
			!strings.Contains(body, "Sign-in codes and links are not being delivered") {
			t.Fatalf("%s: no banner naming mail with its detail", p)
		}
	}
	if r := ts.do("GET", "/api/v1/ready", "", nil); r.Status != 503 || strings.Contains(string(r.Raw), "535") {
		t.Fatalf("ready: %d %s, want 503 without the detail", r.Status, r.Raw)
	}
	if _, body := newDashClient(t, ts).get("/admin/"); strings.Contains(body, "not-ready") || strings.Contains(body, "535") {
		t.Fatal("the sign-in page shows the banner")
	}
	failing.Store(false)
	if _, body := c.get("/admin/"); strings.Contains(body, "not-ready") {
		t.Fatal("the banner stays after the check passes")
	}
}
