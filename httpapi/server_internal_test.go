package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"latchkey/internal/testkit"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"
)

func TestPanicIsInternalError(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "serves a panicking route without a store")
	var logs bytes.Buffer
	s := New(nil, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s.router.GET("/boom", func(http.ResponseWriter, *http.Request, httprouter.Params) {
		panic("secret internals")
	})
	hs := httptest.NewServer(s)
	defer hs.Close()
	res, err := http.Get(hs.URL + "/boom")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var body map[string]any
	json.Unmarshal(raw, &body)
	if res.StatusCode != 500 || body["code"] != "INTERNAL_ERROR" || body["success"] != false || body["error"] == "" {
		t.Fatalf("status=%d body=%s", res.StatusCode, raw)
	}
	if strings.Contains(string(raw), "secret internals") {
		t.Fatal("panic value leaked into the body")
	}
	if !strings.Contains(logs.String(), "secret internals") {
		t.Fatal("panic value missing from the log")
	}
}

func TestClientIP(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "parses client addresses")
	s := &Server{proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	cases := []struct {
		name, peer, xff, endUser string
		keyCall                  bool
		want                     string
		wantEndUser              bool // the address is the end user's (the risk engine keys on it)
	}{
		{"peer", "192.0.2.1:1234", "", "", false, "192.0.2.1", true},
		{"untrusted xff ignored", "192.0.2.1:1234", "198.51.100.9", "", false, "192.0.2.1", true},
		{"trusted xff", "10.0.0.2:1234", "198.51.100.9", "", false, "198.51.100.9", true},
		{"trusted chain", "10.0.0.2:1234", "198.51.100.9, 10.1.1.1", "", false, "198.51.100.9", true},
		{"spoofed left entry", "10.0.0.2:1234", "1.1.1.1, 198.51.100.9", "", false, "198.51.100.9", true},
		{"end-user header on key call", "192.0.2.1:1234", "", "203.0.113.5", true, "203.0.113.5", true},
		{"end-user header ignored elsewhere", "192.0.2.1:1234", "", "203.0.113.5", false, "192.0.2.1", true},
		{"bad end-user header", "192.0.2.1:1234", "", "nope", true, "192.0.2.1", false},
		{"key call without header: the app's backend", "192.0.2.1:1234", "", "", true, "192.0.2.1", false},
		{"key call through a trusted proxy: still the backend", "10.0.0.2:1234", "198.51.100.9", "", true, "198.51.100.9", false},
		{"key call from a trusted proxy without xff", "10.0.0.2:1234", "", "", true, "10.0.0.2", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.peer
			if c.xff != "" {
				r.Header.Set("X-Forwarded-For", c.xff)
			}
			if c.endUser != "" {
				r.Header.Set("X-End-User-IP", c.endUser)
			}
			got, endUser := s.clientIP(r, c.keyCall)
			if got != c.want || endUser != c.wantEndUser {
				t.Fatalf("clientIP=%q, %v, want %q, %v", got, endUser, c.want, c.wantEndUser)
			}
		})
	}
}
