package mail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"mime/multipart"
	netmail "net/mail"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/mail"
	"latchkey/mail/mailtest"
	"latchkey/store"
	"latchkey/store/storetest"
)

// fakeTransport records messages and fails while fail is non-nil.
type fakeTransport struct {
	mu   sync.Mutex
	sent []*mail.Message
	fail error
}

func (f *fakeTransport) Send(_ context.Context, m *mail.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.sent = append(f.sent, m)
	return nil
}

func TestMain(m *testing.M) { os.Exit(storetest.RunMain(m)) }

// ctx is the context of the tests' store calls: never cancelled.
var ctx = context.Background()

type queueFixture struct {
	db    store.DB
	keys  *store.Keyring
	clock *testkit.Clock
	path  string
}

func mustOpen(t *testing.T) *queueFixture {
	t.Helper()
	path := storetest.New(t)
	db, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	keys, err := store.NewKeyring(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return &queueFixture{db: db, keys: keys, clock: testkit.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)), path: path}
}

func (f *queueFixture) enqueue(t *testing.T, kind, to string, c store.MailContent) {
	t.Helper()
	body, _ := json.Marshal(c)
	sealed, err := f.keys.Seal(body, store.MailAAD)
	if err != nil {
		t.Fatal(err)
	}
	now := f.clock.Now()
	if err := f.db.Update(ctx, func(tx store.Tx) error {
		return tx.EnqueueMail(&store.Mail{ProjectID: "p", To: to, Kind: kind, Body: sealed, CreatedAt: now, NextAttemptAt: now})
	}); err != nil {
		t.Fatal(err)
	}
}

func (f *queueFixture) queue(tr mail.Transport, logs io.Writer) *mail.Queue {
	return &mail.Queue{DB: f.db, Keys: f.keys, Transport: tr, From: "auth@example.com", Now: f.clock.Now,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
}

func (f *queueFixture) queued(t *testing.T) []*store.Mail {
	t.Helper()
	var out []*store.Mail
	f.db.View(ctx, func(tx store.Tx) error {
		return tx.RecentMail(func(m *store.Mail) bool { out = append(out, m); return true })
	})
	return out
}

func TestQueueSendsAndDeletes(t *testing.T) {
	t.Parallel()
	f := mustOpen(t)
	f.enqueue(t, mail.KindOTP, "a@example.com", store.MailContent{Project: "Acme", Code: "482913", TTLSeconds: 600})
	f.enqueue(t, mail.KindMagic, "b@example.com", store.MailContent{Project: "Acme", Link: "https://auth.example.com/api/v1/magic/verify?token=tok123", TTLSeconds: 900})
	tr := &fakeTransport{}
	var logs bytes.Buffer
	if err := f.queue(tr, &logs).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(tr.sent) != 2 {
		t.Fatalf("sent %d", len(tr.sent))
	}
	if n := len(f.queued(t)); n != 0 {
		t.Fatalf("%d still queued", n)
	}
	bySubject := map[string]*mail.Message{}
	for _, m := range tr.sent {
		bySubject[m.Subject] = m
	}
	otp := bySubject["Your Acme sign-in code"]
	magic := bySubject["Sign in to Acme"]
	if otp == nil || magic == nil {
		t.Fatalf("subjects: %v", bySubject)
	}
	if !strings.Contains(otp.Text, "482913") || !strings.Contains(otp.HTML, "482913") || !strings.Contains(otp.Text, "expires in 10 minutes") {
		t.Fatalf("otp text: %s", otp.Text)
	}
	if !strings.Contains(magic.Text, "token=tok123") || !strings.Contains(magic.HTML, `href="https://auth.example.com/api/v1/magic/verify?token=tok123"`) || !strings.Contains(magic.Text, "expires in 15 minutes") {
		t.Fatalf("magic: %s\n%s", magic.Text, magic.HTML)
	}
	if s := logs.String(); strings.Contains(s, "482913") || strings.Contains(s, "tok123") || !strings.Contains(s, "a@example.com") {
		t.Fatalf("logs leak a secret or miss the recipient:\n%s", s)
	}
}

func TestQueueRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	f := mustOpen(t)
	f.enqueue(t, mail.KindOTP, "a@example.com", store.MailContent{Project: "Acme", Code: "111111", TTLSeconds: 600})
	tr := &fakeTransport{fail: errors.New("connection refused")}
	var logs bytes.Buffer
	q := f.queue(tr, &logs)
	ctx := context.Background()
	if err := q.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	ms := f.queued(t)
	if len(ms) != 1 || ms[0].Attempts != 1 || !ms[0].NextAttemptAt.Equal(f.clock.Now().Add(mail.RetryDelay(1))) || ms[0].LastError != "connection refused" {
		t.Fatalf("after failure: %+v", ms[0])
	}
	// Not due yet: nothing is tried.
	tr.mu.Lock()
	tr.fail = nil
	tr.mu.Unlock()
	f.clock.Advance(mail.RetryDelay(1) - time.Second)
	q.RunOnce(ctx)
	if len(tr.sent) != 0 {
		t.Fatal("retried before the backoff")
	}
	f.clock.Advance(time.Second)
	q.RunOnce(ctx)
	if len(tr.sent) != 1 || len(f.queued(t)) != 0 {
		t.Fatalf("sent %d, queued %d", len(tr.sent), len(f.queued(t)))
	}
}

func TestQueueGivesUp(t *testing.T) {
	t.Parallel()
	t.Run("permanent", func(t *testing.T) {
		f := mustOpen(t)
		f.enqueue(t, mail.KindOTP, "a@example.com", store.MailContent{Project: "Acme", Code: "111111", TTLSeconds: 600})
		tr := &fakeTransport{fail: &mail.PermanentError{Err: errors.New("550 no such user")}}
		f.queue(tr, io.Discard).RunOnce(context.Background())
		if n := len(f.queued(t)); n != 0 {
			t.Fatalf("permanent failure left %d queued", n)
		}
	})
	t.Run("after an hour", func(t *testing.T) {
		f := mustOpen(t)
		f.enqueue(t, mail.KindOTP, "a@example.com", store.MailContent{Project: "Acme", Code: "111111", TTLSeconds: 600})
		tr := &fakeTransport{fail: errors.New("timeout")}
		q := f.queue(tr, io.Discard)
		attempts := 0
		for len(f.queued(t)) > 0 && attempts < 100 {
			q.RunOnce(context.Background())
			attempts++
			f.clock.Advance(10 * time.Minute)
		}
		if n := len(f.queued(t)); n != 0 || attempts < 7 {
			t.Fatalf("queued %d after %d passes", n, attempts)
		}
	})
}

// TestQueueSurvivesRestart: a message queued before a restart goes out
// after it.
func TestQueueSurvivesRestart(t *testing.T) {
	t.Parallel()
	f := mustOpen(t)
	f.enqueue(t, mail.KindOTP, "a@example.com", store.MailContent{Project: "Acme", Code: "222222", TTLSeconds: 600})
	f.db.Close()
	db, _, err := store.Open(ctx, f.path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	f.db = db
	tr := &fakeTransport{}
	f.queue(tr, io.Discard).RunOnce(context.Background())
	if len(tr.sent) != 1 || !strings.Contains(tr.sent[0].Text, "222222") {
		t.Fatalf("sent %v", tr.sent)
	}
}

// TestQueueThroughSMTP runs the queue against the in-test SMTP server and
// reads the code back out of the received MIME message.
func TestQueueThroughSMTP(t *testing.T) {
	t.Parallel()
	srv := mailtest.NewServer(t, mailtest.Options{User: "u", Pass: "p"})
	f := mustOpen(t)
	f.enqueue(t, mail.KindOTP, "a@example.com", store.MailContent{Project: "Zürich Bank", Code: "975310", TTLSeconds: 600})
	s := mustSMTP(t, "smtp://u:p@"+srv.Addr, srv.CAFile(t))
	if err := f.queue(s, io.Discard).RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := srv.Messages()
	if len(got) != 1 {
		t.Fatalf("received %d", len(got))
	}
	subject, text, html := parseMessage(t, got[0].Data)
	if subject != "Your Zürich Bank sign-in code" || !strings.Contains(text, "975310") || !strings.Contains(html, "975310") {
		t.Fatalf("subject %q text %q", subject, text)
	}
}

// TestQueueConfigError: a wrong SMTP password fails every message alike.
// The messages stay queued and are retried on the usual schedule; the
// failure is logged as an error once a minute, not once per message, and
// ConfigError reports it until a send works again.
func TestQueueConfigError(t *testing.T) {
	t.Parallel()
	srv := mailtest.NewServer(t, mailtest.Options{User: "u", Pass: "right", Mechanisms: []string{mailtest.Login}})
	ca := srv.CAFile(t)
	f := mustOpen(t)
	for _, to := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		f.enqueue(t, mail.KindOTP, to, store.MailContent{Project: "Acme", Code: "314159", TTLSeconds: 600})
	}
	var logs testkit.Buffer
	q := f.queue(mustSMTP(t, "smtp://u:wrong-secret@"+srv.Addr, ca), &logs)
	q.Concurrency = 1
	ctx := context.Background()
	errorLines := func() int { return strings.Count(logs.String(), "level=ERROR msg=\"mail server configuration error") }

	for _, step := range []struct {
		advance  time.Duration
		attempts int
		lines    int
	}{
		{0, 1, 1},                 // three failures, one line
		{30 * time.Second, 2, 1},  // retried after 5 s; within the minute: no line
		{31 * time.Second, 3, 2},  // retried after 30 s; a minute later: a line
		{60 * time.Second, 4, 3},  // and so on, once a minute
		{125 * time.Second, 5, 4}, // 2 minutes after the 4th attempt
	} {
		f.clock.Advance(step.advance)
		if err := q.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		queued := f.queued(t)
		if len(queued) != 3 {
			t.Fatalf("after %v: %d queued, want all 3 kept", step.advance, len(queued))
		}
		for _, m := range queued {
			if m.Attempts != step.attempts || strings.Contains(m.LastError, "wrong-secret") {
				t.Fatalf("queued %+v, want attempt %d", m, step.attempts)
			}
		}
		if got := errorLines(); got != step.lines {
			t.Fatalf("after attempt %d: %d error lines, want %d:\n%s", step.attempts, got, step.lines, logs.String())
		}
		if err := q.ConfigError(); !mail.IsConfig(err) || strings.Contains(err.Error(), "wrong-secret") {
			t.Fatalf("ConfigError() = %v, want the configuration error without the password", err)
		}
	}
	if strings.Contains(logs.String(), "wrong-secret") || strings.Contains(logs.String(), "314159") || strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("logs hold a secret or a per-message warning:\n%s", logs.String())
	}
	if len(srv.Messages()) != 0 {
		t.Fatal("sent with a wrong password")
	}

	// Fixed settings: the queued messages go out and the error clears.
	q.Transport = mustSMTP(t, "smtp://u:right@"+srv.Addr, ca)
	f.clock.Advance(5 * time.Minute)
	if err := q.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n, queued := len(srv.Messages()), len(f.queued(t)); n != 3 || queued != 0 {
		t.Fatalf("after the fix: %d received, %d queued", n, queued)
	}
	if err := q.ConfigError(); err != nil {
		t.Fatalf("ConfigError() = %v after a successful send", err)
	}
	if !strings.Contains(logs.String(), "configuration error is resolved") {
		t.Fatalf("no line saying the error is resolved:\n%s", logs.String())
	}
}

func TestOutbox(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "latchkey.db.outbox")
	o := &mail.Outbox{Dir: dir}
	if err := o.Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) != 1 || !strings.HasSuffix(files[0], "-mail-1.eml") {
		t.Fatalf("files %v", files)
	}
	st, _ := os.Stat(files[0])
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	data, _ := os.ReadFile(files[0])
	subject, text, _ := parseMessage(t, data)
	if subject != "Your Acme sign-in code" || text != "code 123456" {
		t.Fatalf("subject %q text %q", subject, text)
	}
}

// parseMessage reads a message with the standard library's parsers and
// returns its decoded subject, text part and HTML part.
func parseMessage(t testing.TB, data []byte) (subject, text, html string) {
	t.Helper()
	m, err := netmail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, data)
	}
	subject, err = new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" {
		t.Fatalf("content type %q: %v", m.Header.Get("Content-Type"), err)
	}
	r := multipart.NewReader(m.Body, params["boundary"])
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(p) // NextPart decodes quoted-printable
		if err != nil {
			t.Fatal(err)
		}
		body := strings.ReplaceAll(string(b), "\r\n", "\n")
		switch ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); ct {
		case "text/plain":
			text = body
		case "text/html":
			html = body
		}
	}
	return subject, text, html
}

// TestQueueHold: a queue whose replica does not hold the mail lease
// sends nothing and leaves the queue as it is; once it holds it, it
// sends (replicas on one database: one sends each message).
func TestQueueHold(t *testing.T) {
	t.Parallel()
	f := mustOpen(t)
	f.enqueue(t, mail.KindOTP, "a@example.com", store.MailContent{Project: "Acme", Code: "482913", TTLSeconds: 600})
	tr := &fakeTransport{}
	held := false
	q := f.queue(tr, io.Discard)
	q.Hold = func() bool { return held }
	if err := q.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if len(tr.sent) != 0 || len(f.queued(t)) != 1 {
		t.Fatalf("without the lease: sent %d, queued %d; want 0 and 1", len(tr.sent), len(f.queued(t)))
	}
	held = true
	if err := q.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if len(tr.sent) != 1 || len(f.queued(t)) != 0 {
		t.Fatalf("with the lease: sent %d, queued %d; want 1 and 0", len(tr.sent), len(f.queued(t)))
	}
}
