package httpapi_test

import (
	"encoding/json"
	"net/url"
	"slices"
	"testing"

	"latchkey/auth"
	"latchkey/auth/sms"
)

// TestWebhookEvents drives every capability that emits an event and
// checks, at a real receiver, that each event arrives once with exactly
// the data fields of docs/api.md, "Events": sign-up, logins by code, link and
// backup code, profile change, backup codes, SMS enrolment, logout
// (session.revoked), account deletion (session.revoked for every session,
// then user.deleted) and disabling (session.revoked for every session).
func TestWebhookEvents(t *testing.T) {
	t.Parallel()
	fake := newFakeTwilio(t)
	tw, err := sms.NewTwilio("AC123", "secret-token", "+15550001111", fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *auth.Config) { c.SMS = tw })
	rcv := newReceiver(t)
	ts.createWebhook(rcv.URL, nil)

	type event struct {
		Type string
		Data map[string]any
	}
	var want []event
	add := func(typ string, kv ...string) {
		data := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			data[kv[i]] = kv[i+1]
		}
		want = append(want, event{typ, data})
	}
	sessionID := func(tok string) string {
		t.Helper()
		r := ts.do("GET", "/api/v1/session", tok, nil)
		wantOK(t, r)
		return str(t, obj(t, r.Body, "session"), "id")
	}

	// A: signs up by code, signs in again by magic link.
	a := ts.login("a@example.com")
	uidA, tokA := str(t, a.Body, "userId"), str(t, a.Body, "token")
	add("user.registered", "email", "a@example.com", "user_id", uidA)
	add("session.created", "user_id", uidA, "session_id", sessionID(tokA), "method", "email_otp")
	link := ts.magicToken("a@example.com", nil)
	m := ts.do("GET", "/api/v1/magic/verify?token="+url.QueryEscape(link), "", nil)
	wantOK(t, m)
	tokA2 := str(t, m.Body, "token")
	sidA2 := sessionID(tokA2)
	add("session.created", "user_id", uidA, "session_id", sidA2, "method", "magic_link")

	// The confirmed change ends the other session.
	ts.changeEmail(tokA, "a2@example.com")
	add("user.updated", "user_id", uidA, "email", "a2@example.com")
	add("session.revoked", "user_id", uidA, "session_id", sidA2)

	g := ts.do("POST", "/api/v1/backup-codes/generate", tokA, map[string]any{})
	wantOK(t, g)
	add("backup_codes.generated", "user_id", uidA)
	code := g.Body["codes"].([]any)[0].(string)
	b := ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "a2@example.com", "code": code})
	wantOK(t, b)
	tokA3 := str(t, b.Body, "token")
	add("session.created", "user_id", uidA, "session_id", sessionID(tokA3), "method", "backup_code")

	wantOK(t, ts.do("POST", "/api/v1/sms/send", tokA, map[string]any{"phone": "+15551234567"}))
	fake.mu.Lock()
	smsBody := fake.forms[len(fake.forms)-1]["Body"]
	fake.mu.Unlock()
	wantOK(t, ts.do("POST", "/api/v1/sms/verify", tokA, map[string]any{"code": smsCode.FindString(smsBody)}))
	add("sms.enrolled", "user_id", uidA)

	sidA := sessionID(tokA)
	wantOK(t, ts.do("POST", "/api/v1/logout", tokA, nil))
	add("session.revoked", "user_id", uidA, "session_id", sidA)

	sidA3 := sessionID(tokA3)
	wantOK(t, ts.do("DELETE", "/api/v1/user", tokA3, nil))
	add("session.revoked", "user_id", uidA, "session_id", sidA3)
	add("user.deleted", "user_id", uidA)

	// B: two sessions, then disabled by the operator.
	b1 := ts.login("b@example.com")
	uidB, tokB1 := str(t, b1.Body, "userId"), str(t, b1.Body, "token")
	tokB2 := str(t, ts.login("b@example.com").Body, "token")
	sidB1, sidB2 := sessionID(tokB1), sessionID(tokB2)
	add("user.registered", "email", "b@example.com", "user_id", uidB)
	add("session.created", "user_id", uidB, "session_id", sidB1, "method", "email_otp")
	add("session.created", "user_id", uidB, "session_id", sidB2, "method", "email_otp")
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+uidB+"/disable", nil))
	add("session.revoked", "user_id", uidB, "session_id", sidB1)
	add("session.revoked", "user_id", uidB, "session_id", sidB2)

	ts.deliver()
	key := func(e event) string {
		d, _ := json.Marshal(e.Data)
		return e.Type + " " + string(d)
	}
	var got []string
	for _, d := range rcv.deliveries() {
		var e event
		if err := json.Unmarshal(d.body, &e); err != nil {
			t.Fatalf("body %s: %v", d.body, err)
		}
		got = append(got, key(e))
	}
	var wantKeys []string
	for _, e := range want {
		wantKeys = append(wantKeys, key(e))
	}
	slices.Sort(got)
	slices.Sort(wantKeys)
	if !slices.Equal(got, wantKeys) {
		t.Fatalf("delivered events:\n%s\nwant:\n%s", pretty(got), pretty(wantKeys))
	}
}

func pretty(lines []string) string {
	out := ""
	for _, l := range lines {
		out += "  " + l + "\n"
	}
	return out
}
