package httpapi_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAPIKeyErrors(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	revoked := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "test"})
	wantOK(t, ts.admin("POST", "/api/v1/admin/keys/"+revoked[:16]+"/revoke", nil))
	expired := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live", "expiresAt": ts.Clock.Now().Add(-time.Hour).Format(time.RFC3339)})
	projectless := ts.createKey(map[string]any{"projectId": nil, "mode": "test"})
	// A valid prefix with the wrong secret.
	mismatch := ts.Key[:17] + strings.Repeat("x", 32)

	cases := []struct {
		name   string
		header string
		status int
		code   string
	}{
		{"no header", "", 401, "MISSING_API_KEY"},
		{"not bearer", "Basic " + ts.Key, 401, "MISSING_API_KEY"},
		{"bearer without token", "Bearer ", 401, "MISSING_API_KEY"},
		{"bearer alone", "Bearer", 401, "MISSING_API_KEY"},
		{"bare key", ts.Key, 401, "MISSING_API_KEY"},
		{"other scheme", "Token " + ts.Key, 401, "MISSING_API_KEY"},
		{"unknown mode prefix", "Bearer sk_prod_abcdefgh_" + strings.Repeat("a", 32), 401, "INVALID_FORMAT"},
		{"19 characters", "Bearer " + ts.Key[:19], 401, "INVALID_FORMAT"},
		{"20 characters of a real key", "Bearer " + ts.Key[:20], 401, "HASH_MISMATCH"},
		{"no prefix", "Bearer pk_test_abcdefgh_" + strings.Repeat("a", 32), 401, "INVALID_FORMAT"},
		{"too short", "Bearer sk_test_abc", 401, "INVALID_FORMAT"},
		{"jwt where a key belongs", "Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", 401, "INVALID_FORMAT"},
		{"over-long key, unknown prefix", "Bearer sk_test_" + strings.Repeat("a", 5000), 401, "API_KEY_NOT_FOUND"},
		{"real key with a 5,000-character tail", "Bearer " + ts.Key + strings.Repeat("a", 5000), 401, "HASH_MISMATCH"},
		{"real key plus one character", "Bearer " + ts.Key + "a", 401, "HASH_MISMATCH"},
		{"unknown prefix", "Bearer sk_test_ZZZZZZZZ_" + strings.Repeat("a", 32), 401, "API_KEY_NOT_FOUND"},
		{"hash mismatch", "Bearer " + mismatch, 401, "HASH_MISMATCH"},
		{"revoked", "Bearer " + revoked, 401, "API_KEY_REVOKED"},
		{"expired", "Bearer " + expired, 401, "API_KEY_EXPIRED"},
		{"no project", "Bearer " + projectless, 401, "INVALID_API_KEY"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", ts.URL+"/api/v1/otp/send", strings.NewReader(`{"email":"a@example.com"}`))
			if c.header != "" {
				req.Header.Set("Authorization", c.header)
			}
			wantError(t, ts.send(req), c.status, c.code)
		})
	}
	// Bad keys changed nothing: no code was sent.
	evs := ts.admin("GET", "/api/v1/admin/events", nil)
	wantOK(t, evs)
	if n := len(evs.Body["events"].([]any)); n != 0 {
		t.Fatalf("events=%d after rejected keys, want 0", n)
	}
}

func TestAPIKeyHashCheckedBeforeState(t *testing.T) {
	t.Parallel()
	// Someone who knows only a revoked key's prefix learns nothing.
	ts := newTestServer(t)
	k := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "test"})
	wantOK(t, ts.admin("POST", "/api/v1/admin/keys/"+k[:16]+"/revoke", nil))
	wantError(t, ts.do("GET", "/api/v1/me", k[:17]+strings.Repeat("Q", 32), nil), 401, "HASH_MISMATCH")
}

func TestAPIKeyInternalError(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.breakStore()
	wantError(t, ts.do("GET", "/api/v1/me", "sk_test_ZZZZZZZZ_"+strings.Repeat("a", 32), nil), 401, "INTERNAL_ERROR")
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	var last *response
	for i := 0; i < 100; i++ {
		last = ts.do("GET", "/api/v1/me", ts.Key, nil)
		wantOK(t, last)
	}
	if got := last.Header.Get("X-RateLimit-Limit"); got != "100" {
		t.Fatalf("X-RateLimit-Limit=%q, want 100", got)
	}
	if got := last.Header.Get("X-RateLimit-Remaining"); got != "0" {
		t.Fatalf("X-RateLimit-Remaining=%q, want 0", got)
	}
	r := ts.do("GET", "/api/v1/me", ts.Key, nil)
	wantError(t, r, 429, "RATE_LIMIT_EXCEEDED")
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 60 {
		t.Fatalf("Retry-After=%q, want 1..60", r.Header.Get("Retry-After"))
	}
	reset, _ := strconv.ParseInt(r.Header.Get("X-RateLimit-Reset"), 10, 64)
	if want := ts.Clock.Now().Unix() + 60; reset != want {
		t.Fatalf("X-RateLimit-Reset=%d, want %d", reset, want)
	}
	// Another key of the same project has its own budget.
	other := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "test"})
	wantOK(t, ts.do("GET", "/api/v1/me", other, nil))
	// Bad credentials for the prefix do not spend the budget, and a
	// rolling minute later the key works again.
	ts.Clock.Advance(59 * time.Second)
	wantError(t, ts.do("GET", "/api/v1/me", ts.Key, nil), 429, "RATE_LIMIT_EXCEEDED")
	ts.Clock.Advance(time.Second)
	wantOK(t, ts.do("GET", "/api/v1/me", ts.Key, nil))
}

func TestRateLimitPerProjectSetting(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 3}))
	for i := 0; i < 3; i++ {
		wantOK(t, ts.do("GET", "/api/v1/me", ts.Key, nil))
	}
	wantError(t, ts.do("GET", "/api/v1/me", ts.Key, nil), 429, "RATE_LIMIT_EXCEEDED")
}

func TestMeWithAPIKey(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.do("GET", "/api/v1/me", ts.Key, nil)
	wantOK(t, r)
	if got := str(t, r.Body, "companyId"); got != ts.Project.CompanyID {
		t.Fatalf("companyId=%q, want %q", got, ts.Project.CompanyID)
	}
	// A JWT-shaped token answers INVALID_SESSION; an API key on a user
	// route too.
	wantError(t, ts.do("GET", "/api/v1/me", "eyJhbGciOiJFUzI1NiJ9.e30.c2ln", nil), 401, "INVALID_SESSION")
	wantError(t, ts.do("GET", "/api/v1/session", ts.Key, nil), 401, "INVALID_SESSION")
	wantError(t, ts.do("GET", "/api/v1/me", "", nil), 401, "MISSING_API_KEY")
}

func TestAPIKeyFormat(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	keyShape := regexp.MustCompile(`^sk_(live|test)_[0-9A-Za-z]{8}_[0-9A-Za-z]{32}$`)
	for _, mode := range []string{"live", "test"} {
		r := ts.admin("POST", "/api/v1/admin/keys", map[string]any{"projectId": ts.Project.ID, "mode": mode})
		wantOK(t, r)
		key := str(t, r.Body, "key")
		if len(key) != 49 || !keyShape.MatchString(key) || !strings.HasPrefix(key, "sk_"+mode+"_") {
			t.Fatalf("key %q is not sk_%s_ + 8 + _ + 32 base62", key, mode)
		}
		if got := obj(t, r.Body, "apiKey")["prefix"]; got != key[:16] {
			t.Fatalf("prefix=%v, want the first 16 characters %q", got, key[:16])
		}
	}
	// The lowercase scheme is the same Bearer scheme (RFC 9110: schemes
	// are case-insensitive).
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/me", nil)
	req.Header.Set("Authorization", "bearer "+ts.Key)
	wantOK(t, ts.send(req))
}

// TestRateLimitHeaders: every authenticated API-key response carries the
// X-RateLimit headers, error answers of the endpoint included;
// X-RateLimit-Reset is when the oldest counted request leaves the minute.
func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	first := ts.Clock.Now().Unix()
	for i := 1; i <= 3; i++ {
		r := ts.do("GET", "/api/v1/me", ts.Key, nil)
		wantOK(t, r)
		if got, want := r.Header.Get("X-RateLimit-Remaining"), strconv.Itoa(100-i); got != want {
			t.Fatalf("request %d: X-RateLimit-Remaining=%q, want %q", i, got, want)
		}
		if got, want := r.Header.Get("X-RateLimit-Reset"), strconv.FormatInt(first+60, 10); got != want {
			t.Fatalf("request %d: X-RateLimit-Reset=%q, want %q", i, got, want)
		}
		if r.Header.Get("Retry-After") != "" {
			t.Fatal("Retry-After on an allowed request")
		}
		ts.Clock.Advance(10 * time.Second)
	}
	r := ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "not an address"})
	wantError(t, r, 400, "VALIDATION_ERROR")
	if r.Header.Get("X-RateLimit-Limit") != "100" || r.Header.Get("X-RateLimit-Remaining") != "96" {
		t.Fatalf("endpoint error lacks the rate headers: %v", r.Header)
	}
}

// TestRateLimitByExternalIs401: the two by-external passkey routes answer
// RATE_LIMIT_EXCEEDED with 401 (docs/api.md, "Rate limits"), with the
// same headers.
func TestRateLimitByExternalIs401(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"rateLimitPerMinute": 1}))
	wantOK(t, ts.do("GET", "/api/v1/me", ts.Key, nil))
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/v1/passkeys/by-external?externalUserId=ext-1"},
		{"DELETE", "/api/v1/passkeys/by-external/Y3JlZA?externalUserId=ext-1"},
	} {
		r := ts.do(c.method, c.path, ts.Key, nil)
		wantError(t, r, 401, "RATE_LIMIT_EXCEEDED")
		if r.Header.Get("Retry-After") == "" || r.Header.Get("X-RateLimit-Remaining") != "0" {
			t.Fatalf("%s %s: headers %v", c.method, c.path, r.Header)
		}
	}
	wantError(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "a@example.com"}), 429, "RATE_LIMIT_EXCEEDED")
}
