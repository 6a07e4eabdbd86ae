package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"latchkey/auth"
)

// TestDemoRoutes checks the demo page's files and the server-side rules of
// its API route over plain HTTP: live keys refused whatever the page's
// script does, only the demo's own calls forwarded.
func TestDemoRoutes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for path, ctype := range map[string]string{"/demo/passkeys": "text/html", "/demo/passkeys.js": "text/javascript"} {
		r := ts.do("GET", path, "", nil)
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), ctype) {
			t.Fatalf("GET %s: status=%d type=%q", path, r.Status, r.Header.Get("Content-Type"))
		}
		if csp := r.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Fatalf("GET %s: CSP %q", path, csp)
		}
	}

	live := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live"})
	before := len(ts.outbox())
	for _, c := range []struct{ method, path string }{
		{"POST", "/demo/passkeys/api/v1/passkey/register/start"},
		{"POST", "/demo/passkeys/api/v1/passkey/login/start"},
		{"POST", "/demo/passkeys/api/v1/passkey/login/verify"},
	} {
		wantError(t, ts.do(c.method, c.path, live, map[string]any{"email": "live@example.com"}), 403, "LIVE_KEY_REFUSED")
	}
	// The same key works on the API itself: the demo route refuses it.
	wantOK(t, ts.do("POST", "/api/v1/passkey/register/start", live, map[string]any{"email": "live@example.com"}))
	if n := len(ts.outbox()); n != before {
		t.Fatalf("outbox grew from %d to %d events", before, n)
	}

	// A test key goes through to the real handlers, errors included.
	r := ts.do("POST", "/demo/passkeys/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "ada@example.com"})
	wantOK(t, r)
	if str(t, r.Body, "challengeId") == "" || obj(t, obj(t, r.Body, "options"), "publicKey")["challenge"] == nil {
		t.Fatalf("register/start through the demo: %s", r.Raw)
	}
	wantError(t, ts.do("POST", "/demo/passkeys/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "bad"}), 400, "VALIDATION_ERROR")
	wantError(t, ts.do("POST", "/demo/passkeys/api/v1/passkey/register/verify", ts.Key, map[string]any{"challengeId": "nope", "credential": map[string]any{}}), 400, "CHALLENGE_EXPIRED")
	wantError(t, ts.do("GET", "/demo/passkeys/api/v1/passkeys", ts.Key, nil), 401, "INVALID_SESSION")
	tok := str(t, ts.login("bea@example.com").Body, "token")
	r = ts.do("GET", "/demo/passkeys/api/v1/passkeys", tok, nil)
	wantOK(t, r)
	if ps, ok := r.Body["passkeys"].([]any); !ok || len(ps) != 0 {
		t.Fatalf("passkeys: %s", r.Raw)
	}
	wantError(t, ts.do("DELETE", "/demo/passkeys/api/v1/passkeys/nope", tok, nil), 404, "PASSKEY_NOT_FOUND")

	// Only the demo's calls are forwarded.
	for _, c := range []struct{ method, path string }{
		{"POST", "/demo/passkeys/api/v1/otp/send"},
		{"GET", "/demo/passkeys/api/v1/me"},
		{"GET", "/demo/passkeys/api/v1/passkeys/by-external?externalUserId=x"},
		{"DELETE", "/demo/passkeys/api/v1/passkeys/by-external/x"},
		{"DELETE", "/demo/passkeys/api/v1/passkeys/a/b"},
		{"GET", "/demo/passkeys/api/v1/admin/projects"},
		{"POST", "/demo/passkeys/api/v1/passkey/../admin/keys"},
	} {
		wantError(t, ts.do(c.method, c.path, ts.Key, map[string]any{"email": "x@example.com"}), 404, "NOT_FOUND")
	}
}

// demoPage drives the passkey demo page in Chromium.
type demoPage struct {
	t   *testing.T
	ctx context.Context
}

func (p demoPage) set(sel, v string) {
	p.t.Helper()
	setValue(p.t, p.ctx, sel, v)
}

// click clears the status line, presses a button and waits until the
// status line contains want, failing at once on another error.
func (p demoPage) click(button, want string) string {
	p.t.Helper()
	do(p.t, p.ctx, "click "+button,
		chromedp.Evaluate[chromedp.Void](`(s => { s.textContent = ""; s.className = ""; })(document.getElementById("status"))`),
		chromedp.Click(chromedp.CSS(button)))
	js := fmt.Sprintf(`(s => (s.textContent.includes(%q) || s.className === "err") && s.textContent)(document.getElementById("status"))`, want)
	got, err := chromedp.Run(p.ctx, chromedp.Poll[string](js,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(10*time.Second)))
	if err != nil {
		p.t.Fatalf("%s: waiting for %q: %v; the status reads %q", button, want, explain(err), p.text("#status"))
	}
	if !strings.Contains(got, want) {
		p.t.Fatalf("%s: the status reads %q, want %q", button, got, want)
	}
	return got
}

func (p demoPage) text(sel string) string {
	p.t.Helper()
	return strings.TrimSpace(get(p.t, p.ctx, "text of "+sel, chromedp.TextContent(chromedp.CSS(sel))))
}

// authenticatorCredentials returns the virtual authenticator's credentials
// by base64url id.
func authenticatorCredentials(t *testing.T, ctx context.Context, id webauthn.AuthenticatorID) map[string]*webauthn.Credential {
	t.Helper()
	res, err := chromedp.Call(ctx, webauthn.GetCredentials, webauthn.GetCredentialsParams{AuthenticatorID: id})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*webauthn.Credential{}
	for _, c := range res.Credentials {
		out[base64.RawURLEncoding.EncodeToString(c.CredentialID)] = c
	}
	return out
}

// passkeyIDs lists the credential ids GET /api/v1/passkeys returns for token.
func passkeyIDs(t *testing.T, ts *testServer, token string) []string {
	t.Helper()
	r := ts.do("GET", "/api/v1/passkeys", token, nil)
	wantOK(t, r)
	var ids []string
	for _, p := range r.Body["passkeys"].([]any) {
		ids = append(ids, str(t, p.(map[string]any), "credentialId"))
	}
	return ids
}

var credInStatus = regexp.MustCompile(`passkey ([A-Za-z0-9_-]{16,})\.`)

// TestDemoPasskeysInChromium signs up, signs in (by email and
// discoverable), lists, removes and adds passkeys on the demo page in
// headless Chromium with a CDP virtual authenticator, against the real
// server, checking the page and the server's state at each step.
func TestDemoPasskeysInChromium(t *testing.T) {
	t.Parallel()
	start := time.Now()
	// http://localhost is a secure context, so WebAuthn works without TLS;
	// the relying party must then be "localhost" with that origin. The
	// server's base URL names it too, for projects without origins.
	ts := newTestServer(t, func(c *auth.Config) { c.BaseURL = strings.Replace(c.BaseURL, "127.0.0.1", "localhost", 1) })
	origin := ts.Svc.BaseURL()
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{origin}, "rpId": "localhost"}))
	live := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live"})

	ctx := newBrowser(t)
	p := demoPage{t, ctx}
	do(t, ctx, "open the demo", chromedp.Navigate(origin+"/demo/passkeys"), chromedp.WaitVisible(chromedp.ID("signup")))
	if _, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	va, err := chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
		Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
		HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
	}})
	if err != nil {
		t.Fatal(err)
	}

	// A live key: the page refuses it, and so does the server when the
	// page's check is bypassed. Nothing is created.
	p.set("#key", live)
	p.set("#email", "ada@example.com")
	p.click("#signup", "Live keys are refused")
	type fetchResult struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	}
	got := get(t, ctx, "fetch with a live key", chromedp.Evaluate[fetchResult](`fetch("/demo/passkeys/api/v1/passkey/register/start", {
		method: "POST", headers: {Authorization: "Bearer `+live+`", "Content-Type": "application/json"},
		body: JSON.stringify({email: "ada@example.com"})}).then(async r => ({status: r.status, code: (await r.json()).code}))`, chromedp.EvalAwaitPromise))
	if got != (fetchResult{403, "LIVE_KEY_REFUSED"}) {
		t.Fatalf("live key from the page: %+v, want 403 LIVE_KEY_REFUSED", got)
	}
	if n := len(authenticatorCredentials(t, ctx, va.AuthenticatorID)); n != 0 {
		t.Fatalf("authenticator holds %d credentials after refused sign-up", n)
	}
	users := ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID, nil)
	wantOK(t, users)
	if n := len(users.Body["users"].([]any)); n != 0 {
		t.Fatalf("%d users after refused sign-up", n)
	}

	// Sign up with a passkey.
	p.set("#key", ts.Key)
	status := p.click("#signup", "Signed up as ada@example.com")
	credID := credInStatus.FindStringSubmatch(status)
	if credID == nil {
		t.Fatalf("no credential id in %q", status)
	}
	userID, token := p.text("#user-id"), p.text("#token")
	users = ts.admin("GET", "/api/v1/admin/users?projectId="+ts.Project.ID+"&email=ada@example.com", nil)
	wantOK(t, users)
	if us := users.Body["users"].([]any); len(us) != 1 || us[0].(map[string]any)["id"] != userID {
		t.Fatalf("users after sign-up: %s (page shows user %s)", users.Raw, userID)
	}
	if ids := passkeyIDs(t, ts, token); len(ids) != 1 || ids[0] != credID[1] {
		t.Fatalf("server passkeys %v, page shows %s", ids, credID[1])
	}
	creds := authenticatorCredentials(t, ctx, va.AuthenticatorID)
	if c := creds[credID[1]]; len(creds) != 1 || c == nil || !c.IsResidentCredential || c.RpID != "localhost" || string(c.UserHandle) != userID {
		t.Fatalf("authenticator credentials after sign-up: %+v", creds)
	}
	wantError(t, ts.do("POST", "/api/v1/passkey/register/start", ts.Key, map[string]any{"email": "ada@example.com"}), 409, "USER_EXISTS")

	// Sign in by email, then with a discoverable credential.
	p.click("#signin-email", "Signed in as ada@example.com with a passkey (by email)")
	byEmail := p.text("#token")
	if byEmail == token || p.text("#user-id") != userID {
		t.Fatalf("sign-in by email: token unchanged or user %s", p.text("#user-id"))
	}
	p.set("#email", "")
	p.click("#signin-discoverable", "Signed in as ada@example.com with a passkey (discoverable)")
	discoverable := p.text("#token")
	for _, tok := range []string{byEmail, discoverable} {
		s := ts.do("GET", "/api/v1/session", tok, nil)
		wantOK(t, s)
		if obj(t, s.Body, "session")["userId"] != userID {
			t.Fatalf("session of a passkey login: %s", s.Raw)
		}
	}
	if c := authenticatorCredentials(t, ctx, va.AuthenticatorID)[credID[1]]; c == nil || c.SignCount < 2 {
		t.Fatalf("sign count after two logins: %+v", c)
	}
	evs := ts.admin("GET", "/api/v1/admin/events?projectId="+ts.Project.ID, nil)
	wantOK(t, evs)
	logins := 0
	for _, e := range evs.Body["events"].([]any) {
		e := e.(map[string]any)
		if e["method"] == "passkey" && e["action"] == "login" && e["success"] == true && e["userId"] == userID {
			logins++
		}
	}
	if logins != 2 {
		t.Fatalf("%d successful passkey login events, want 2", logins)
	}

	// List: the page shows the server's passkey.
	p.click("#list", "1 passkey.")
	row := p.text("#passkeys tbody tr[data-credential-id] code")
	if row != credID[1] {
		t.Fatalf("listed %q, want %q", row, credID[1])
	}

	// Remove it, then add a new one to the signed-in account.
	p.click("#passkeys tbody button.remove", "Removed the passkey. 0 left.")
	if ids := passkeyIDs(t, ts, discoverable); len(ids) != 0 {
		t.Fatalf("server passkeys after removal: %v", ids)
	}
	status = p.click("#add", "Added passkey")
	added := credInStatus.FindStringSubmatch(status)
	if added == nil || added[1] == credID[1] {
		t.Fatalf("add: %q", status)
	}
	if ids := passkeyIDs(t, ts, discoverable); len(ids) != 1 || ids[0] != added[1] {
		t.Fatalf("server passkeys after add: %v, want [%s]", ids, added[1])
	}
	p.set("#email", "ada@example.com")
	p.click("#signin-email", "Signed in as ada@example.com")

	// Sign out: the page's session token stops working.
	last := p.text("#token")
	p.click("#signout", "Signed out")
	wantError(t, ts.do("GET", "/api/v1/session", last, nil), 401, "INVALID_SESSION")

	// A project without allowed origins: the relying party is the base
	// URL's host and origin.
	r := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "No origins"})
	wantOK(t, r)
	bare := obj(t, r.Body, "project")
	if bare["rpId"] != "localhost" || len(bare["allowedOrigins"].([]any)) != 0 {
		t.Fatalf("project without origins: %s", r.Raw)
	}
	bareKey := ts.createKey(map[string]any{"projectId": bare["id"], "mode": "test"})
	p.set("#key", bareKey)
	p.set("#email", "bo@example.com")
	p.click("#signup", "Signed up as bo@example.com")
	p.click("#signin-email", "Signed in as bo@example.com")
	if uid := p.text("#user-id"); uid == userID || len(passkeyIDs(t, ts, p.text("#token"))) != 1 {
		t.Fatalf("second project's user %s", uid)
	}
	t.Logf("passkey demo in Chromium: %v", time.Since(start).Round(time.Millisecond))
}
