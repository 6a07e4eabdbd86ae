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
	ts.DB.View(func(tx *store.Tx) error {
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
	ts := newTestServer(t)
	tok := str(t, ts.login("none@example.com").Body, "token")
	wantError(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"}), 502, "SEND_FAILED")
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": "123456"}), 401, "VERIFICATION_FAILED")
	wantError(t, ts.do("POST", "/api/v1/sms/send", ts.Key, map[string]any{"phone": "+15551234567"}), 401, "INVALID_SESSION")
}

func TestSMSLogProviderAndLimits(t *testing.T) {
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
	for _, ok := range []string{"+12345678", "+123456789012345"} {
		wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": ok}))
	}
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+447700900123"}))
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
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+447700900123"}))
	code = newestSMSCode(t, dir, 4)
	ts.Clock.Advance(10*time.Minute + time.Second)
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}), 401, "VERIFICATION_FAILED")
	// Expired is gone: none pending now.
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}), 401, "VERIFICATION_FAILED")
	// A fresh code within its lifetime succeeds.
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
		ts.DB.View(func(tx *store.Tx) error {
			f, err := tx.Factor(uid, "sms")
			if err != nil || f.Phone != step.phone || f.Status != "enrolled" {
				t.Fatalf("factor=%+v err=%v, want %s enrolled", f, err, step.phone)
			}
			return nil
		})
	}
}
