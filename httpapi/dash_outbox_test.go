package httpapi_test

import (
	"html"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/httpapi"
	"latchkey/mail"
)

// newOutboxServer starts a test server whose mail goes to an outbox
// directory, which it returns.
func newOutboxServer(t *testing.T) (*testServer, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "latchkey.outbox")
	ts := newTestServerAPI(t, func(c *httpapi.Config) { c.Outbox = httpapi.Outbox{Dir: dir} })
	return ts, dir
}

// deliverMail runs the mail queue once, as the server's would, into the
// outbox dir.
func (ts *testServer) deliverMail(dir string) {
	ts.t.Helper()
	q := &mail.Queue{DB: ts.DB, Keys: ts.Keys, Transport: &mail.Outbox{Dir: dir}, From: "latchkey@localhost", Now: ts.Clock.Now,
		Logger: slog.New(slog.DiscardHandler)}
	if err := q.RunOnce(ctx); err != nil {
		ts.t.Fatal(err)
	}
	if n := ts.mailCount(); n != 0 {
		ts.t.Fatalf("%d messages still queued", n)
	}
}

var (
	outboxSection = regexp.MustCompile(`(?s)<section class="mail" id="mail-\d+">.*?</section>`)
	outboxTo      = regexp.MustCompile(`<td class="to">([^<]*)</td>`)
	outboxCode    = regexp.MustCompile(`<code class="secret copy code"[^>]*>(\d{6})</code>`)
	outboxLink    = regexp.MustCompile(`<code class="secret copy link"[^>]*>([^<]+)</code>`)
	outboxFrame   = regexp.MustCompile(`<iframe class="html-part" sandbox="" srcdoc="([^"]*)"`)
)

// TestDashboardOutbox: without an SMTP server the Outbox page lists the
// outbox's messages newest first, each with its code or link in a field
// of its own, its HTML part in a sandboxed frame under a CSP without
// scripts and its text part; it filters by project; files it cannot
// show are named with the reason and the others still shown; the
// navigation links to it. With an SMTP server it says where mail goes
// and lists nothing; signed out, it is the sign-in page.
func TestDashboardOutbox(t *testing.T) {
	t.Parallel()
	ts, dir := newOutboxServer(t)
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Blog"})
	otherID := str(t, obj(t, other.Body, "project"), "id")
	otherKey := ts.createKey(map[string]any{"projectId": otherID, "mode": "test"})

	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "ada@example.com"}))
	code := ts.lastMail("ada@example.com").Code
	ts.Clock.Advance(time.Second)
	wantOK(t, ts.do("POST", "/api/v1/magic/send", otherKey, map[string]any{"email": "bob@example.com"}))
	link := ts.lastMail("bob@example.com").Link
	ts.Clock.Advance(time.Second)
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "cy@example.com"}))
	ts.deliverMail(dir)

	c := signedIn(t, ts)
	res, err := c.http.Get(ts.URL + "/admin/outbox")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if csp := res.Header.Get("Content-Security-Policy"); res.StatusCode != 200 || !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Fatalf("status %d, CSP %q: want 200 and a CSP that allows no script", res.StatusCode, csp)
	}
	_, body := c.get("/admin/outbox")
	if !strings.Contains(body, `<a href="/admin/outbox">Outbox</a>`) || !strings.Contains(body, html.EscapeString(dir)) {
		t.Fatal("no Outbox link in the navigation, or the page does not name the directory")
	}
	sections := outboxSection.FindAllString(body, -1)
	var to []string
	for _, s := range sections {
		to = append(to, outboxTo.FindStringSubmatch(s)[1])
	}
	if strings.Join(to, " ") != "cy@example.com bob@example.com ada@example.com" {
		t.Fatalf("messages to %v, want the newest first", to)
	}
	ada, bob := sections[2], sections[1]
	if m := outboxCode.FindStringSubmatch(ada); m == nil || m[1] != code || !strings.Contains(ada, ">otp<") || !strings.Contains(ada, ">default</a>") {
		t.Fatalf("ada's message shows no code %s, kind otp or project default:\n%s", code, ada)
	}
	if m := outboxLink.FindStringSubmatch(bob); m == nil || html.UnescapeString(m[1]) != link || outboxCode.MatchString(bob) || !strings.Contains(bob, ">Blog</a>") {
		t.Fatalf("bob's message shows no link %s or project Blog:\n%s", link, bob)
	}
	frame := outboxFrame.FindStringSubmatch(ada)
	if frame == nil || !strings.Contains(html.UnescapeString(frame[1]), "<p style=\"font-size:2em;letter-spacing:0.2em;font-family:monospace\">"+code+"</p>") {
		t.Fatalf("ada's HTML part is not in a sandboxed frame as sent:\n%s", ada)
	}
	if !strings.Contains(ada, `<pre class="text-part">Your sign-in code for default is:`) {
		t.Fatalf("ada's text part missing:\n%s", ada)
	}

	// One project's.
	_, body = c.get("/admin/outbox?project=" + otherID)
	if s := outboxSection.FindAllString(body, -1); len(s) != 1 || !strings.Contains(s[0], "bob@example.com") {
		t.Fatalf("Blog's outbox shows %d messages, want bob's", len(s))
	}
	if _, body = c.get("/admin/projects/" + otherID); !strings.Contains(body, `<a href="/admin/outbox?project=`+otherID+`">Outbox</a>`) {
		t.Fatal("the project's tabs do not link to its outbox")
	}

	// Files it cannot show: named with the reason; the rest still shown.
	bad := map[string]string{"29991231T000000.000000000Z-huge.eml": strings.Repeat("x", mail.MaxOutboxFile+1), "29991231T000001.000000000Z-junk.eml": "\x00junk"}
	for name, b := range bad {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code2, body := c.get("/admin/outbox")
	if code2 != 200 || len(outboxSection.FindAllString(body, -1)) != 3 ||
		!regexp.MustCompile(`<td><code>29991231T000000.000000000Z-huge.eml</code></td><td>larger than 1024 KiB</td>`).MatchString(body) ||
		!regexp.MustCompile(`<td><code>29991231T000001.000000000Z-junk.eml</code></td><td>not an email message</td>`).MatchString(body) {
		t.Fatalf("with bad files: status %d, page:\n%s", code2, body)
	}

	// An outbox that cannot be read: the page says so.
	broken, brokenDir := newOutboxServer(t)
	if err := os.WriteFile(brokenDir, []byte("a file, not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, body := signedIn(t, broken).get("/admin/outbox"); code != 200 || !strings.Contains(body, `id="outbox-error"`) {
		t.Fatalf("unreadable outbox: status %d, page:\n%s", code, body)
	}

	// With an SMTP server: it says so, lists nothing, and is not in the
	// navigation.
	smtp := newTestServerAPI(t, func(c *httpapi.Config) { c.Outbox = httpapi.Outbox{SMTP: "smtp.example.com:587"} })
	sc := signedIn(t, smtp)
	code3, body := sc.get("/admin/outbox")
	if code3 != 200 || !strings.Contains(body, `Mail goes through the SMTP server <code>smtp.example.com:587</code>`) ||
		strings.Contains(body, `<form method="get" action="/admin/outbox">`) || strings.Contains(body, `<a href="/admin/outbox">`) {
		t.Fatalf("with SMTP: status %d, page:\n%s", code3, body)
	}

	// Signed out: the sign-in page, no message.
	if _, body := newDashClient(t, ts).get("/admin/outbox"); !strings.Contains(body, `name="token"`) || strings.Contains(body, code) {
		t.Fatal("the outbox is shown without signing in")
	}
}
