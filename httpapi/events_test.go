package httpapi_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"latchkey/httpapi"
)

// eventFields is the admin API's event shape (docs/api.md,
// "GET /api/v1/admin/events").
var eventFields = []string{"id", "projectId", "userId", "email", "method", "action", "success", "failureCode", "ip", "userAgent", "createdAt"}

// events returns the admin API's events for query.
func (ts *testServer) events(query string) []map[string]any {
	ts.t.Helper()
	r := ts.admin("GET", "/api/v1/admin/events"+query, nil)
	wantOK(ts.t, r)
	var out []map[string]any
	for _, e := range r.Body["events"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

// TestEventsAPI: events have the decided shape, come newest first, and
// filter by projectId, failureCode and limit (default 100).
func TestEventsAPI(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 10000}))
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	otherID := str(t, obj(t, other.Body, "project"), "id")
	otherKey := ts.createKey(map[string]any{"projectId": otherID, "mode": "test"})

	uid := str(t, ts.login("ev@example.com").Body, "userId") // send + verify
	ts.Clock.Advance(time.Second)
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "ev@example.com", "code": "123456"}), 401, "INVALID_CODE")
	ts.Clock.Advance(time.Second)
	wantError(t, ts.do("POST", "/api/v1/otp/verify", otherKey, map[string]any{"email": "o@example.com", "code": "123456"}), 401, "INVALID_CODE")
	ts.Clock.Advance(time.Second)
	wantError(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "not-an-address"}), 400, "VALIDATION_ERROR")

	all := ts.events("")
	if len(all) != 5 {
		t.Fatalf("%d events, want 5", len(all))
	}
	for _, e := range all {
		for _, f := range eventFields {
			if _, ok := e[f]; !ok {
				t.Fatalf("event lacks %q: %v", f, e)
			}
		}
		if len(e) != len(eventFields) {
			t.Fatalf("event has extra fields: %v", e)
		}
	}
	// Newest first.
	for i := 1; i < len(all); i++ {
		if all[i-1]["createdAt"].(string) < all[i]["createdAt"].(string) {
			t.Fatalf("events out of order: %v before %v", all[i-1]["createdAt"], all[i]["createdAt"])
		}
	}
	newest := all[0]
	if newest["method"] != "email_otp" || newest["action"] != "send" || newest["success"] != false ||
		newest["failureCode"] != "validation_error" || newest["userId"] != nil || newest["ip"] != "127.0.0.1" {
		t.Fatalf("newest event %v", newest)
	}
	if ok := all[len(all)-1]; ok["success"] != true || ok["failureCode"] != nil || ok["action"] != "send" || ok["email"] != "ev@example.com" {
		t.Fatalf("oldest event %v", ok)
	}
	login := all[len(all)-2]
	if login["userId"] != uid || login["action"] != "verify" || login["projectId"] != ts.Project.ID || !strings.HasPrefix(login["userAgent"].(string), "Go-http-client") {
		t.Fatalf("login event %v", login)
	}
	if _, err := time.Parse(time.RFC3339, login["createdAt"].(string)); err != nil {
		t.Fatalf("createdAt %v: %v", login["createdAt"], err)
	}

	if got := ts.events("?projectId=" + otherID); len(got) != 1 || got[0]["projectId"] != otherID {
		t.Fatalf("projectId filter: %v", got)
	}
	got := ts.events("?projectId=" + ts.Project.ID + "&failureCode=invalid_code")
	if len(got) != 1 || got[0]["email"] != "ev@example.com" || got[0]["failureCode"] != "invalid_code" {
		t.Fatalf("projectId+failureCode filter: %v", got)
	}
	if got := ts.events("?failureCode=invalid_code"); len(got) != 2 {
		t.Fatalf("failureCode filter: %d events, want 2", len(got))
	}
	if got := ts.events("?limit=2"); len(got) != 2 || got[0]["id"] != all[0]["id"] || got[1]["id"] != all[1]["id"] {
		t.Fatalf("limit=2: %v", got)
	}
	if got := ts.events("?projectId=nope"); len(got) != 0 {
		t.Fatalf("unknown project: %v", got)
	}
	for _, bad := range []string{"?limit=0", "?limit=-1", "?limit=x"} {
		wantError(t, ts.admin("GET", "/api/v1/admin/events"+bad, nil), 400, "VALIDATION_ERROR")
	}
	wantError(t, ts.do("GET", "/api/v1/admin/events", ts.Key, nil), 401, "UNAUTHORIZED")

	// Default limit 100 (the failures come from 100 clients: each may
	// store 10 a minute).
	for i := 0; i < 100; i++ {
		ts.fromIP(fmt.Sprintf("198.51.100.%d", i), "POST", "/api/v1/otp/send", `{"email":"x"}`)
	}
	if got := ts.events(""); len(got) != 100 {
		t.Fatalf("default limit: %d events, want 100", len(got))
	}
	if got := ts.events("?limit=1000"); len(got) != 105 {
		t.Fatalf("limit=1000: %d events, want 105", len(got))
	}
}

// TestEndUserIP: events and the risk engine see X-End-User-IP on API-key
// calls, the peer address on other calls, and X-Forwarded-For only from
// trusted proxies.
func TestEndUserIP(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("ip@example.com").Body, "token")
	send := func(base, path, auth string, hdr map[string]string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(`{"email":"ip@example.com","code":"000000"}`))
		req.Header.Set("Authorization", "Bearer "+auth)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		ts.send(req)
	}
	lastIP := func() any { return ts.events("?limit=1")[0]["ip"] }

	cases := []struct {
		name, path string
		session    bool
		hdr        map[string]string
		want       string
	}{
		{"key call, end-user header", "/api/v1/otp/verify", false, map[string]string{"X-End-User-IP": "203.0.113.5"}, "203.0.113.5"},
		{"key call, IPv6 end-user header", "/api/v1/otp/verify", false, map[string]string{"X-End-User-IP": "2001:db8::7"}, "2001:db8::7"},
		{"key call, mapped IPv4", "/api/v1/otp/verify", false, map[string]string{"X-End-User-IP": "::ffff:203.0.113.6"}, "203.0.113.6"},
		{"key call, junk header", "/api/v1/otp/verify", false, map[string]string{"X-End-User-IP": "nope"}, "127.0.0.1"},
		{"key call, untrusted X-Forwarded-For", "/api/v1/otp/verify", false, map[string]string{"X-Forwarded-For": "198.51.100.9"}, "127.0.0.1"},
		{"session call ignores end-user header", "/api/v1/backup-codes/generate", true, map[string]string{"X-End-User-IP": "203.0.113.5"}, "127.0.0.1"},
		{"session call, untrusted X-Forwarded-For", "/api/v1/backup-codes/generate", true, map[string]string{"X-Forwarded-For": "198.51.100.9"}, "127.0.0.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			auth := ts.Key
			if c.session {
				auth = tok
			}
			send(ts.URL, c.path, auth, c.hdr)
			if got := lastIP(); got != c.want {
				t.Fatalf("ip=%v, want %s", got, c.want)
			}
		})
	}

	// The same service behind a trusted proxy (loopback): X-Forwarded-For
	// is believed, from the right, skipping trusted hops; X-End-User-IP
	// still wins on key calls.
	proxied := httptest.NewServer(specChecked(t, httpapi.New(ts.Svc, httpapi.Config{Webhooks: ts.Hooks,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}})))
	defer proxied.Close()
	for _, c := range []struct {
		name, path string
		session    bool
		hdr        map[string]string
		want       string
	}{
		{"session call via proxy", "/api/v1/backup-codes/generate", true, map[string]string{"X-Forwarded-For": "198.51.100.9"}, "198.51.100.9"},
		{"spoofed left entry", "/api/v1/otp/verify", false, map[string]string{"X-Forwarded-For": "1.1.1.1, 198.51.100.10, 10.1.2.3"}, "198.51.100.10"},
		{"end-user header wins on key calls", "/api/v1/otp/verify", false, map[string]string{"X-Forwarded-For": "198.51.100.9", "X-End-User-IP": "203.0.113.9"}, "203.0.113.9"},
		{"no header via proxy", "/api/v1/otp/verify", false, nil, "127.0.0.1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			auth := ts.Key
			if c.session {
				auth = tok
			}
			send(proxied.URL, c.path, auth, c.hdr)
			if got := lastIP(); got != c.want {
				t.Fatalf("ip=%v, want %s", got, c.want)
			}
		})
	}
}
