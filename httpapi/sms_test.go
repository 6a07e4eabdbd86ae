package httpapi_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/sms"
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
	tok := str(t, ts.login("sms@example.com").Body, "token")

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

	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": wrong}), 401, "VERIFICATION_FAILED")
	r := ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code})
	wantOK(t, r)
	if r.Body["enrolled"] != true {
		t.Fatalf("body=%s", r.Raw)
	}
	// Reused code fails.
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}), 401, "VERIFICATION_FAILED")
	if types := ts.outbox(); types[len(types)-1] != "sms.enrolled" {
		t.Fatalf("outbox=%v", types)
	}

	// A provider failure is 502 and leaks no credentials; no code is stored.
	fake.fail = true
	r = ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234568"})
	wantError(t, r, 502, "SEND_FAILED")
	if strings.Contains(string(r.Raw), "secret-token") || strings.Contains(string(r.Raw), "AC123") {
		t.Fatalf("credentials in error: %s", r.Raw)
	}
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}), 401, "VERIFICATION_FAILED")
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
	for _, bad := range []any{"15551234567", "+1555", "+1234567890123456", "+1555abc4567", "+0123456789", "", 15551234567} {
		wantError(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": bad}), 400, "VALIDATION_ERROR")
	}
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+447700900123"}))
	files, _ := filepath.Glob(filepath.Join(dir, "*.sms.txt"))
	if len(files) != 1 {
		t.Fatalf("%d sms files, want 1", len(files))
	}
	data, _ := os.ReadFile(files[0])
	code := smsCode.FindString(string(data))
	wrong := "000000"
	if code == wrong {
		wrong = "111111"
	}
	for i := 0; i < 5; i++ {
		wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": wrong}), 401, "VERIFICATION_FAILED")
	}
	// Locked after 5 tries, even with the right code.
	wantError(t, ts.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}), 401, "VERIFICATION_FAILED")
	// Expiry.
	wantOK(t, ts.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+447700900123"}))
	ts.Clock.Advance(10*time.Minute + time.Second)
	files, _ = filepath.Glob(filepath.Join(dir, "*.sms.txt"))
	if len(files) != 2 {
		t.Fatalf("%d sms files, want 2", len(files))
	}
	cats := eventCategories(ts)
	if cats["rate_limited"] != 1 || cats["invalid_code"] < 5 {
		t.Fatalf("categories=%v", cats)
	}
}
