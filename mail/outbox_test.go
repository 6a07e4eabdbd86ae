package mail_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/mail"
	"latchkey/store"
)

// enqueueFor queues a message of project, one clock second after the
// previous one.
func (f *queueFixture) enqueueFor(t *testing.T, project, kind, to string, c store.MailContent) {
	t.Helper()
	f.clock.Advance(time.Second)
	body, _ := json.Marshal(c)
	sealed, err := f.keys.Seal(body, store.MailAAD)
	if err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	if err := f.db.Update(ctx, func(tx store.Tx) error {
		return tx.EnqueueMail(&store.Mail{ProjectID: project, To: to, Kind: kind, Body: sealed, CreatedAt: now, NextAttemptAt: now})
	}); err != nil {
		t.Fatal(err)
	}
}

// TestOutboxRead: the queue writes each message into the outbox with
// its project, kind, and code or link beside it; ReadOutbox gives them
// back newest first, decoded (a project's template in another script
// too), filtered by project, a page at a time; --mail-log's line names
// recipient, kind, and code or link, and the queue's own lines never.
func TestOutboxRead(t *testing.T) {
	t.Parallel()
	f := mustOpen(t)
	dir := filepath.Join(t.TempDir(), "outbox")
	var mailLog, queueLog testkit.Buffer
	out := &mail.Outbox{Dir: dir, Log: slog.New(slog.NewTextHandler(&mailLog, nil))}
	q := &mail.Queue{DB: f.db, Keys: f.keys, Transport: out, From: "auth@example.com", Now: f.clock.Now,
		Logger: slog.New(slog.NewTextHandler(&queueLog, nil))}
	link := "https://auth.example.com/api/v1/magic/verify?token=AbC_dEf-123"
	f.enqueueFor(t, "proj-a", mail.KindOTP, "ada@example.com", store.MailContent{Project: "Shop", Code: "482913", TTLSeconds: 600})
	f.enqueueFor(t, "proj-b", mail.KindMagic, "bob@example.com", store.MailContent{Project: "Blog", Link: link, TTLSeconds: 900})
	f.enqueueFor(t, "proj-a", mail.KindOTP, "cy@example.com", store.MailContent{Project: "Shop", Code: "105277", TTLSeconds: 600,
		Subject: "Ваш код", Text: "Код: 105277\n", HTML: "<p>Код: <b>105277</b> — «Shop»</p>"})
	if err := q.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}

	l, err := mail.ReadOutbox(dir, mail.OutboxQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Messages) != 3 || len(l.Skipped) != 0 || l.Older != "" {
		t.Fatalf("listing: %d messages, skipped %v, older %q; want 3, none, none", len(l.Messages), l.Skipped, l.Older)
	}
	newest, magic, oldest := l.Messages[0], l.Messages[1], l.Messages[2]
	if newest.To != "cy@example.com" || magic.To != "bob@example.com" || oldest.To != "ada@example.com" {
		t.Fatalf("order: %s, %s, %s; want newest first", newest.To, magic.To, oldest.To)
	}
	for _, c := range []struct {
		name                               string
		got                                *mail.OutboxMessage
		project, kind, code, link, subject string
		text, html                         string
	}{
		{"built-in code", oldest, "proj-a", "otp", "482913", "", "Your Shop sign-in code", "Your sign-in code for Shop is:\n\n    482913\n", "482913</p>"},
		{"built-in link", magic, "proj-b", "magic", "", link, "Sign in to Blog", link + "\n", `<a href="` + strings.ReplaceAll(link, "&", "&amp;") + `">`},
		{"template in Cyrillic", newest, "proj-a", "otp", "105277", "", "Ваш код", "Код: 105277\n", "<p>Код: <b>105277</b> — «Shop»</p>"},
	} {
		g := c.got
		if g.ProjectID != c.project || g.Kind != c.kind || g.Code != c.code || g.Link != c.link || g.Subject != c.subject {
			t.Errorf("%s: project %q kind %q code %q link %q subject %q; want %q %q %q %q %q", c.name,
				g.ProjectID, g.Kind, g.Code, g.Link, g.Subject, c.project, c.kind, c.code, c.link, c.subject)
		}
		if !strings.Contains(g.Text, c.text) || !strings.Contains(g.HTML, c.html) || strings.Contains(g.Text+g.HTML, "\r") {
			t.Errorf("%s: text %q, html %q; want them to hold %q and %q, LF line ends", c.name, g.Text, g.HTML, c.text, c.html)
		}
		if g.From != "auth@example.com" || g.Date.IsZero() || !strings.HasSuffix(g.File, ".eml") {
			t.Errorf("%s: from %q date %v file %q", c.name, g.From, g.Date, g.File)
		}
	}
	// The raw file keeps the code the first run of six digits.
	raw, err := os.ReadFile(filepath.Join(dir, oldest.File))
	if err != nil {
		t.Fatal(err)
	}
	if got := regexp.MustCompile(`\d{6}`).FindString(string(raw)); got != "482913" {
		t.Fatalf("first run of six digits %q, want the code", got)
	}

	// A project's messages; a page of one, then the older ones.
	l, _ = mail.ReadOutbox(dir, mail.OutboxQuery{ProjectID: "proj-a", Limit: 1})
	if len(l.Messages) != 1 || l.Messages[0].Code != "105277" || l.Older == "" {
		t.Fatalf("proj-a, first page: %+v", l)
	}
	l, _ = mail.ReadOutbox(dir, mail.OutboxQuery{ProjectID: "proj-a", Limit: 1, Before: l.Older})
	if len(l.Messages) != 1 || l.Messages[0].Code != "482913" {
		t.Fatalf("proj-a, older page: %+v", l)
	}
	if l, _ = mail.ReadOutbox(dir, mail.OutboxQuery{ProjectID: "proj-c"}); len(l.Messages) != 0 {
		t.Fatalf("proj-c: %d messages", len(l.Messages))
	}

	// --mail-log: one line per message with its code or link; the
	// queue's lines hold neither.
	// (The queue sends concurrently: the lines come in any order.)
	lines := strings.Split(strings.TrimSpace(mailLog.String()), "\n")
	for _, want := range []string{"msg=mail-log to=ada@example.com kind=otp code=482913 project_id=proj-a",
		`msg=mail-log to=bob@example.com kind=magic link="` + link + `" project_id=proj-b`,
		"msg=mail-log to=cy@example.com kind=otp code=105277 project_id=proj-a"} {
		if len(lines) != 3 || !strings.Contains(mailLog.String(), want+"\n") {
			t.Fatalf("mail log lacks %q, or has more than 3 lines:\n%s", want, mailLog.String())
		}
	}
	for _, secret := range []string{"482913", "105277", "AbC_dEf-123"} {
		if strings.Contains(queueLog.String(), secret) {
			t.Fatalf("the queue's log holds %s:\n%s", secret, queueLog.String())
		}
	}
}

// TestReadOutboxBadFiles: files that cannot be shown are listed as
// skipped, with the reason, and the listing goes on; hidden files,
// other names and a missing directory are no error.
func TestReadOutboxBadFiles(t *testing.T) {
	t.Parallel()
	if l, err := mail.ReadOutbox(filepath.Join(t.TempDir(), "none"), mail.OutboxQuery{}); err != nil || len(l.Messages)+len(l.Skipped) != 0 {
		t.Fatalf("missing directory: %v, %+v", err, l)
	}
	dir := t.TempDir()
	good := (&mail.Message{ID: "ok", From: "a@example.com", To: "b@example.com", Subject: "Hi", Text: "hello\n", HTML: "<p>hello</p>",
		Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}).Bytes()
	files := map[string]string{
		"20260102T030405.000000000Z-ok.eml":      string(good),
		"20260102T030406.000000000Z-huge.eml":    "Subject: x\r\n\r\n" + strings.Repeat("a", mail.MaxOutboxFile),
		"20260102T030407.000000000Z-garbage.eml": "\x00\x01 not a message",
		"20260102T030408.000000000Z-image.eml":   "Content-Type: image/png\r\n\r\nPNG",
		"20260102T030409.000000000Z-qp.eml":      "Content-Type: text/plain\r\nContent-Transfer-Encoding: x-unknown\r\n\r\nhi",
		"20260102T030410.000000000Z-mime.eml":    "Content-Type: multipart/alternative; boundary=zz\r\n\r\n--zz\r\nContent-Type: text/plain\r\n\r\nhalf",
		".tmp-123":                               "half written",
		"20260102T030411.000000000-x.sms.txt":    "a text message",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "20260102T030412.000000000Z-dir.eml"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := mail.ReadOutbox(dir, mail.OutboxQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Messages) != 1 || l.Messages[0].Text != "hello\n" || l.Messages[0].HTML != "<p>hello</p>" {
		t.Fatalf("messages: %+v", l.Messages)
	}
	got := map[string]string{}
	for _, s := range l.Skipped {
		got[s.File[strings.LastIndex(s.File, "-")+1:]] = s.Reason
	}
	want := map[string]string{"dir.eml": "not a regular file", "huge.eml": "larger than 1024 KiB", "garbage.eml": "not an email message",
		"image.eml": "not a text message (image/png)", "qp.eml": `unknown transfer encoding "x-unknown"`, "mime.eml": "a part does not decode"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s skipped because %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("skipped %v, want %v", got, want)
	}
}
