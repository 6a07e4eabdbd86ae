package auth_test

// The use-case tests (usecase_*_test.go) drive auth.Service directly,
// without HTTP: the wire is httpapi's tests' business. They use only
// auth's API and the store's public API (through the helpers below), so
// they can run against any store backend.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/internal/testkit"
	"latchkey/mail"
	"latchkey/store"
	"latchkey/store/storetest"
)

// testService is an auth.Service on a store of the backend the tests
// run on (storetest: by default a data file in t.TempDir()), with its
// clock, its SMS provider and the mail it queues in the test's hands,
// and the first-start project and test key.
type testService struct {
	*auth.Service
	t       testing.TB
	db      store.DB
	keys    *store.Keyring
	clock   *testkit.Clock
	sms     *smsOutbox
	project *store.Project
	apiKey  string
	// meta is the request behind every call unless a test passes its
	// own: an app backend's call without X-End-User-IP.
	meta auth.Meta
}

// ctx is the context of the tests' calls: never cancelled, so cleanups
// may write too.
var ctx = context.Background()

// start is the test clock's first reading.
var start = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// newTestService returns a fresh service; configure, when given, adjusts
// its Config first. At cleanup the service is closed, then the store (a
// data file is reopened and checked for consistency).
func newTestService(t testing.TB, configure ...func(*auth.Config)) *testService {
	t.Helper()
	return newTestServiceOver(t, storetest.Open(t), configure...)
}

// newTestServiceOver is newTestService over db, a store of the backend
// the tests run on (a test may wrap it).
func newTestServiceOver(t testing.TB, db store.DB, configure ...func(*auth.Config)) *testService {
	t.Helper()
	keys, err := store.NewKeyring(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	ts := &testService{t: t, db: db, keys: keys, clock: testkit.NewClock(start), sms: &smsOutbox{},
		meta: auth.Meta{IP: "198.51.100.7", UserAgent: "usecase-test"}}
	cfg := auth.Config{BaseURL: "https://auth.example.com", AdminToken: "adm_usecase_test_token_0123", Now: ts.clock.Now, SMS: ts.sms,
		BuiltInMail: builtInMail, SigningKey: testkit.SigningKey}
	for _, f := range configure {
		f(&cfg)
	}
	if ts.Service, err = auth.New(db, keys, cfg); err != nil {
		t.Fatal(err)
	}
	b, err := ts.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts.project, ts.apiKey = b.Project, b.APIKey
	// Before the store closes (storetest.Open's cleanup, registered
	// first, runs after this one).
	t.Cleanup(func() {
		if err := ts.Service.Close(); err != nil {
			t.Errorf("close service: %v", err)
		}
	})
	return ts
}

// smsOutbox is the SMS provider: it keeps what it is asked to send, and
// refuses every send while fail is set.
type smsOutbox struct {
	mu   sync.Mutex
	sent []sentSMS
	fail error
}

type sentSMS struct{ to, body string }

func (o *smsOutbox) SendSMS(_ context.Context, to, body string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return o.fail
	}
	o.sent = append(o.sent, sentSMS{to, body})
	return nil
}

func (o *smsOutbox) failing(err error) { o.mu.Lock(); o.fail = err; o.mu.Unlock() }

// last returns the last text sent and how many were.
func (o *smsOutbox) last() (sentSMS, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.sent) == 0 {
		return sentSMS{}, 0
	}
	return o.sent[len(o.sent)-1], len(o.sent)
}

// smsCode returns the code of the last text, which must have gone to phone.
func (ts *testService) smsCode(phone string) string {
	ts.t.Helper()
	m, n := ts.sms.last()
	if n == 0 || m.to != phone {
		ts.t.Fatalf("last SMS %+v (of %d), want one to %s", m, n, phone)
	}
	for i := 0; i+6 <= len(m.body); i++ {
		if isDigits(m.body[i:i+6]) && (i+6 == len(m.body) || m.body[i+6] < '0' || m.body[i+6] > '9') {
			return m.body[i : i+6]
		}
	}
	ts.t.Fatalf("no code in %q", m.body)
	return ""
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// sentMail is a message auth queued, unsealed as the mail queue would
// render it.
type sentMail struct {
	Kind    string
	To      string
	Content store.MailContent
}

// mailTo returns the messages queued for to, oldest first.
func (ts *testService) mailTo(to string) []sentMail {
	ts.t.Helper()
	var out []sentMail
	err := ts.db.View(ctx, func(tx store.Tx) error {
		return tx.RecentMail(func(m *store.Mail) bool {
			if m.To != to {
				return true
			}
			raw, err := ts.keys.Open(m.Body, store.MailAAD)
			if err != nil {
				ts.t.Fatalf("unseal mail: %v", err)
			}
			var c store.MailContent
			if err := json.Unmarshal(raw, &c); err != nil {
				ts.t.Fatal(err)
			}
			out = append([]sentMail{{Kind: m.Kind, To: m.To, Content: c}}, out...)
			return true
		})
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return out
}

// lastMail returns the newest message of kind queued for to.
func (ts *testService) lastMail(to, kind string) sentMail {
	ts.t.Helper()
	ms := ts.mailTo(to)
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Kind == kind {
			return ms[i]
		}
	}
	ts.t.Fatalf("no %s mail to %s among %d", kind, to, len(ms))
	return sentMail{}
}

// otpCode returns the code of the newest OTP mail to addr.
func (ts *testService) otpCode(addr string) string {
	ts.t.Helper()
	return ts.lastMail(addr, "otp").Content.Code
}

// linkToken returns the token of the newest magic link mailed to addr.
func (ts *testService) linkToken(addr string) string {
	ts.t.Helper()
	u, err := url.Parse(ts.lastMail(addr, "magic").Content.Link)
	if err != nil {
		ts.t.Fatal(err)
	}
	return u.Query().Get("token")
}

// signIn signs addr in by email code and returns the login and its
// session principal.
func (ts *testService) signIn(addr string) (*auth.Login, *auth.Principal) {
	ts.t.Helper()
	if err := ts.SendOTP(ctx, ts.project, addr, ts.meta); err != nil {
		ts.t.Fatalf("send code to %s: %v", addr, err)
	}
	l, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: ts.otpCode(addr)}, ts.meta)
	if err != nil {
		ts.t.Fatalf("sign in %s: %v", addr, err)
	}
	ts.clock.Advance(auth.SendInterval) // the next send to addr is allowed
	return l, ts.principal(l)
}

// principal authenticates the login's token as a user call does.
func (ts *testService) principal(l *auth.Login) *auth.Principal {
	ts.t.Helper()
	pr, err := ts.AuthenticateSession(ctx, "Bearer "+l.Token)
	if err != nil {
		ts.t.Fatalf("session of a fresh login: %v", err)
	}
	return pr
}

// events returns the project's authentication events, oldest first.
func (ts *testService) events() []auth.EventView {
	ts.t.Helper()
	page, err := ts.Events(ctx, auth.EventQuery{ProjectID: ts.project.ID, Limit: auth.MaxPageSize})
	if err != nil {
		ts.t.Fatal(err)
	}
	out := make([]auth.EventView, len(page.Events))
	for i, e := range page.Events {
		out[len(out)-1-i] = e
	}
	return out
}

// lastEvent returns the project's newest authentication event.
func (ts *testService) lastEvent() auth.EventView {
	ts.t.Helper()
	evs := ts.events()
	if len(evs) == 0 {
		ts.t.Fatal("no events")
	}
	return evs[len(evs)-1]
}

// wantEvent checks an event's method, action and outcome (category ""
// for a success) and whether it names a user.
func wantEvent(t testing.TB, e auth.EventView, method, action, category string, namesUser bool) {
	t.Helper()
	got := ""
	if e.FailureCode != nil {
		got = *e.FailureCode
	}
	if e.Method != method || e.Action != action || e.Success != (category == "") || got != category || (e.UserID != nil) != namesUser {
		t.Fatalf("event %s/%s success=%v failure=%q user=%v, want %s/%s failure=%q user=%v",
			e.Method, e.Action, e.Success, got, e.UserID != nil, method, action, category, namesUser)
	}
}

// outbox returns the webhook events of typ waiting in the outbox, in
// order, decoded.
func (ts *testService) outbox(typ string) []map[string]string {
	ts.t.Helper()
	var out []map[string]string
	err := ts.db.View(ctx, func(tx store.Tx) error {
		evs, err := tx.EventsAfter(0, 1<<20)
		for _, e := range evs {
			if e.Type != typ {
				continue
			}
			var data map[string]string
			if err := json.Unmarshal(e.Data, &data); err != nil {
				return err
			}
			out = append(out, data)
		}
		return err
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return out
}

// user returns the project's user with addr, or nil.
func (ts *testService) user(addr string) *store.User {
	ts.t.Helper()
	var u *store.User
	err := ts.db.View(ctx, func(tx store.Tx) error {
		var err error
		u, err = tx.UserByEmail(ts.project.ID, addr)
		if errors.Is(err, store.ErrNotFound) {
			u, err = nil, nil
		}
		return err
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return u
}

// wantErr checks that err is want (or a copy of it: another message, a
// wait) recorded under category; category "" skips that check.
func wantErr(t testing.TB, err error, want *auth.Error, category string) *auth.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", want.Code)
	}
	e := auth.AsError(err)
	if !errors.Is(err, want) || (category != "" && e.Category != category) {
		t.Fatalf("err=%v (category %q), want %s (category %q)", err, e.Category, want.Code, category)
	}
	return e
}

// ok fails the test on err.
func ok(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// builtInMail is the service's renderer of the built-in wording: package
// mail's, as the server's.
func builtInMail(kind, to string, c store.MailContent) (auth.Rendered, error) {
	m, err := mail.Render(kind, to, "", c)
	if err != nil {
		return auth.Rendered{}, err
	}
	return auth.Rendered{Subject: m.Subject, Text: m.Text, HTML: m.HTML}, nil
}
