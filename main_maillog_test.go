package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/internal/testkit"
)

var (
	mailLogCode = regexp.MustCompile(`msg=mail-log to=ada@example.com kind=otp code=(\d{6}) project_id=\S+\n`)
	mailLogLink = regexp.MustCompile(`msg=mail-log to=bob@example.com kind=magic link="(http://[^"]+/api/v1/magic/verify\?token=[A-Za-z0-9_-]{43})" project_id=\S+\n`)
)

// TestMailLog: without an SMTP server the start-up log says where mail
// goes (the outbox directory and the dashboard's Outbox page);
// --mail-log logs one line per message with its recipient, kind, and
// code or link, and the code logged signs the user in; the dashboard's
// Outbox page shows it too (noting, on a database, that the directory
// is this replica's). Without
// --mail-log no line holds a code or link. (With an SMTP server
// --mail-log is refused: TestStartupChecks.)
func TestMailLog(t *testing.T) {
	t.Parallel()
	var logs testkit.Buffer
	m, out := startMain(t, Config{MailLog: true}, &logs)
	key := match(t, keyLine, out.String())
	c := client{t, "http://" + m.Addr()}
	dir, err := filepath.Abs(m.outboxDir())
	if err != nil {
		t.Fatal(err)
	}
	start := regexp.MustCompile(`msg="mail goes to the outbox: no SMTP server is configured \(--smtp-url\)" dir=(\S+) dashboard=(\S+) mail_log=true\n`).
		FindStringSubmatch(logs.String())
	if start == nil || start[1] != dir || start[2] != "http://"+m.Addr()+"/admin/outbox" {
		t.Fatalf("start-up log does not say where mail goes (want dir=%s):\n%s", dir, logs.String())
	}
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "ada@example.com"}); st != 200 {
		t.Fatalf("otp send: %d %v", st, body)
	}
	if st, body := c.do("POST", "/api/v1/magic/send", key, map[string]any{"email": "bob@example.com"}); st != 200 {
		t.Fatalf("magic send: %d %v", st, body)
	}
	var code, link []string
	for deadline := time.Now().Add(10 * time.Second); code == nil || link == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no mail-log lines for both messages:\n%s", logs.String())
		}
		code, link = mailLogCode.FindStringSubmatch(logs.String()), mailLogLink.FindStringSubmatch(logs.String())
	}
	if n := strings.Count(logs.String(), "msg=mail-log"); n != 2 {
		t.Fatalf("%d mail-log lines, want one per message:\n%s", n, logs.String())
	}
	// The same code as the outbox's file, and it signs ada in.
	files, _ := filepath.Glob(filepath.Join(m.outboxDir(), "*.eml"))
	var inFiles string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		inFiles += string(b)
	}
	if !strings.Contains(inFiles, "\r\n\r\n    "+code[1]+"\r\n") || !strings.Contains(inFiles, link[1]+"\r\n") {
		t.Fatalf("the logged code %s or link %s is not the one in the outbox", code[1], link[1])
	}
	if st, body := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "ada@example.com", "code": code[1]}); st != 200 || body["token"] == nil {
		t.Fatalf("verify with the logged code: %d %v", st, body)
	}

	// The dashboard's Outbox page shows the same code, and on a
	// database says the directory is this replica's.
	jar, _ := cookiejar.New(nil)
	dash := &http.Client{Jar: jar}
	res, err := dash.PostForm("http://"+m.Addr()+"/admin/login", url.Values{"token": {match(t, adminLine, out.String())}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res, err = dash.Get("http://" + m.Addr() + "/admin/outbox"); err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(page), `<code class="secret copy code" title="One click selects it">`+code[1]+`</code>`) ||
		strings.Contains(string(page), "Replicas on a database") != (m.Config.DatabaseURL != "") {
		t.Fatalf("the Outbox page lacks the code %s, or misses (or wrongly shows) the note on replicas:\n%s", code[1], page)
	}

	// Without --mail-log: the start-up line says so, and no line holds
	// the code.
	var quiet testkit.Buffer
	m2, out2 := startMain(t, Config{}, &quiet)
	key2 := match(t, keyLine, out2.String())
	c2 := client{t, "http://" + m2.Addr()}
	if st, body := c2.do("POST", "/api/v1/otp/send", key2, map[string]any{"email": "ada@example.com"}); st != 200 {
		t.Fatalf("otp send: %d %v", st, body)
	}
	code2 := waitForCode(t, m2.outboxDir())
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(quiet.String(), `msg="mail written to the outbox"`); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no line for the mail written to the outbox:\n%s", quiet.String())
		}
	}
	if l := quiet.String(); !strings.Contains(l, "mail_log=false") || strings.Contains(l, "mail-log") || strings.Contains(l, code2) {
		t.Fatalf("without --mail-log the log names it, or holds the code %s:\n%s", code2, l)
	}
}
