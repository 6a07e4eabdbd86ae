package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestWebhookFirstDeliveryIsRegistration: as a receiver sees it with the
// server's own scheduler: register a webhook for every event, sign a new
// user up, and the first delivery is user.registered, the second
// session.created. Repeated with a fresh webhook and user each time.
func TestWebhookFirstDeliveryIsRegistration(t *testing.T) {
	t.Parallel()
	type hit struct{ path, typ, email string }
	hits := make(chan hit, 64)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Email string `json:"email"`
			} `json:"data"`
		}
		json.NewDecoder(r.Body).Decode(&ev)
		hits <- hit{r.URL.Path, ev.Type, ev.Data.Email}
	}))
	t.Cleanup(recv.Close)
	m, out := startMain(t, Config{})
	key := match(t, keyLine, out.String())
	c := client{t, "http://" + m.Addr()}
	for i := range 10 {
		path, addr := fmt.Sprintf("/hook%d", i), fmt.Sprintf("first%d@example.com", i)
		st, body := c.do("POST", "/api/v1/webhooks", key, map[string]any{"url": recv.URL + path})
		if st != 200 {
			t.Fatalf("create webhook: %d %v", st, body)
		}
		id := body["webhook"].(map[string]any)["id"].(string)
		if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": addr}); st != 200 {
			t.Fatalf("send: %d %v", st, body)
		}
		if st, body := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": addr, "code": codeFor(t, m.outboxDir(), addr)}); st != 200 {
			t.Fatalf("verify: %d %v", st, body)
		}
		var got []hit
		timeout := time.After(10 * time.Second)
		for len(got) < 2 {
			select {
			case h := <-hits:
				if h.path == path {
					got = append(got, h)
				}
			case <-timeout:
				t.Fatalf("sign-up %d: %d deliveries in 10 s, want 2", i, len(got))
			}
		}
		if got[0].typ != "user.registered" || got[0].email != addr || got[1].typ != "session.created" {
			t.Fatalf("sign-up %d: received %+v, want user.registered for %s, then session.created", i, got, addr)
		}
		if st, body := c.do("DELETE", "/api/v1/webhooks/"+id, key, nil); st != 200 {
			t.Fatalf("delete webhook: %d %v", st, body)
		}
	}
}

// codeFor waits for the background mail task to write addr's OTP
// message into the outbox directory and returns its code.
func codeFor(t *testing.T, dir, addr string) string {
	t.Helper()
	to := []byte("To: " + addr + "\r\n")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if bytes.Contains(b, to) {
				if code := regexp.MustCompile(`\b(\d{6})\b`).FindString(string(b)); code != "" {
					return code
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no message to %s in %s", addr, dir)
	return ""
}
