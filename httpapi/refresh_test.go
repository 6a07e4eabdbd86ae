package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// refresh posts a refresh token with the API key key.
func (ts *testServer) refresh(key, refreshToken string) *response {
	ts.t.Helper()
	return ts.do("POST", "/api/v1/session/refresh", key, map[string]any{"refreshToken": refreshToken})
}

// TestSessionRefresh: a login result carries a refresh token; POST
// /session/refresh with the API key gives a new token of the same
// session (same id and amr, issued now, a day to live), a new refresh
// token and the token's expiry, and slides the session (GET /sessions:
// it ends 7 days from the refresh). Presenting a used refresh token again
// ends the session: every token of it is refused at once,
// session.revoked is emitted, and the refusal is an event already_used
// (a success is counted in the metrics only).
func TestSessionRefresh(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("slide@example.com")
	first := str(t, login.Body, "refreshToken")
	if len(first) != 64 || strings.ContainsAny(first, "+/=") {
		t.Fatalf("refreshToken %q, want 64 base64url characters", first)
	}
	s := obj(t, ts.do("GET", "/api/v1/session", str(t, login.Body, "token"), nil).Body, "session")
	id, amr := s["id"], s["amr"]

	ts.Clock.Advance(2 * time.Hour)
	now := ts.Clock.Now().Unix()
	r := ts.refresh(ts.Key, first)
	wantOK(t, r)
	tok, second := str(t, r.Body, "token"), str(t, r.Body, "refreshToken")
	if second == first || len(second) != 64 || r.Body["expiresAt"] != float64(now+86400) {
		t.Fatalf("refresh answered %s", r.Raw)
	}
	g := ts.do("GET", "/api/v1/session", tok, nil)
	wantOK(t, g)
	s = obj(t, g.Body, "session")
	if s["id"] != id || s["userId"] != login.Body["userId"] || s["issuedAt"] != float64(now) || s["expiresAt"] != float64(now+86400) ||
		len(s["amr"].([]any)) != 1 || s["amr"].([]any)[0] != amr.([]any)[0] {
		t.Fatalf("session of the refreshed token %v, want %v (amr %v), issued %d", s, id, amr, now)
	}
	list := ts.do("GET", "/api/v1/sessions", tok, nil)
	wantOK(t, list)
	sessions := list.Body["sessions"].([]any)
	if len(sessions) != 1 || sessions[0].(map[string]any)["expiresAt"] != time.Unix(now, 0).UTC().Add(7*24*time.Hour).Format("2006-01-02T15:04:05.000Z") {
		t.Fatalf("sessions %s, want the one, ending 7 days from the refresh", list.Raw)
	}

	r = ts.refresh(ts.Key, second)
	wantOK(t, r)
	newest, third := str(t, r.Body, "token"), str(t, r.Body, "refreshToken")
	n := len(ts.outbox())
	wantError(t, ts.refresh(ts.Key, first), 401, "INVALID_SESSION")
	for _, tok := range []string{str(t, login.Body, "token"), tok, newest} {
		wantError(t, ts.do("GET", "/api/v1/session", tok, nil), 401, "INVALID_SESSION")
	}
	wantError(t, ts.refresh(ts.Key, third), 401, "INVALID_SESSION")
	if got := ts.outboxSince(n); len(got) != 1 || got[0].Type != "session.revoked" || got[0].Data["session_id"] != id {
		t.Fatalf("events after the reuse %v, want session.revoked of %v", got, id)
	}
	if c := ts.methodEvents("session", "refresh"); c["already_used"] != 1 || c["invalid_code"] != 1 || c[""] != 0 {
		t.Fatalf("refresh events %v, want one already_used, one invalid_code and no success", c)
	}
	// The successes are counted in the metrics, not stored.
	fams := ts.scrape()
	for result, want := range map[string]float64{"success": 2, "already_used": 1, "invalid_code": 1} {
		labels := map[string]string{"method": "session", "action": "refresh", "result": result}
		if got := value(sample(t, fams, "latchkey_auth_events_total", dto.MetricType_COUNTER, labels)); got != want {
			t.Errorf("latchkey_auth_events_total%v = %v, want %v", labels, got, want)
		}
	}
}

// TestSessionRefreshRefused: a body that is not an object with a
// refreshToken string is 400 VALIDATION_ERROR; a token that is unknown,
// not a refresh token, or another project's is 401 INVALID_SESSION; no
// API key is 401 MISSING_API_KEY. None changes anything: the owner's
// refresh works afterwards.
func TestSessionRefreshRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	login := ts.login("owner@example.com")
	rt := str(t, login.Body, "refreshToken")
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	wantOK(t, other)
	otherKey := ts.createKey(map[string]any{"projectId": str(t, obj(t, other.Body, "project"), "id"), "mode": "test"})
	cases := []struct {
		name   string
		key    string
		body   any
		status int
		code   string
	}{
		{"not JSON", ts.Key, "refresh please", 400, "VALIDATION_ERROR"},
		{"an array", ts.Key, "[]", 400, "VALIDATION_ERROR"},
		{"a number", ts.Key, map[string]any{"refreshToken": 5}, 400, "VALIDATION_ERROR"},
		{"missing", ts.Key, map[string]any{}, 400, "VALIDATION_ERROR"},
		{"empty", ts.Key, map[string]any{"refreshToken": ""}, 400, "VALIDATION_ERROR"},
		{"unknown", ts.Key, map[string]any{"refreshToken": strings.Repeat("A", 64)}, 401, "INVALID_SESSION"},
		{"a session token", ts.Key, map[string]any{"refreshToken": str(t, login.Body, "token")}, 401, "INVALID_SESSION"},
		{"another project's key", otherKey, map[string]any{"refreshToken": rt}, 401, "INVALID_SESSION"},
		{"no API key", "", map[string]any{"refreshToken": rt}, 401, "MISSING_API_KEY"},
		{"a session token as the key", str(t, login.Body, "token"), map[string]any{"refreshToken": rt}, 401, "INVALID_FORMAT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, ts.do("POST", "/api/v1/session/refresh", c.key, c.body), c.status, c.code)
		})
	}
	// The refusals after the key's check are events (the cross-project
	// one in the other project's).
	if c := ts.methodEvents("session", "refresh"); c["validation_error"] != 5 || c["invalid_code"] != 3 || len(c) != 2 {
		t.Fatalf("refresh events %v, want 5 validation_error and 3 invalid_code", c)
	}
	wantOK(t, ts.refresh(ts.Key, rt))
}

// TestSessionRefreshLifetimes: with sessionTtlSeconds 300,
// sessionIdleSeconds 600 and sessionMaxSeconds 900 (shown in the
// project), a token expires after 5 minutes but its session can be
// refreshed; a session unrefreshed for 10 minutes, or 15 minutes after
// its sign-in, cannot (401 INVALID_SESSION, an event expired). Settings
// out of bounds or out of order are 400 VALIDATION_ERROR.
func TestSessionRefreshLifetimes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	path := "/api/v1/admin/projects/" + ts.Project.ID
	for _, bad := range []map[string]any{
		{"sessionIdleSeconds": 299}, {"sessionMaxSeconds": 31536001}, {"sessionIdleSeconds": "600"},
		{"sessionIdleSeconds": 3600}, {"sessionTtlSeconds": 300, "sessionIdleSeconds": 600, "sessionMaxSeconds": 599},
	} {
		wantError(t, ts.admin("PATCH", path, bad), 400, "VALIDATION_ERROR")
	}
	p := ts.admin("GET", path, nil)
	wantOK(t, p)
	if pr := obj(t, p.Body, "project"); pr["sessionIdleSeconds"] != float64(604800) || pr["sessionMaxSeconds"] != float64(2592000) {
		t.Fatalf("project %s, want the default session times", p.Raw)
	}
	r := ts.admin("PATCH", path, map[string]any{"sessionTtlSeconds": 300, "sessionIdleSeconds": 600, "sessionMaxSeconds": 900})
	wantOK(t, r)
	if pr := obj(t, r.Body, "project"); pr["sessionTtlSeconds"] != float64(300) || pr["sessionIdleSeconds"] != float64(600) || pr["sessionMaxSeconds"] != float64(900) {
		t.Fatalf("patched project %s", r.Raw)
	}

	login := ts.login("timed@example.com") // the clock moves 31 s on
	ts.Clock.Advance(5 * time.Minute)
	wantError(t, ts.do("GET", "/api/v1/session", str(t, login.Body, "token"), nil), 401, "INVALID_SESSION")
	r = ts.refresh(ts.Key, str(t, login.Body, "refreshToken"))
	wantOK(t, r)
	wantOK(t, ts.do("GET", "/api/v1/session", str(t, r.Body, "token"), nil))
	ts.Clock.Advance(8 * time.Minute) // 13.5 minutes after the sign-in
	r = ts.refresh(ts.Key, str(t, r.Body, "refreshToken"))
	wantOK(t, r)
	ts.Clock.Advance(90 * time.Second) // 15 minutes after the sign-in
	wantError(t, ts.refresh(ts.Key, str(t, r.Body, "refreshToken")), 401, "INVALID_SESSION")

	login = ts.login("idle@example.com")
	ts.Clock.Advance(10*time.Minute - 31*time.Second) // 10 minutes after the sign-in
	wantError(t, ts.refresh(ts.Key, str(t, login.Body, "refreshToken")), 401, "INVALID_SESSION")
	if c := ts.methodEvents("session", "refresh"); c["expired"] != 2 {
		t.Fatalf("refresh events %v, want 2 expired", c)
	}
}

// TestSessionRefreshEnded: whatever ends a session ends its refresh
// tokens: logout, the others' logout, DELETE /sessions/:id, the
// operator's revoke, DELETE /user.
func TestSessionRefreshEnded(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		end  func(ts *testServer, login *response)
	}{
		{"logout", func(ts *testServer, login *response) {
			wantOK(ts.t, ts.do("POST", "/api/v1/logout", str(ts.t, login.Body, "token"), nil))
		}},
		{"logout of the others", func(ts *testServer, login *response) {
			other := ts.login("ended@example.com")
			wantOK(ts.t, ts.do("POST", "/api/v1/logout", str(ts.t, other.Body, "token"), map[string]any{"scope": "others"}))
		}},
		{"DELETE /sessions/:id", func(ts *testServer, login *response) {
			tok := str(ts.t, login.Body, "token")
			wantOK(ts.t, ts.do("DELETE", "/api/v1/sessions/"+ts.sessionID(tok), tok, nil))
		}},
		{"the operator's revoke", func(ts *testServer, login *response) {
			wantOK(ts.t, ts.admin("POST", "/api/v1/admin/users/"+str(ts.t, login.Body, "userId")+"/sessions/revoke", nil))
		}},
		{"DELETE /user", func(ts *testServer, login *response) {
			wantOK(ts.t, ts.do("DELETE", "/api/v1/user", str(ts.t, login.Body, "token"), nil))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t)
			login := ts.login("ended@example.com")
			c.end(ts, login)
			wantError(t, ts.refresh(ts.Key, str(t, login.Body, "refreshToken")), 401, "INVALID_SESSION")
		})
	}
}

// TestMagicRedirectNoRefreshToken: a magic link's redirect puts the
// session token in the URL, never the refresh token; the JSON answer
// carries it.
func TestMagicRedirectNoRefreshToken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.magicToken("r@example.com", nil)
	r := ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok)+"&redirect_uri="+url.QueryEscape("http://localhost:3000/cb"), "", nil)
	if r.Status != http.StatusFound {
		t.Fatalf("status=%d, want 302 (%s)", r.Status, r.Raw)
	}
	loc, _ := url.Parse(r.Header.Get("Location"))
	if q := loc.Query(); len(q) != 1 || q.Get("token") == "" || strings.Contains(r.Header.Get("Location"), "refresh") {
		t.Fatalf("Location=%s, want only the session token", loc)
	}
	ts.Clock.Advance(31 * time.Second)
	tok = ts.magicToken("r@example.com", nil)
	j := ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(tok), "", nil)
	wantOK(t, j)
	wantOK(t, ts.refresh(ts.Key, str(t, j.Body, "refreshToken")))
}

// TestSessionRefreshPendingSecondFactor: a session signed in by email on
// an account with TOTP is refused a refresh with 403 STEP_UP_REQUIRED
// until it verifies a TOTP code; its refresh token works after.
func TestSessionRefreshPendingSecondFactor(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	secret := ts.enrollTOTP(str(t, ts.login("guarded@example.com").Body, "token"))
	login := ts.login("guarded@example.com")
	tok, rt := str(t, login.Body, "token"), str(t, login.Body, "refreshToken")
	if login.Body["secondFactorPending"] != true {
		t.Fatalf("login %s: want secondFactorPending", login.Raw)
	}
	refused := ts.do("POST", "/api/v1/session/refresh", ts.Key, map[string]any{"refreshToken": rt})
	wantError(t, refused, 403, "STEP_UP_REQUIRED")
	if msg, _ := refused.Body["error"].(string); !strings.Contains(msg, "second factor is pending") {
		t.Fatalf("error %q does not say why", msg)
	}
	wantOK(t, ts.do("POST", "/api/v1/totp/verify", tok, map[string]any{"code": ts.totpCode(secret, 0)}))
	r := ts.do("POST", "/api/v1/session/refresh", ts.Key, map[string]any{"refreshToken": rt})
	wantOK(t, r)
	if str(t, r.Body, "refreshToken") == rt {
		t.Fatal("the refresh token did not rotate")
	}
}
