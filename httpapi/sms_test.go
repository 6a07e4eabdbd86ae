package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/sms"
	"latchkey/store"
)

// fakeTwilio is a local Messages API that records what it receives.
type fakeTwilio struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	forms    []map[string]string
	fail     bool
}

func newFakeTwilio(t *testing.T) *fakeTwilio {
	f := &fakeTwilio{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.requests = append(f.requests, r)
		f.forms = append(f.forms, map[string]string{"To": r.PostForm.Get("To"), "From": r.PostForm.Get("From"), "Body": r.PostForm.Get("Body")})
		if f.fail {
			w.WriteHeader(400)
			w.Write([]byte(`{"code": 21211, "message": "The 'To' number is not valid.", "status": 400}`))
			return
		}
		w.WriteHeader(201)
		w.Write([]byte(`{"sid":"SM123","status":"queued"}`))
	}))
	t.Cleanup(f.Close)
	return f
}

var smsCode = regexp.MustCompile(`\b(\d{6})\b`)

func TestSMSTwilio(t *testing.T) {
	t.Parallel()
	fake := newFakeTwilio(t)
	tw, err := sms.NewTwilio("AC123", "secret-token", "+15550001111", fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *auth.Config) { c.SMS = tw })
	login := ts.login("sms@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")

	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"}))
	if len(fake.requests) != 1 {
		t.Fatalf("twilio got %d requests", len(fake.requests))
	}
	req, form := fake.requests[0], fake.forms[0]
	if req.URL.Path != "/2010-04-01/Accounts/AC123/Messages.json" || req.Method != "POST" {
		t.Fatalf("request %s %s", req.Method, req.URL.Path)
	}
	if u, p, ok := req.BasicAuth(); !ok || u != "AC123" || p != "secret-token" {
		t.Fatalf("basic auth %q %q %v", u, p, ok)
	}
	if form["To"] != "+15551234567" || form["From"] != "+15550001111" || !strings.Contains(form["Body"], "default") {
		t.Fatalf("form=%v", form)
	}
	code := smsCode.FindString(form["Body"])

	// A provider failure is 502 and leaks no credentials; it stores no
	// code, so the pending one stays good.
	ts.Clock.Advance(31 * time.Second) // past the send throttle
	fake.mu.Lock()
	fake.fail = true
	fake.mu.Unlock()
	r := ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234568"})
	wantError(t, r, 502, "SEND_FAILED")
	if strings.Contains(string(r.Raw), "secret-token") || strings.Contains(string(r.Raw), "AC123") {
		t.Fatalf("credentials in error: %s", r.Raw)
	}
	if len(fake.requests) != 2 {
		t.Fatalf("twilio got %d requests, want 2", len(fake.requests))
	}

	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": wrong}), 401, "VERIFICATION_FAILED")
	r = ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code})
	wantOK(t, r)
	if r.Body["enrolled"] != true {
		t.Fatalf("body=%s", r.Raw)
	}
	// Reused code fails.
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}), 401, "VERIFICATION_FAILED")
	if types := ts.outbox(); types[len(types)-1] != "sms.enrolled" {
		t.Fatalf("outbox=%v", types)
	}
	var phone string
	ts.DB.View(ctx, func(tx store.Tx) error {
		f, err := tx.Factor(uid, "sms")
		if err != nil {
			t.Fatal(err)
		}
		phone = f.Phone
		return nil
	})
	if phone != "+15551234567" {
		t.Fatalf("SMS factor phone=%q", phone)
	}
}

func TestSMSDefaultProviderFails(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("none@example.com").Body, "token")
	wantError(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"}), 502, "SEND_FAILED")
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": "123456"}), 401, "VERIFICATION_FAILED")
	wantError(t, ts.do("POST", "/api/v1/sms/send", ts.Key, map[string]any{"phone": "+15551234567"}), 401, "INVALID_SESSION")
}

func TestSMSLogProviderAndLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := newTestServer(t, func(c *auth.Config) { c.SMS = &sms.Log{Logger: slog.New(slog.DiscardHandler), Dir: dir} })
	tok := str(t, ts.login("log@example.com").Body, "token")
	for _, bad := range []any{"15551234567", "+1555", "+1234567", "+1234567890123456", "+1555abc4567", "+1 555 123 4567",
		" +15551234567", "+15551234567\n", "+4477009001２３", "", nil, 15551234567} {
		wantError(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": bad}), 400, "VALIDATION_ERROR")
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "*.sms.txt")); len(files) != 0 {
		t.Fatalf("%d messages sent for invalid numbers", len(files))
	}
	// The E.164 edges: 8 and 15 digits.
	for _, ok := range []string{"+12345678", "+123456789012345", "+447700900123"} {
		wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": ok}))
		ts.Clock.Advance(31 * time.Second) // past the send throttle
	}
	code := newestSMSCode(t, dir, 3)
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	// Malformed codes are 400 and use none of the 5 tries.
	for _, bad := range []any{"", "12345a", "١٢٣٤٥٦", " 123456", strings.Repeat("1", 17), 123456, nil} {
		wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": bad}), 400, "VALIDATION_ERROR")
	}
	for i := 0; i < 5; i++ {
		wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": wrong}), 401, "VERIFICATION_FAILED")
	}
	// Locked after 5 tries, even with the right code.
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}), 401, "VERIFICATION_FAILED")
	// A new code ends the lock; it lives 10 minutes.
	ts.Clock.Advance(31 * time.Second)
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+447700900123"}))
	code = newestSMSCode(t, dir, 4)
	ts.Clock.Advance(10*time.Minute + time.Second)
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}), 401, "VERIFICATION_FAILED")
	// Expired is gone: none pending now.
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}), 401, "VERIFICATION_FAILED")
	// A fresh code within its lifetime succeeds. (The session is more than
	// 10 minutes old: texting a phone that is not enrolled needs a fresh
	// one.)
	tok = str(t, ts.login("log@example.com").Body, "token")
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+447700900123"}))
	code = newestSMSCode(t, dir, 5)
	ts.Clock.Advance(9 * time.Minute)
	r := ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code})
	wantOK(t, r)
	if r.Body["enrolled"] != true {
		t.Fatalf("body=%s", r.Raw)
	}
	// Bodies that are not the request's JSON shape (a number for a string)
	// fail in decoding, before the use case, and are not events.
	cats := eventCategories(ts)
	if cats["rate_limited"] != 1 || cats["invalid_code"] != 6 || cats["expired"] != 1 || cats["validation_error"] != 6+11 {
		t.Fatalf("categories=%v", cats)
	}
}

// newestSMSCode returns the code of the newest of want messages in dir.
func newestSMSCode(t *testing.T, dir string, want int) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.sms.txt"))
	if len(files) != want {
		t.Fatalf("%d sms files, want %d", len(files), want)
	}
	sort.Strings(files)
	data, err := os.ReadFile(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	code := smsCode.FindString(string(data))
	if code == "" {
		t.Fatalf("no code in %s", data)
	}
	return code
}

// TestSMSEnrolledEvent: sms.enrolled is emitted when the SMS factor
// becomes enrolled and when its phone changes, not on a step-up check of
// the enrolled phone (which still answers enrolled:true).
func TestSMSEnrolledEvent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ts := newTestServer(t, func(c *auth.Config) { c.SMS = &sms.Log{Logger: slog.New(slog.DiscardHandler), Dir: dir} })
	login := ts.login("steps@example.com")
	tok, uid := str(t, login.Body, "token"), str(t, login.Body, "userId")
	sent := 0
	for _, step := range []struct {
		phone  string
		events int
	}{
		{"+15551234567", 1},  // enrolled
		{"+15551234567", 1},  // step-up on the same phone
		{"+447700900123", 2}, // phone changed
		{"+447700900123", 2},
	} {
		ts.Clock.Advance(31 * time.Second) // past the send throttle
		wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": step.phone}))
		sent++
		r := ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": newestSMSCode(t, dir, sent)})
		wantOK(t, r)
		if r.Body["enrolled"] != true {
			t.Fatalf("body=%s", r.Raw)
		}
		if n := ts.countOutbox("sms.enrolled"); n != step.events {
			t.Fatalf("after verify %d (%s): %d sms.enrolled events, want %d", sent, step.phone, n, step.events)
		}
		ts.DB.View(ctx, func(tx store.Tx) error {
			f, err := tx.Factor(uid, "sms")
			if err != nil || f.Phone != step.phone || f.Status != "enrolled" {
				t.Fatalf("factor=%+v err=%v, want %s enrolled", f, err, step.phone)
			}
			return nil
		})
	}
}

// requestCount returns how many messages the fake provider was asked to send.
func (f *fakeTwilio) requestCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeTwilio) setFail(fail bool) {
	f.mu.Lock()
	f.fail = fail
	f.mu.Unlock()
}

// TestSMSSendThrottle: sms/send allows one send per 30 s and ten per hour
// per user, counting only sends the provider accepted; over that it is
// 429 TOO_MANY_REQUESTS with Retry-After, and the provider is not called.
// Concurrent sends cannot slip past it together. Another user has their
// own budget.
func TestSMSSendThrottle(t *testing.T) {
	t.Parallel()
	fake := newFakeTwilio(t)
	tw, err := sms.NewTwilio("AC123", "secret-token", "+15550001111", fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *auth.Config) { c.SMS = tw })
	tok := str(t, ts.login("pump@example.com").Body, "token")
	other := str(t, ts.login("other@example.com").Body, "token")
	send := func(tok string) *response {
		return ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"})
	}

	wantOK(t, send(tok)) // at 0 s
	r := send(tok)
	wantRetryAfter(t, r, "TOO_MANY_REQUESTS", "30")
	if !strings.Contains(r.Body["error"].(string), "SMS") {
		t.Fatalf("error=%q, want it to name SMS", r.Body["error"])
	}
	ts.Clock.Advance(30 * time.Second)
	// Failed sends store nothing and do not count.
	fake.setFail(true)
	for i := 0; i < 12; i++ {
		wantError(t, send(tok), 502, "SEND_FAILED")
	}
	fake.setFail(false)
	wantOK(t, send(tok)) // at 30 s
	for i := 0; i < 8; i++ {
		ts.Clock.Advance(30 * time.Second)
		wantOK(t, send(tok)) // at 60 … 270 s: ten accepted in the hour
	}
	ts.Clock.Advance(30 * time.Second)
	wantRetryAfter(t, send(tok), "TOO_MANY_REQUESTS", "3300")
	if n := fake.requestCount(); n != 1+12+1+8 {
		t.Fatalf("provider asked %d times, want %d (refused sends must not reach it)", n, 1+12+1+8)
	}
	if cats := eventCategories(ts); cats["rate_limited"] != 2 {
		t.Fatalf("categories=%v, want the two refusals as rate_limited", cats)
	}

	// Another user: its own budget. Twenty concurrent sends: one goes out.
	before := fake.requestCount()
	var wg sync.WaitGroup
	statuses := make([]int, 20)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = send(other).Status
		}()
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	if counts[200] != 1 || counts[429] != 19 || fake.requestCount() != before+1 {
		t.Fatalf("concurrent sends: statuses %v, provider asked %d times; want one 200, nineteen 429, one message", counts, fake.requestCount()-before)
	}
	// The first user is still limited until the first send leaves the
	// hour. (From a fresh session: texting a phone that is not enrolled
	// needs a sign-in within the last 10 minutes; login takes 31 s.)
	ts.Clock.Advance(3299*time.Second - 31*time.Second)
	tok = str(t, ts.login("pump@example.com").Body, "token")
	wantRetryAfter(t, send(tok), "TOO_MANY_REQUESTS", "1")
	ts.Clock.Advance(time.Second)
	wantOK(t, send(tok))
}

// TestSMSDefaultProviderNeverThrottled: with provider "none" no send is
// accepted, so none counts: every send stays 502 SEND_FAILED.
func TestSMSDefaultProviderNeverThrottled(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("none@example.com").Body, "token")
	for i := 0; i < 12; i++ {
		wantError(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"}), 502, "SEND_FAILED")
	}
}
