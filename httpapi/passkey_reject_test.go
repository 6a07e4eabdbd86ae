package httpapi_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/passkeytest"
	"latchkey/internal/testkit"
	"latchkey/store"
)

// TestPasskeyLoginRejects: assertions that must not sign anyone in, each
// answered with the decided status, code and event category; the failed
// attempt consumes its challenge, so even a good assertion for it is then
// 400 CHALLENGE_EXPIRED.
func TestPasskeyLoginRejects(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	const addr = "rej@example.com"
	ts.passkeySignUp(a, addr)
	ts.passkeySignUp(passkeytest.New(pkOrigin), "bystander@example.com")
	stranger := passkeytest.New(pkOrigin)
	c := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "never@example.com"})
	_, strangerCred := create(t, stranger, c) // never verified: unknown to the server

	cases := []struct {
		name     string
		email    string // sign-in by email, else discoverable
		tweak    passkeytest.Tweak
		status   int
		code     string
		category string
	}{
		{"tampered signature", addr, passkeytest.Tweak{BadSignature: true}, 400, "INVALID_CREDENTIAL", "invalid_code"},
		{"tampered signature, discoverable", "", passkeytest.Tweak{BadSignature: true}, 400, "INVALID_CREDENTIAL", "invalid_code"},
		{"wrong origin", addr, passkeytest.Tweak{Origin: "https://evil.example"}, 400, "INVALID_CREDENTIAL", "invalid_code"},
		{"origin of another port", addr, passkeytest.Tweak{Origin: pkOrigin + ":8443"}, 400, "INVALID_CREDENTIAL", "invalid_code"},
		{"wrong rpId hash", addr, passkeytest.Tweak{RPID: "evil.example"}, 400, "INVALID_CREDENTIAL", "invalid_code"},
		{"rpId hash of the origin's host", "", passkeytest.Tweak{RPID: "app.example.com"}, 400, "INVALID_CREDENTIAL", "invalid_code"},
		{"create type", addr, passkeytest.Tweak{Type: "webauthn.create"}, 400, "INVALID_CREDENTIAL", "invalid_code"},
		{"other challenge", addr, passkeytest.Tweak{Challenge: []byte("a challenge the server never issued")}, 400, "INVALID_CREDENTIAL", "invalid_code"},
		{"user handle of someone else", "", passkeytest.Tweak{UserHandle: []byte("0190aaaa-0000-7000-8000-000000000000")}, 401, "INVALID_CREDENTIAL", "user_not_found"},
		{"unknown credential", "", passkeytest.Tweak{Credential: strangerCred}, 401, "INVALID_CREDENTIAL", "user_not_found"},
		{"unknown credential by email", addr, passkeytest.Tweak{Credential: strangerCred}, 401, "INVALID_CREDENTIAL", "user_not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{}
			if tc.email != "" {
				body["email"] = tc.email
			}
			c := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, body)
			r := ts.verify("/api/v1/passkey/login/verify", ts.Key, c.ID, assertion(t, a, c, tc.tweak))
			wantError(t, r, tc.status, tc.code)
			if _, ok := r.Body["token"]; ok {
				t.Fatalf("a rejected assertion carries a token: %s", r.Raw)
			}
			ts.wantAuthEvent("login", tc.category)
			wantError(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, c.ID, assertion(t, a, c)), 400, "CHALLENGE_EXPIRED")
		})
	}
	// None of it signed anyone in or moved a counter the wrong way.
	wantOK(t, ts.passkeyLogin(a, addr))
}

// TestPasskeyCounterRegression: a sign counter that does not advance is
// 400 INVALID_CREDENTIAL and leaves the stored count; authenticators that
// keep the counter at 0 (most synced passkeys) still sign in.
func TestPasskeyCounterRegression(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	id := str(t, ts.passkeySignUp(a, "count@example.com").Body, "credentialId")
	n := func(v uint32) passkeytest.Tweak { return passkeytest.Tweak{SignCount: &v} }

	wantOK(t, ts.passkeyLogin(a, "count@example.com", n(5)))
	for _, back := range []uint32{3, 5, 0} {
		wantError(t, ts.passkeyLogin(a, "", n(back)), 400, "INVALID_CREDENTIAL")
		ts.wantAuthEvent("login", "invalid_code")
		if _, c := ts.storedCredential(id); c.Authenticator.SignCount != 5 || c.Authenticator.CloneWarning {
			t.Fatalf("after counter %d: stored count %d cloneWarning %v, want 5 false", back, c.Authenticator.SignCount, c.Authenticator.CloneWarning)
		}
	}
	wantOK(t, ts.passkeyLogin(a, "", n(6)))

	zero := passkeytest.New(pkOrigin)
	ts.passkeySignUp(zero, "zero@example.com")
	for i := 0; i < 2; i++ {
		wantOK(t, ts.passkeyLogin(zero, "zero@example.com", n(0)))
	}
}

// TestPasskeyRegisterRejects: a credential that does not verify is 400
// INVALID_CREDENTIAL, creates no user and consumes the challenge.
func TestPasskeyRegisterRejects(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	cases := []struct {
		name  string
		tweak passkeytest.Tweak
		cred  json.RawMessage // instead of the authenticator's answer
	}{
		{"wrong origin", passkeytest.Tweak{Origin: "https://evil.example"}, nil},
		{"wrong rpId hash", passkeytest.Tweak{RPID: "evil.example"}, nil},
		{"get type", passkeytest.Tweak{Type: "webauthn.get"}, nil},
		{"other challenge", passkeytest.Tweak{Challenge: []byte("a challenge the server never issued")}, nil},
		{"not a credential", passkeytest.Tweak{}, json.RawMessage(`{"id":"AAAA","rawId":"AAAA","type":"public-key","response":{}}`)},
		{"empty object", passkeytest.Tweak{}, json.RawMessage(`{}`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A minute apart: failures that name no user are stored at
			// most 10 a minute per client, and each case checks the last.
			ts.Clock.Advance(time.Minute)
			c := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "reg@example.com"})
			good, _ := create(t, a, c)
			cred := tc.cred
			if cred == nil {
				cred, _ = create(t, a, c, tc.tweak)
			}
			wantError(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, c.ID, cred), 400, "INVALID_CREDENTIAL")
			ts.wantAuthEvent("register", "invalid_code")
			wantError(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, c.ID, good), 400, "CHALLENGE_EXPIRED")
		})
	}
	r := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID, nil)
	wantOK(t, r)
	if users := r.Body["users"].([]any); len(users) != 0 || len(ts.outboxSince(0)) != 0 {
		t.Fatalf("rejected sign-ups left users %v and events %v", users, ts.outboxSince(0))
	}
}

// TestPasskeyChallenges: challenges are single use and live 5 minutes; an
// unknown id, a used or expired one, and one of the other ceremony or
// another caller are all 400 CHALLENGE_EXPIRED.
func TestPasskeyChallenges(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	const addr = "ch@example.com"
	tok := str(t, ts.passkeySignUp(a, addr).Body, "token")

	t.Run("replayed", func(t *testing.T) {
		c := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{"email": addr})
		cred := assertion(t, a, c)
		wantOK(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, c.ID, cred))
		wantError(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, c.ID, cred), 400, "CHALLENGE_EXPIRED")
		ts.wantAuthEvent("login", "expired")

		c = ts.startCeremony("/api/v1/passkey/register/start", tok, map[string]any{})
		reg, _ := create(t, passkeytest.New(pkOrigin), c)
		wantOK(t, ts.verify("/api/v1/passkey/register/verify", tok, c.ID, reg))
		wantError(t, ts.verify("/api/v1/passkey/register/verify", tok, c.ID, reg), 400, "CHALLENGE_EXPIRED")
		ts.wantAuthEvent("register", "expired")
	})

	t.Run("expired", func(t *testing.T) {
		login := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{})
		signup := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "slow@example.com"})
		ts.Clock.Advance(4*time.Minute + 59*time.Second)
		early := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{})
		ts.Clock.Advance(time.Second) // login and signup are now 5 minutes old
		wantError(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, login.ID, assertion(t, a, login)), 400, "CHALLENGE_EXPIRED")
		ts.wantAuthEvent("login", "expired")
		cred, _ := create(t, passkeytest.New(pkOrigin), signup)
		wantError(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, signup.ID, cred), 400, "CHALLENGE_EXPIRED")
		ts.wantAuthEvent("register", "expired")
		wantOK(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, early.ID, assertion(t, a, early)))
	})

	t.Run("unknown", func(t *testing.T) {
		c := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{})
		cred := assertion(t, a, c)
		for _, id := range []string{"no-such-challenge", "00000000-0000-4000-8000-000000000000"} {
			wantError(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, id, cred), 400, "CHALLENGE_EXPIRED")
			wantError(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, id, cred), 400, "CHALLENGE_EXPIRED")
		}
	})

	t.Run("other ceremony or caller", func(t *testing.T) {
		login := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{})
		signup := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "mix@example.com"})
		add := ts.startCeremony("/api/v1/passkey/register/start", tok, map[string]any{})
		other := str(t, ts.login("someone@example.com").Body, "token")
		loginCred := assertion(t, a, login)
		key := passkeytest.New(pkOrigin)
		signupCred, _ := create(t, key, signup)
		addCred, _ := create(t, key, add)

		wantError(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, login.ID, signupCred), 400, "CHALLENGE_EXPIRED")
		wantError(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, signup.ID, loginCred), 400, "CHALLENGE_EXPIRED")
		wantError(t, ts.verify("/api/v1/passkey/register/verify", tok, signup.ID, signupCred), 400, "CHALLENGE_EXPIRED")
		wantError(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, add.ID, addCred), 400, "CHALLENGE_EXPIRED")
		wantError(t, ts.verify("/api/v1/passkey/register/verify", other, add.ID, addCred), 400, "CHALLENGE_EXPIRED")
		// None of those consumed the challenges of their rightful callers.
		wantOK(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, login.ID, loginCred))
		wantOK(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, signup.ID, signupCred))
		wantOK(t, ts.verify("/api/v1/passkey/register/verify", tok, add.ID, addCred))
	})
}

// TestPasskeyBadInput: malformed start and verify bodies get the 400
// envelope and change nothing: the challenge still works afterwards.
func TestPasskeyBadInput(t *testing.T) {
	t.Parallel()
	ts, a := newPasskeyServer(t)
	const addr = "bad@example.com"
	ts.passkeySignUp(a, addr)
	login := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{})
	signup := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "new@example.com"})
	events := len(ts.outboxSince(0))

	for _, c := range []struct {
		path string
		id   string
	}{{"/api/v1/passkey/login/verify", login.ID}, {"/api/v1/passkey/register/verify", signup.ID}} {
		// A malformed body or a missing challengeId is VALIDATION_ERROR; a
		// credential that is not a JSON object is a bad credential
		// (400 INVALID_CREDENTIAL). Neither consumes the
		// challenge.
		bodies := []struct {
			body any
			code string
		}{
			{map[string]any{}, "VALIDATION_ERROR"},
			{map[string]any{"credential": map[string]any{"id": "AAAA"}}, "VALIDATION_ERROR"},
			{map[string]any{"challengeId": 7, "credential": map[string]any{}}, "VALIDATION_ERROR"},
			{`{"challengeId": "` + c.id + `", "credential": {`, "VALIDATION_ERROR"},
			{`not json`, "VALIDATION_ERROR"},
			{`[]`, "VALIDATION_ERROR"},
			{map[string]any{"challengeId": c.id}, "INVALID_CREDENTIAL"},
			{map[string]any{"challengeId": c.id, "credential": "eyJpZCI6IkFBQUEifQ"}, "INVALID_CREDENTIAL"},
			{map[string]any{"challengeId": c.id, "credential": nil}, "INVALID_CREDENTIAL"},
			{map[string]any{"challengeId": c.id, "credential": []any{1}}, "INVALID_CREDENTIAL"},
			{map[string]any{"challengeId": c.id, "credential": 42}, "INVALID_CREDENTIAL"},
		}
		for _, b := range bodies {
			r := ts.do("POST", c.path, ts.Key, b.body)
			if r.Status != 400 || r.Body["code"] != b.code {
				t.Fatalf("%s with %v: %d %s, want 400 %s", c.path, b.body, r.Status, r.Raw, b.code)
			}
			wantError(t, r, 400, b.code)
		}
	}
	for _, b := range []any{map[string]any{}, map[string]any{"email": "not-an-address"}, map[string]any{"email": 5}, `[]`} {
		wantError(t, ts.do("POST", "/api/v1/passkey/register/start", ts.Key, b), 400, "VALIDATION_ERROR")
	}
	wantError(t, ts.do("POST", "/api/v1/passkey/login/start", ts.Key, map[string]any{"email": "not-an-address"}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("POST", "/api/v1/passkey/register/start", "", map[string]any{"email": addr}), 401, "MISSING_API_KEY")
	wantError(t, ts.do("POST", "/api/v1/passkey/login/start", "", map[string]any{}), 401, "MISSING_API_KEY")
	wantError(t, ts.do("POST", "/api/v1/passkey/register/verify", "not-a-jwt", map[string]any{}), 401, "INVALID_SESSION")
	wantError(t, ts.do("GET", "/api/v1/passkeys", ts.Key, nil), 401, "INVALID_SESSION")

	if n := len(ts.outboxSince(0)); n != events {
		t.Fatalf("bad input wrote %d events", n-events)
	}
	wantOK(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, login.ID, assertion(t, a, login)))
	cred, _ := create(t, passkeytest.New(pkOrigin), signup)
	wantOK(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, signup.ID, cred))
}

// TestPasskeyInternalError: a failure inside the service during sign-in
// is passkey sign-in's catch-all, 401 INTERNAL_ERROR; during
// registration it is the usual 500.
func TestPasskeyInternalError(t *testing.T) {
	t.Parallel()
	// The calls after the break pass the key check from the key and
	// project caches. On PostgreSQL a feed that goes stale (under load)
	// or tells a change late would empty them: the feed is kept fresh
	// and settled before the break.
	ts := newTestServerStore(t, store.Options{FeedStaleAfter: time.Hour})
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID,
		map[string]any{"allowedOrigins": []string{pkOrigin}, "rpId": pkRPID}))
	a := passkeytest.New(pkOrigin)
	ts.passkeySignUp(a, "int@example.com")
	login := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{})
	signup := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "int2@example.com"})
	loginCred := assertion(t, a, login)
	signupCred, _ := create(t, passkeytest.New(pkOrigin), signup)
	ts.settleFeed()
	ts.breakStore()
	wantError(t, ts.verify("/api/v1/passkey/login/verify", ts.Key, login.ID, loginCred), 401, "INTERNAL_ERROR")
	wantError(t, ts.verify("/api/v1/passkey/register/verify", ts.Key, signup.ID, signupCred), 500, "INTERNAL_ERROR")
}

// TestPasskeyRefusalSaysWhy: a ceremony refused for its origin or its
// relying party id says so in the error and in the log (a warning naming
// the project, the origin and what was expected), at registration and at
// sign-in; other refusals keep the generic text.
func TestPasskeyRefusalSaysWhy(t *testing.T) {
	t.Parallel()
	var logs testkit.Buffer
	ts := newTestServer(t, func(c *auth.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID,
		map[string]any{"allowedOrigins": []string{pkOrigin}, "rpId": pkRPID}))
	a := passkeytest.New(pkOrigin)
	ts.passkeySignUp(a, "why@example.com")

	for _, tc := range []struct {
		name, ceremony string
		tweak          passkeytest.Tweak
		text, log      string
	}{
		{"register from another origin", "register", passkeytest.Tweak{Origin: "http://x.example:8080"},
			"The passkey was created for origin http://x.example:8080, which is not an allowed origin of this project.", "passkey refused: origin not allowed"},
		{"register for another rpId", "register", passkeytest.Tweak{RPID: "other.example"},
			"The passkey is for another relying party id than this project's (example.com)", "passkey refused: relying party id does not match"},
		{"sign in from another origin", "login", passkeytest.Tweak{Origin: "https://evil.example"},
			"The passkey sign-in came from origin https://evil.example, which is not an allowed origin of this project.", "passkey refused: origin not allowed"},
		{"sign in for another rpId", "login", passkeytest.Tweak{RPID: "app.example.com"},
			"The passkey is for another relying party id than this project's (example.com)", "passkey refused: relying party id does not match"},
		{"sign in with a bad signature", "login", passkeytest.Tweak{BadSignature: true}, "The passkey response is not valid.", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(logs.String())
			var r *response
			if tc.ceremony == "register" {
				c := ts.startCeremony("/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "new-" + tc.ceremony + "@example.com"})
				cred, _ := create(t, passkeytest.New(pkOrigin), c, tc.tweak)
				r = ts.verify("/api/v1/passkey/register/verify", ts.Key, c.ID, cred)
			} else {
				c := ts.startCeremony("/api/v1/passkey/login/start", ts.Key, map[string]any{"email": "why@example.com"})
				r = ts.verify("/api/v1/passkey/login/verify", ts.Key, c.ID, assertion(t, a, c, tc.tweak))
			}
			wantError(t, r, 400, "INVALID_CREDENTIAL")
			if got := str(t, r.Body, "error"); !strings.HasPrefix(got, tc.text) {
				t.Fatalf("error %q, want %q", got, tc.text)
			}
			logged := logs.String()[before:]
			if tc.log == "" {
				if strings.Contains(logged, "passkey refused") {
					t.Fatalf("log:\n%s", logged)
				}
				return
			}
			if !strings.Contains(logged, "level=WARN msg=\""+tc.log+"\"") || !strings.Contains(logged, "project="+ts.Project.ID) || !strings.Contains(logged, "ceremony="+tc.ceremony) {
				t.Fatalf("log lacks a warning %q for project and ceremony:\n%s", tc.log, logged)
			}
			if tc.tweak.Origin != "" && !strings.Contains(logged, "origin="+tc.tweak.Origin) {
				t.Fatalf("log does not name the origin:\n%s", logged)
			}
		})
	}
}
