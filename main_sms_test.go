package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"latchkey/store/storetest"
)

// startWithEnv runs the server from flags and an environment, as the
// binary does, on a free port with data at path.
func startWithEnv(t *testing.T, args []string, env map[string]string) (*Main, client, string) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "latchkey.db")
	m := NewMain()
	var out strings.Builder
	m.Stdout = &out
	args = append([]string{"--addr", "127.0.0.1:0", "--data", data}, args...)
	if err := m.ParseFlags(args, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	m.Logger = discardLogger()
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, client{t, "http://" + m.Addr()}, match(t, keyLine, out.String())
}

// signIn signs addr in by email OTP through the outbox and returns the
// session token.
func signIn(t *testing.T, c client, key, data, addr string) string {
	t.Helper()
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": addr}); st != 200 {
		t.Fatalf("otp/send: %d %v", st, body)
	}
	st, body := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": addr, "code": waitForCode(t, data+".outbox")})
	if st != 200 {
		t.Fatalf("otp/verify: %d %v", st, body)
	}
	return body["token"].(string)
}

// TestTwilioFromEnvironment: --sms-provider twilio reads
// LATCHKEY_TWILIO_*; LATCHKEY_TWILIO_BASE_URL is scheme, host and port,
// and the client appends the Messages API path. Provider errors never
// carry the credentials, store nothing and use no send slot.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the serve flags name a data file.
func TestTwilioFromEnvironment(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	var mu sync.Mutex
	var path, user, pass string
	var form map[string][]string
	fail := false
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		path, form = r.URL.Path, r.PostForm
		user, pass, _ = r.BasicAuth()
		if fail {
			w.WriteHeader(401)
			w.Write([]byte(`{"code":20003,"message":"Authenticate ACenv tok-env-secret","status":401}`))
			return
		}
		w.WriteHeader(201)
		w.Write([]byte(`{"sid":"SM1"}`))
	}))
	defer fake.Close()
	env := map[string]string{"LATCHKEY_TWILIO_ACCOUNT_SID": "ACenv", "LATCHKEY_TWILIO_AUTH_TOKEN": "tok-env-secret",
		"LATCHKEY_TWILIO_FROM": "+15550001111", "LATCHKEY_TWILIO_BASE_URL": fake.URL}
	m, c, key := startWithEnv(t, []string{"--sms-provider", "twilio"}, env)
	tok := signIn(t, c, key, m.Config.Data, "tw@example.com")

	// A failing provider first: 502 without the credentials, nothing
	// stored, and the send does not count towards the send throttle.
	mu.Lock()
	fail = true
	mu.Unlock()
	st, body := c.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"})
	if st != 502 || body["code"] != "SEND_FAILED" || body["success"] != false {
		t.Fatalf("failing provider: %d %v", st, body)
	}
	if msg, _ := body["error"].(string); strings.Contains(msg, "tok-env-secret") || strings.Contains(msg, "ACenv") {
		t.Fatalf("credentials in the error: %q", msg)
	}
	if st, body := c.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": "123456"}); st != 401 || body["code"] != "VERIFICATION_FAILED" {
		t.Fatalf("sms/verify after a failed send: %d %v", st, body)
	}
	mu.Lock()
	fail = false
	mu.Unlock()

	if st, body := c.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+15551234567"}); st != 200 {
		t.Fatalf("sms/send: %d %v", st, body)
	}
	mu.Lock()
	if path != "/2010-04-01/Accounts/ACenv/Messages.json" || user != "ACenv" || pass != "tok-env-secret" {
		t.Fatalf("request %s as %s:%s", path, user, pass)
	}
	if form["To"][0] != "+15551234567" || form["From"][0] != "+15550001111" {
		t.Fatalf("form %v", form)
	}
	code := regexp.MustCompile(`\b\d{6}\b`).FindString(form["Body"][0])
	mu.Unlock()
	if st, body := c.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}); st != 200 || body["enrolled"] != true {
		t.Fatalf("sms/verify: %d %v", st, body)
	}
}

// TestTwilioSettingsChecked: a missing setting or a base URL with a path
// stops the start with a clear message.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the serve flags name a data file.
func TestTwilioSettingsChecked(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	full := map[string]string{"LATCHKEY_TWILIO_ACCOUNT_SID": "AC1", "LATCHKEY_TWILIO_AUTH_TOKEN": "tok", "LATCHKEY_TWILIO_FROM": "+15550001111"}
	for name, change := range map[string][2]string{
		"no sid":           {"LATCHKEY_TWILIO_ACCOUNT_SID", ""},
		"no token":         {"LATCHKEY_TWILIO_AUTH_TOKEN", ""},
		"no from":          {"LATCHKEY_TWILIO_FROM", ""},
		"base url path":    {"LATCHKEY_TWILIO_BASE_URL", "https://api.twilio.com/2010-04-01"},
		"base url scheme":  {"LATCHKEY_TWILIO_BASE_URL", "ftp://api.twilio.com"},
		"base url no host": {"LATCHKEY_TWILIO_BASE_URL", "https://"},
	} {
		t.Run(name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range full {
				env[k] = v
			}
			env[change[0]] = change[1]
			m := NewMain()
			m.Stdout = &strings.Builder{}
			data := filepath.Join(t.TempDir(), "latchkey.db")
			if err := m.ParseFlags([]string{"--addr", "127.0.0.1:0", "--data", data, "--sms-provider", "twilio"}, func(k string) string { return env[k] }); err != nil {
				t.Fatal(err)
			}
			m.Logger = discardLogger()
			err := m.Run(context.Background())
			if err == nil {
				m.Close()
				t.Fatal("started with bad Twilio settings")
			}
			if !strings.Contains(err.Error(), "LATCHKEY_TWILIO") {
				t.Fatalf("error %q does not name the setting", err)
			}
			if strings.Contains(err.Error(), "tok") {
				t.Fatalf("error %q holds the token", err)
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Fatalf("data file created before the settings were checked (%v)", err)
			}
		})
	}
}

// TestSMSLogProvider: --sms-provider log writes each message to
// <data>.outbox/*.sms.txt, and its code verifies.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the serve flags name a data file, the outbox beside it.
func TestSMSLogProvider(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	m, c, key := startWithEnv(t, []string{"--sms-provider", "log"}, nil)
	tok := signIn(t, c, key, m.Config.Data, "log@example.com")
	if st, body := c.do("POST", "/api/v1/sms/send", tok, map[string]any{"phone": "+447700900123"}); st != 200 {
		t.Fatalf("sms/send: %d %v", st, body)
	}
	msg := waitForFile(t, m.Config.Data+".outbox", ".sms.txt")
	if !strings.Contains(string(msg), "+447700900123") {
		t.Fatalf("message:\n%s", msg)
	}
	code := regexp.MustCompile(`\b\d{6}\b`).FindString(string(msg))
	if st, body := c.do("POST", "/api/v1/sms/verify", tok, map[string]any{"code": code}); st != 200 || body["enrolled"] != true {
		t.Fatalf("sms/verify: %d %v", st, body)
	}
}
