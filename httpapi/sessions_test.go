package httpapi_test

import (
	"errors"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
	"latchkey/store/storetest"
)

// sessionKeys are the fields of a session in GET /sessions.
const sessionKeys = "createdAt,current,expiresAt,id,ip,lastSeenAt,method,userAgent"

// listSessions returns GET /sessions for token, checking the envelope.
func (ts *testServer) listSessions(token string) []map[string]any {
	ts.t.Helper()
	r := ts.do("GET", "/api/v1/sessions", token, nil)
	wantOK(ts.t, r)
	return objects(ts.t, r.Body, "sessions")
}

// objects returns an array-of-objects field.
func objects(t testing.TB, m map[string]any, key string) []map[string]any {
	t.Helper()
	arr, ok := m[key].([]any)
	if !ok {
		t.Fatalf("field %q is %T, want array", key, m[key])
	}
	out := make([]map[string]any, len(arr))
	for i, v := range arr {
		if out[i], ok = v.(map[string]any); !ok {
			t.Fatalf("%s[%d] is %T, want object", key, i, v)
		}
	}
	return out
}

// keysOf returns an object's keys, sorted and joined by commas.
func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// wantTime asserts an RFC 3339 UTC time field equal to want.
func wantTime(t testing.TB, m map[string]any, key string, want time.Time) {
	t.Helper()
	s := str(t, m, key)
	got, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !strings.HasSuffix(s, "Z") {
		t.Fatalf("%s=%q is not RFC 3339 UTC", key, s)
	}
	if !got.Equal(want) {
		t.Fatalf("%s=%s, want %s", key, s, want.Format(time.RFC3339))
	}
}

// storedSession reads a session row straight from the data file.
func (ts *testServer) storedSession(id string) *store.Session {
	ts.t.Helper()
	var s *store.Session
	err := ts.DB.View(ctx, func(tx store.Tx) error {
		var err error
		s, err = tx.Session(id)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		ts.t.Fatal(err)
	}
	return s
}

// TestSessionsList: GET /sessions lists the caller's live sessions newest
// first with where they were signed in from (the end-user IP as the risk
// engine resolves it, the User-Agent the app passed) and marks the
// caller's own; another user's sessions are not there.
func TestSessionsList(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	t0 := ts.Clock.Now()
	tok1 := ts.loginFrom("ada@example.com", "203.0.113.5", "Firefox/140 "+strings.Repeat("x", 400))
	ts.Clock.Advance(time.Minute)
	t2 := ts.Clock.Now()
	tok2 := ts.loginFrom("ada@example.com", "2001:db8::7", "Safari/18")
	ts.Clock.Advance(time.Minute)
	t3 := ts.Clock.Now()
	tok3 := ts.loginFrom("ada@example.com", "", "node-fetch") // no X-End-User-IP: the backend's address
	ts.loginFrom("bob@example.com", "198.51.100.1", "Other/1")

	list := ts.listSessions(tok2)
	if len(list) != 3 {
		t.Fatalf("%d sessions, want 3: %v", len(list), list)
	}
	ids := []string{ts.sessionID(tok3), ts.sessionID(tok2), ts.sessionID(tok1)}
	wantIP := []any{"127.0.0.1", "2001:db8::7", "203.0.113.5"}
	wantUA := []any{"node-fetch", "Safari/18", "Firefox/140 " + strings.Repeat("x", 256-len("Firefox/140 "))}
	created := []time.Time{t3, t2, t0}
	for i, s := range list {
		if got := keysOf(s); got != sessionKeys {
			t.Fatalf("session keys %s, want %s", got, sessionKeys)
		}
		if s["id"] != ids[i] || s["method"] != "email_otp" || s["ip"] != wantIP[i] || s["userAgent"] != wantUA[i] || s["current"] != (i == 1) {
			t.Fatalf("session %d = %v, want id %s, ip %v, user agent %v, current %v", i, s, ids[i], wantIP[i], wantUA[i], i == 1)
		}
		wantTime(t, s, "createdAt", created[i])
		// The session's end unless refreshed: the idle time (7 days by
		// default), not its first token's day.
		wantTime(t, s, "expiresAt", created[i].Add(7*24*time.Hour))
	}
	if other := ts.listSessions(tok3); other[0]["current"] != true || other[1]["current"] != false {
		t.Fatalf("current follows the calling token: %v", other)
	}
	wantError(t, ts.do("GET", "/api/v1/sessions", ts.Key, nil), 401, "INVALID_SESSION")
	wantError(t, ts.do("GET", "/api/v1/sessions", "", nil), 401, "INVALID_SESSION")
}

// TestSessionsLastSeen: the session check notes each request in memory
// (the hot path writes nothing); lists show it at once; FlushLastSeen
// writes each changed session once, so the time survives a restart; a
// session deleted before the flush is not recreated by it.
func TestSessionsLastSeen(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.loginFrom("ada@example.com", "203.0.113.5", "Firefox")
	gone := ts.loginFrom("ada@example.com", "203.0.113.5", "Firefox")
	id, goneID := ts.sessionID(tok), ts.sessionID(gone)
	if err := ts.Svc.FlushLastSeen(ctx); err != nil {
		t.Fatal(err)
	}
	flushed := ts.storedSession(id).LastSeenAt

	ts.Clock.Advance(5 * time.Minute)
	seen := ts.Clock.Now()
	for range 20 {
		wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))
	}
	wantOK(t, ts.do("GET", "/api/v1/session", gone, nil))
	if row := ts.storedSession(id); !row.LastSeenAt.Equal(flushed) {
		t.Fatalf("the session check wrote lastSeenAt %s on the request path", row.LastSeenAt)
	}
	wantTime(t, ts.listSessions(tok)[1], "lastSeenAt", seen) // [0] is gone's, newer
	wantOK(t, ts.do("POST", "/api/v1/logout", gone, nil))

	if err := ts.Svc.FlushLastSeen(ctx); err != nil {
		t.Fatal(err)
	}
	if row := ts.storedSession(id); !row.LastSeenAt.Equal(seen) {
		t.Fatalf("flushed lastSeenAt %s, want %s", row.LastSeenAt, seen)
	}
	if ts.storedSession(goneID) != nil {
		t.Fatal("the flush recreated a session logged out since its last request")
	}
	// A new process knows only what was written.
	uid := str(t, ts.do("GET", "/api/v1/user", tok, nil).Body["user"].(map[string]any), "id")
	ts.restart()
	r := ts.admin("GET", "/api/v1/admin/users/"+uid+"/sessions", nil)
	wantOK(t, r)
	wantTime(t, objects(t, r.Body, "sessions")[0], "lastSeenAt", seen)
}

// TestSessionsDelete: DELETE /sessions/:id ends one of the caller's own
// sessions and emits session.revoked; any other id, another user's
// included, is 404 SESSION_NOT_FOUND and ends nothing.
func TestSessionsDelete(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	a1 := ts.loginFrom("ada@example.com", "203.0.113.5", "A")
	a2 := ts.loginFrom("ada@example.com", "203.0.113.6", "A")
	b := ts.loginFrom("bob@example.com", "198.51.100.1", "B")
	a2ID, bID := ts.sessionID(a2), ts.sessionID(b)
	n := len(ts.outbox())

	// Another user's session, an unknown id: 404, nothing changes.
	for _, id := range []string{bID, "0193e4f2-0000-7000-8000-000000000000", "nope"} {
		wantError(t, ts.do("DELETE", "/api/v1/sessions/"+id, a1, nil), 404, "SESSION_NOT_FOUND")
	}
	wantOK(t, ts.do("GET", "/api/v1/session", b, nil))
	if got := ts.outboxSince(n); len(got) != 0 {
		t.Fatalf("events %v after refused deletes", got)
	}

	wantOK(t, ts.do("DELETE", "/api/v1/sessions/"+a2ID, a1, nil))
	wantError(t, ts.do("GET", "/api/v1/session", a2, nil), 401, "INVALID_SESSION")
	wantOK(t, ts.do("GET", "/api/v1/session", a1, nil))
	ev := ts.outboxSince(n)
	if len(ev) != 1 || ev[0].Type != "session.revoked" || ev[0].Data["session_id"] != a2ID || ev[0].Data["user_id"] == nil {
		t.Fatalf("events %v, want one session.revoked for %s", ev, a2ID)
	}
	wantError(t, ts.do("DELETE", "/api/v1/sessions/"+a2ID, a1, nil), 404, "SESSION_NOT_FOUND")
	if list := ts.listSessions(a1); len(list) != 1 {
		t.Fatalf("sessions left %v, want 1", list)
	}
	// A session may end itself this way.
	wantOK(t, ts.do("DELETE", "/api/v1/sessions/"+ts.sessionID(a1), a1, nil))
	wantError(t, ts.do("GET", "/api/v1/session", a1, nil), 401, "INVALID_SESSION")
}

// TestLogoutScopes: POST /logout ends this session (no body, {} or no
// scope), the other sessions ({scope:"others"}) or all of them
// ({scope:"all"}), with a session.revoked per session; a bad scope is
// 400 VALIDATION_ERROR and ends nothing.
func TestLogoutScopes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		body    any
		survive []bool // sessions 0, 1, 2 after logging out with session 1
	}{
		{"no body", nil, []bool{true, false, true}},
		{"empty object", map[string]any{}, []bool{true, false, true}},
		{"null scope", `{"scope":null}`, []bool{true, false, true}},
		{"others", map[string]any{"scope": "others"}, []bool{false, true, false}},
		{"all", map[string]any{"scope": "all"}, []bool{false, false, false}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestServer(t)
			tokens := make([]string, 3)
			for i := range tokens {
				tokens[i] = str(t, ts.login("ada@example.com").Body, "token")
			}
			other := str(t, ts.login("bob@example.com").Body, "token")
			n := len(ts.outbox())
			wantOK(t, ts.do("POST", "/api/v1/logout", tokens[1], c.body))
			ended := 0
			for i, tok := range tokens {
				r := ts.do("GET", "/api/v1/session", tok, nil)
				if c.survive[i] {
					wantOK(t, r)
				} else {
					wantError(t, r, 401, "INVALID_SESSION")
					ended++
				}
			}
			wantOK(t, ts.do("GET", "/api/v1/session", other, nil))
			ev := ts.outboxSince(n)
			if len(ev) != ended || slices.ContainsFunc(ev, func(e outboxEvent) bool { return e.Type != "session.revoked" }) {
				t.Fatalf("events %v, want %d session.revoked", ev, ended)
			}
		})
	}
	t.Run("bad scope", func(t *testing.T) {
		ts := newTestServer(t)
		tok := str(t, ts.login("ada@example.com").Body, "token")
		for _, body := range []any{map[string]any{"scope": "everything"}, map[string]any{"scope": 5}, "[]", "not json"} {
			wantError(t, ts.do("POST", "/api/v1/logout", tok, body), 400, "VALIDATION_ERROR")
		}
		wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))
	})
}

// TestAdminUserSessions: the operator lists a user's sessions (as the
// user sees them, without current) and ends them all, each with its
// session.revoked.
func TestAdminUserSessions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	a1 := ts.loginFrom("ada@example.com", "203.0.113.5", "A1")
	a2 := ts.loginFrom("ada@example.com", "203.0.113.6", "A2")
	b := ts.loginFrom("bob@example.com", "198.51.100.1", "B")
	uid := str(t, ts.do("GET", "/api/v1/user", a1, nil).Body["user"].(map[string]any), "id")

	r := ts.admin("GET", "/api/v1/admin/users/"+uid+"/sessions", nil)
	wantOK(t, r)
	list := objects(t, r.Body, "sessions")
	if len(list) != 2 || list[0]["id"] != ts.sessionID(a2) || list[1]["userAgent"] != "A1" {
		t.Fatalf("sessions %v", list)
	}
	if got, want := keysOf(list[0]), strings.Replace(sessionKeys, "current,", "", 1); got != want {
		t.Fatalf("admin session keys %s, want %s", got, want)
	}

	wantError(t, ts.admin("GET", "/api/v1/admin/users/nope/sessions", nil), 404, "USER_NOT_FOUND")
	wantError(t, ts.admin("POST", "/api/v1/admin/users/nope/sessions/revoke", map[string]any{}), 404, "USER_NOT_FOUND")
	wantError(t, ts.admin("POST", "/api/v1/admin/users/"+uid+"/sessions/revoke", "[1]"), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("POST", "/api/v1/admin/users/"+uid+"/sessions/revoke", a1, map[string]any{}), 401, "UNAUTHORIZED")
	wantOK(t, ts.do("GET", "/api/v1/session", a1, nil))

	n := len(ts.outbox())
	r = ts.admin("POST", "/api/v1/admin/users/"+uid+"/sessions/revoke", map[string]any{})
	wantOK(t, r)
	if r.Body["revoked"] != float64(2) {
		t.Fatalf("revoke answer %s, want revoked 2", r.Raw)
	}
	for _, tok := range []string{a1, a2} {
		wantError(t, ts.do("GET", "/api/v1/session", tok, nil), 401, "INVALID_SESSION")
	}
	wantOK(t, ts.do("GET", "/api/v1/session", b, nil))
	ev := ts.outboxSince(n)
	if len(ev) != 2 || ev[0].Type != "session.revoked" || ev[1].Type != "session.revoked" || ev[0].Data["user_id"] != uid {
		t.Fatalf("events %v, want two session.revoked for %s", ev, uid)
	}
	r = ts.admin("GET", "/api/v1/admin/users/"+uid+"/sessions", nil)
	wantOK(t, r)
	if len(objects(t, r.Body, "sessions")) != 0 {
		t.Fatalf("sessions after revoke: %s", r.Raw)
	}
}

// countChallenges returns how many WebAuthn challenges the file holds.
func (ts *testServer) countChallenges() int {
	ts.t.Helper()
	var n int
	errCount := errors.New("count only")
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		n, _ = tx.SweepExpired(store.ExpiringChallenges, ts.Clock.Now().Add(24*time.Hour), 1<<30)
		return errCount // roll back: only counted
	})
	if !errors.Is(err, errCount) {
		ts.t.Fatal(err)
	}
	return n
}

// TestSessionRateLimit: one session made 20,000 fsync'd
// passkey/register/start writes (an attack of an earlier review), so the
// calls with a session's token that write or start a ceremony are
// limited per session: 120 per rolling minute by default; past that 429
// RATE_LIMIT_EXCEEDED with Retry-After, and nothing is written. Reads
// are never limited per session (an app checks its user's session on
// every request: a busy page once got 429 on GET /session). Other
// sessions, API keys and, once the minute rolls on, the session itself
// go on.
func TestSessionRateLimit(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("ada@example.com").Body, "token")
	other := str(t, ts.login("ada@example.com").Body, "token")
	for i := 0; i < auth.DefaultSessionRateLimit; i++ {
		if i%40 == 0 && i > 0 {
			ts.Clock.Advance(10 * time.Second) // 40 at 0 s, 40 at 10 s, 40 at 20 s
		}
		wantOK(t, ts.do("POST", "/api/v1/passkey/register/start", tok, map[string]any{}))
	}
	before := ts.countChallenges()
	for _, c := range []struct{ method, path string }{
		{"POST", "/api/v1/passkey/register/start"}, {"POST", "/api/v1/passkey/register/verify"},
		{"POST", "/api/v1/totp/enroll"}, {"PATCH", "/api/v1/user"}, {"POST", "/api/v1/user/email/send"},
		{"POST", "/api/v1/backup-codes/generate"}, {"DELETE", "/api/v1/passkeys/AAAA"},
		{"DELETE", "/api/v1/sessions/" + ts.sessionID(other)}, {"POST", "/api/v1/logout"},
	} {
		r := ts.do(c.method, c.path, tok, map[string]any{})
		wantError(t, r, 429, "RATE_LIMIT_EXCEEDED")
		if ra := r.Header.Get("Retry-After"); ra != "40" { // the first 40 leave the minute at 60 s
			t.Fatalf("%s %s Retry-After=%q, want 40", c.method, c.path, ra)
		}
		if len(r.Body) != 3 || r.Body["error"] != "Too many requests for this session; retry later." {
			t.Fatalf("%s %s body %s, want {success, error, code}", c.method, c.path, r.Raw)
		}
	}
	if got := ts.countChallenges(); got != before || got != auth.DefaultSessionRateLimit {
		t.Fatalf("challenges %d (before the refused calls %d), want %d", got, before, auth.DefaultSessionRateLimit)
	}
	// The reads of the limited session, the other session and the key go
	// on; the refused logout and revocation ended nothing.
	for _, path := range []string{"/api/v1/session", "/api/v1/me", "/api/v1/user", "/api/v1/sessions", "/api/v1/passkeys"} {
		wantOK(t, ts.do("GET", path, tok, nil))
	}
	wantOK(t, ts.do("GET", "/api/v1/session", other, nil))
	wantOK(t, ts.do("POST", "/api/v1/passkey/register/start", other, map[string]any{}))
	wantOK(t, ts.do("GET", "/api/v1/me", ts.Key, nil))

	ts.Clock.Advance(39 * time.Second)
	wantError(t, ts.do("POST", "/api/v1/totp/enroll", tok, map[string]any{}), 429, "RATE_LIMIT_EXCEEDED")
	ts.Clock.Advance(time.Second) // the first 40 left the rolling minute
	for i := 0; i < 40; i++ {
		wantOK(t, ts.do("POST", "/api/v1/passkey/register/start", tok, map[string]any{}))
	}
	r := ts.do("POST", "/api/v1/passkey/register/start", tok, map[string]any{})
	wantError(t, r, 429, "RATE_LIMIT_EXCEEDED")
	if ra := r.Header.Get("Retry-After"); ra != "10" {
		t.Fatalf("Retry-After=%q, want 10", ra)
	}
}

// TestSessionReadsNotLimited: an app that checks its user's session on
// every request of a busy page: 200 GET /session, 100 GET /me and 100
// GET /user of one session within a minute all succeed, before and while
// its writes are over the limit, and none of them counts against the
// writes: 120 writes still pass in the same minute.
func TestSessionReadsNotLimited(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("ada@example.com").Body, "token")
	for i := range 200 {
		ts.Clock.Advance(200 * time.Millisecond) // 200 in 40 s
		wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))
		if i%2 == 0 {
			wantOK(t, ts.do("GET", "/api/v1/me", tok, nil))
			wantOK(t, ts.do("GET", "/api/v1/user", tok, nil))
		}
	}
	for range auth.DefaultSessionRateLimit {
		wantOK(t, ts.do("POST", "/api/v1/passkey/register/start", tok, map[string]any{}))
	}
	wantError(t, ts.do("POST", "/api/v1/passkey/register/start", tok, map[string]any{}), 429, "RATE_LIMIT_EXCEEDED")
	for range 50 {
		wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))
	}
}

// TestSessionRateLimitConcurrent: the limit holds under concurrency:
// exactly 120 of 200 simultaneous writes of one session pass, and all
// of 200 simultaneous reads do.
func TestSessionRateLimitConcurrent(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("ada@example.com").Body, "token")
	rs := ts.parallel(200, func(int) *http.Request {
		req, _ := http.NewRequest("POST", ts.URL+"/api/v1/passkey/register/start", strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		return req
	})
	got := statusCodes(rs)
	if got["200 "] != auth.DefaultSessionRateLimit || got["429 RATE_LIMIT_EXCEEDED"] != 200-auth.DefaultSessionRateLimit {
		t.Fatalf("answers %v, want 120 × 200 and 80 × 429", got)
	}
	rs = ts.parallel(200, func(int) *http.Request {
		req, _ := http.NewRequest("GET", ts.URL+"/api/v1/session", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		return req
	})
	if got := statusCodes(rs); got["200 "] != 200 {
		t.Fatalf("reads answered %v, want 200 × 200", got)
	}
}

// TestSessionRateLimitSetting: sessionRateLimitPerMinute is a project
// setting (1 to 100000, 120 by default) on create and PATCH, shown in
// the project views; a change applies to the next request, raised or
// lowered; a value out of range is 400 VALIDATION_ERROR and changes
// nothing.
func TestSessionRateLimitSetting(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	path := "/api/v1/admin/projects/" + ts.Project.ID
	limit := func() any { return obj(t, ts.admin("GET", path, nil).Body, "project")["sessionRateLimitPerMinute"] }
	if got := limit(); got != float64(auth.DefaultSessionRateLimit) {
		t.Fatalf("default sessionRateLimitPerMinute %v, want 120", got)
	}
	r := ts.admin("PATCH", path, map[string]any{"sessionRateLimitPerMinute": 3})
	wantOK(t, r)
	if got := obj(t, r.Body, "project")["sessionRateLimitPerMinute"]; got != float64(3) {
		t.Fatalf("PATCH answered sessionRateLimitPerMinute %v, want 3", got)
	}
	tok := str(t, ts.login("ada@example.com").Body, "token")
	write := func() *response { return ts.do("POST", "/api/v1/passkey/register/start", tok, map[string]any{}) }
	for range 3 {
		wantOK(t, write())
	}
	r = write()
	wantError(t, r, 429, "RATE_LIMIT_EXCEEDED")
	if r.Header.Get("Retry-After") != "60" {
		t.Fatalf("Retry-After=%q, want 60", r.Header.Get("Retry-After"))
	}
	wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))

	wantOK(t, ts.admin("PATCH", path, map[string]any{"sessionRateLimitPerMinute": 5}))
	wantOK(t, write())
	wantOK(t, write())
	wantError(t, write(), 429, "RATE_LIMIT_EXCEEDED")
	wantOK(t, ts.admin("PATCH", path, map[string]any{"sessionRateLimitPerMinute": 2}))
	wantError(t, write(), 429, "RATE_LIMIT_EXCEEDED")

	for _, bad := range []any{0, 100001, -1, "many", 2.5} {
		r := ts.admin("PATCH", path, map[string]any{"sessionRateLimitPerMinute": bad})
		wantError(t, r, 400, "VALIDATION_ERROR")
		r = ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Other", "sessionRateLimitPerMinute": bad})
		wantError(t, r, 400, "VALIDATION_ERROR")
	}
	if got := limit(); got != float64(2) {
		t.Fatalf("sessionRateLimitPerMinute %v after refused changes, want 2", got)
	}
	if n := len(ts.admin("GET", "/api/v1/admin/projects", nil).Body["projects"].([]any)); n != 1 {
		t.Fatalf("%d projects after refused creations, want 1", n)
	}
	r = ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Busy", "sessionRateLimitPerMinute": 100000})
	if r.Status != 200 || obj(t, r.Body, "project")["sessionRateLimitPerMinute"] != float64(100000) {
		t.Fatalf("create with the largest limit: %d %s", r.Status, r.Raw)
	}
	r = ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Plain"})
	if r.Status != 200 || obj(t, r.Body, "project")["sessionRateLimitPerMinute"] != float64(auth.DefaultSessionRateLimit) {
		t.Fatalf("create with the default limit: %d %s", r.Status, r.Raw)
	}
}

// TestSessionRateLimitSettingAcrossReplicas: a change of the limit made
// on one replica applies to the next requests of the other once its
// invalidation feed has told it (a quarter of a second by default),
// though the other had the project cached.
func TestSessionRateLimitSettingAcrossReplicas(t *testing.T) {
	t.Parallel()
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("replicas share a database: this test runs on the postgres pass")
	}
	a := newTestServer(t, func(c *auth.Config) { c.BaseURL = "https://auth.example.com" }) // one issuer behind the load balancer
	b := a.replica()
	tok := str(t, a.login("ada@example.com").Body, "token")
	write := func() *response { return b.do("POST", "/api/v1/passkey/register/start", tok, map[string]any{}) }
	wantOK(t, write()) // b caches the project: 120 a minute
	wantOK(t, a.admin("PATCH", "/api/v1/admin/projects/"+a.Project.ID, map[string]any{"sessionRateLimitPerMinute": 2}))
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		r := write()
		if r.Status == 429 {
			wantError(t, r, 429, "RATE_LIMIT_EXCEEDED")
			break
		}
		wantOK(t, r)
		if time.Since(start) > 3*time.Second {
			t.Fatal("replica b still allows 120 writes a minute 3 s after the limit became 2")
		}
	}
}
