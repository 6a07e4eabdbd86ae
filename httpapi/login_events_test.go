package httpapi_test

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
)

func wantEvents(t *testing.T, got, want []outboxEvent) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("outbox:\n got  %v\n want %v", got, want)
	}
}

// TestOutboxEventsOfEmailLogin: each state change of sign-up, sign-in,
// profile change, logout and deletion writes its event with the decided
// data, and failed attempts write none.
func TestOutboxEventsOfEmailLogin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.login("ev@example.com")
	uid, tok := str(t, r.Body, "userId"), str(t, r.Body, "token")
	sid := str(t, obj(t, ts.do("GET", "/api/v1/session", tok, nil).Body, "session"), "id")
	wantEvents(t, ts.outboxSince(0), []outboxEvent{
		{"user.registered", map[string]any{"email": "ev@example.com", "user_id": uid}},
		{"session.created", map[string]any{"user_id": uid, "session_id": sid, "method": "email_otp"}},
	})

	// Failures change nothing, so they write no event.
	n := len(ts.outbox())
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "ev@example.com", "code": "000000"}), 401, "INVALID_CODE")
	wantError(t, ts.do("POST", "/api/v1/magic/send", ts.Key, map[string]any{"email": "ev@example.com", "redirectUrl": "https://evil.example/"}), 400, "INVALID_REDIRECT_URL")
	wantError(t, ts.do("GET", "/api/v1/magic/verify?token=nope", "", nil), 401, "INVALID_TOKEN")
	wantError(t, ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": "bad"}), 400, "VALIDATION_ERROR")
	wantEvents(t, ts.outboxSince(n), nil)

	// A magic-link sign-in names its method.
	link := ts.magicToken("ev@example.com", nil)
	m := ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(link), "", nil)
	wantOK(t, m)
	sid2 := str(t, obj(t, ts.do("GET", "/api/v1/session", str(t, m.Body, "token"), nil).Body, "session"), "id")
	wantEvents(t, ts.outboxSince(n), []outboxEvent{
		{"session.created", map[string]any{"user_id": uid, "session_id": sid2, "method": "magic_link"}},
	})

	// A confirmed address change ends the other session.
	n = len(ts.outbox())
	ts.changeEmail(tok, "ev2@example.com")
	wantOK(t, ts.do("POST", "/api/v1/logout", tok, nil))
	wantEvents(t, ts.outboxSince(n), []outboxEvent{
		{"user.updated", map[string]any{"user_id": uid, "email": "ev2@example.com"}},
		{"session.revoked", map[string]any{"user_id": uid, "session_id": sid2}},
		{"session.revoked", map[string]any{"user_id": uid, "session_id": sid}},
	})

	last := str(t, ts.login("ev2@example.com").Body, "token")
	sid3 := str(t, obj(t, ts.do("GET", "/api/v1/session", last, nil).Body, "session"), "id")
	n = len(ts.outbox())
	wantOK(t, ts.do("DELETE", "/api/v1/user", last, nil))
	wantEvents(t, ts.outboxSince(n), []outboxEvent{
		{"session.revoked", map[string]any{"user_id": uid, "session_id": sid3}},
		{"user.deleted", map[string]any{"user_id": uid}},
	})
}

// TestAuthEventsOfEmailLogin: every send and verify, failed or not,
// leaves an authentication event with its failure category,
// including requests whose body could not be read.
func TestAuthEventsOfEmailLogin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	disabled := str(t, ts.login("off@example.com").Body, "userId")
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+disabled+"/disable", nil))
	ts.login("ext@example.com")
	ts.login("held@example.com")
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "held@example.com"}))
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "ext@example.com"}))
	heldCode, extCode := ts.lastMail("held@example.com").Code, ts.lastMail("ext@example.com").Code
	used := ts.magicToken("used@example.com", nil)
	wantOK(t, ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(used), "", nil))

	type req struct {
		method, path string
		key          bool
		body         any
	}
	cases := []struct {
		name           string
		req            req
		status         int
		method, action string
		failure        string // "" for success
	}{
		{"otp send", req{"POST", "/api/v1/otp/send", true, map[string]any{"email": "new@example.com"}}, 200, "email_otp", "send", ""},
		{"otp send throttled", req{"POST", "/api/v1/otp/send", true, map[string]any{"email": "new@example.com"}}, 429, "email_otp", "send", "rate_limited"},
		{"otp send bad email", req{"POST", "/api/v1/otp/send", true, map[string]any{"email": "nope"}}, 400, "email_otp", "send", "validation_error"},
		{"otp send bad JSON", req{"POST", "/api/v1/otp/send", true, `{"email":`}, 400, "email_otp", "send", "validation_error"},
		{"otp send wrong type", req{"POST", "/api/v1/otp/send", true, map[string]any{"email": []string{"a@example.com"}}}, 400, "email_otp", "send", "validation_error"},
		{"otp send too large", req{"POST", "/api/v1/otp/send", true, `{"email":"` + strings.Repeat("a", 70<<10) + `"}`}, 413, "email_otp", "send", "validation_error"},
		{"otp send disabled", req{"POST", "/api/v1/otp/send", true, map[string]any{"email": "off@example.com"}}, 403, "email_otp", "send", "user_disabled"},
		{"otp verify wrong", req{"POST", "/api/v1/otp/verify", true, map[string]any{"email": "new@example.com", "code": "1234567"}}, 401, "email_otp", "verify", "invalid_code"},
		{"otp verify none pending", req{"POST", "/api/v1/otp/verify", true, map[string]any{"email": "ghost@example.com", "code": "123456"}}, 401, "email_otp", "verify", "invalid_code"},
		{"otp verify empty code", req{"POST", "/api/v1/otp/verify", true, map[string]any{"email": "new@example.com", "code": ""}}, 400, "email_otp", "verify", "validation_error"},
		{"otp verify code type", req{"POST", "/api/v1/otp/verify", true, map[string]any{"email": "new@example.com", "code": 123456}}, 400, "email_otp", "verify", "validation_error"},
		{"otp verify attaches ext", req{"POST", "/api/v1/otp/verify", true, map[string]any{"email": "held@example.com", "code": heldCode, "externalUserId": "x-1"}}, 200, "email_otp", "verify", ""},
		{"otp verify ext conflict", req{"POST", "/api/v1/otp/verify", true, map[string]any{"email": "ext@example.com", "code": extCode, "externalUserId": "x-1"}}, 409, "email_otp", "verify", "user_exists"},
		{"magic send", req{"POST", "/api/v1/magic/send", true, map[string]any{"email": "new@example.com"}}, 200, "magic_link", "send", ""},
		{"magic send throttled", req{"POST", "/api/v1/magic/send", true, map[string]any{"email": "new@example.com"}}, 429, "magic_link", "send", "rate_limited"},
		{"magic send bad redirect", req{"POST", "/api/v1/magic/send", true, map[string]any{"email": "b@example.com", "redirectUrl": "https://evil.example"}}, 400, "magic_link", "send", "validation_error"},
		{"magic send bad JSON", req{"POST", "/api/v1/magic/send", true, "[]"}, 400, "magic_link", "send", "validation_error"},
		{"magic send disabled", req{"POST", "/api/v1/magic/send", true, map[string]any{"email": "off@example.com"}}, 403, "magic_link", "send", "user_disabled"},
		{"magic verify unknown", req{"GET", "/api/v1/magic/verify?token=unknown", false, nil}, 401, "magic_link", "verify", "invalid_code"},
		{"magic verify used", req{"GET", "/api/v1/magic/verify?token=" + url.QueryEscape(used), false, nil}, 401, "magic_link", "verify", "already_used"},
		{"magic verify no token", req{"GET", "/api/v1/magic/verify", false, nil}, 400, "magic_link", "verify", "validation_error"},
	}
	newest := func() []any { return ts.admin("GET", "/api/v1/admin/events?limit=2", nil).Body["events"].([]any) }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := newest()[0].(map[string]any)["id"]
			key := ""
			if c.req.key {
				key = ts.Key
			}
			r := ts.do(c.req.method, c.req.path, key, c.req.body)
			if r.Status != c.status {
				t.Fatalf("status=%d, want %d (%s)", r.Status, c.status, r.Raw)
			}
			evs := newest()
			if evs[1].(map[string]any)["id"] != before {
				t.Fatalf("want exactly one new event, got %v", evs)
			}
			ev := evs[0].(map[string]any)
			wantSuccess := c.failure == ""
			var failure any
			if !wantSuccess {
				failure = c.failure
			}
			if ev["method"] != c.method || ev["action"] != c.action || ev["success"] != wantSuccess || ev["failureCode"] != failure {
				t.Fatalf("event=%v, want %s %s success=%v failureCode=%v", ev, c.method, c.action, wantSuccess, failure)
			}
		})
	}
}
