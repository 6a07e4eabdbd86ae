package httpapi_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/passkeytest"
)

// The account page over real HTTP, driven by a browser with a cookie
// jar: the sign-in that comes back to it, each change through the
// API's use case (its events), step-up on a stale session, and stale
// forms.

// accountURL is the account page of the tests' project.
func (ts *testServer) accountURL() string { return ts.issuer(ts.Project.ID) + auth.AccountPath }

// accountSignIn opens the account page in b without a session: the
// sign-in page, then addr's emailed code; it returns the account page.
func (ts *testServer) accountSignIn(b *browser, addr string) *webPage {
	ts.t.Helper()
	pg := b.signIn(b.get(ts.accountURL()), addr)
	if pg.Status != http.StatusOK || pg.URL.String() != ts.accountURL() || !strings.Contains(pg.Body, `id="account-email">`+addr+`<`) {
		ts.t.Fatalf("after signing in, not the account page: %d %s %s", pg.Status, pg.URL, pg.Body)
	}
	return pg
}

// wantPanel fails unless pg has status and contains every one of texts.
func wantPanel(t *testing.T, what string, pg *webPage, status int, texts ...string) {
	t.Helper()
	if pg.Status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, pg.Status, status, pg.Body)
	}
	for _, s := range texts {
		if !strings.Contains(pg.Body, s) {
			t.Fatalf("%s: no %q on the page: %s", what, s, pg.Body)
		}
	}
}

// eventTypes returns the types of the outbox events after the first n.
func (ts *testServer) eventTypes(n int) []string {
	var out []string
	for _, e := range ts.outboxSince(n) {
		out = append(out, e.Type)
	}
	return out
}

// TestAccountPageSessions: without a session the page sends the browser
// to the sign-in page, which brings it back signed in (a session of
// method account, marked as this browser); the page's headers (CSP with
// a nonce, data: images, no framing, no caching); ending another
// session revokes it (session.revoked), ending all others too; ending
// this one signs out (the cookie cleared, the page asks for a sign-in
// again).
func TestAccountPageSessions(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const addr = "ses@example.com"
	b := ts.newBrowser()
	first := b.get(ts.accountURL())
	if first.URL.Path != "/oidc/"+ts.Project.ID+auth.ForwardAuthSignInPath || first.URL.Query().Get("rd") != ts.accountURL() {
		t.Fatalf("without a session: answered from %s, want the sign-in page with rd", first.URL)
	}
	other := str(t, ts.login(addr).Body, "token")
	third := str(t, ts.login(addr).Body, "token")
	pg := ts.accountSignIn(b, addr)
	h := pg.Header
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'nonce-", "img-src data:", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if h.Get("Cache-Control") != "no-store" || h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers %v", h)
	}
	if strings.Count(pg.Body, `action="`+ts.accountURL()+`/session-end"`) != 3 || strings.Count(pg.Body, "This browser") != 1 {
		t.Fatalf("want three sessions, this one marked: %s", pg.Body)
	}
	if m := b.sessionMethod(ts.Project.ID); m != "account" {
		t.Errorf("the page's session has method %q, want account", m)
	}

	n := len(ts.outbox())
	done := b.submitTo(pg, "/session-end", map[string]string{"sessionId": ts.sessionID(other)})
	wantPanel(t, "end another session", done, http.StatusOK, "The session was ended.")
	wantError(t, ts.do("GET", "/api/v1/session", other, nil), http.StatusUnauthorized, "INVALID_SESSION")
	if got := ts.eventTypes(n); !slices.Equal(got, []string{"session.revoked"}) {
		t.Errorf("events %v, want session.revoked", got)
	}
	// Another user's session, or one that does not exist: refused, nothing ended.
	stranger := str(t, ts.login("stranger@example.com").Body, "token")
	wantPanel(t, "end a stranger's session", b.submitTo(done, "/session-end", map[string]string{"sessionId": ts.sessionID(stranger)}),
		http.StatusNotFound, `class="error"`)
	wantOK(t, ts.do("GET", "/api/v1/session", stranger, nil))

	done = b.submitTo(done, "/sessions-end-others", nil)
	wantPanel(t, "end the others", done, http.StatusOK, "Your other sessions were ended.")
	wantError(t, ts.do("GET", "/api/v1/session", third, nil), http.StatusUnauthorized, "INVALID_SESSION")

	tok := b.ssoToken(ts.Project.ID)
	out := b.submitTo(done, "/session-end", nil)
	wantPanel(t, "sign out", out, http.StatusOK, "You are signed out.")
	if b.ssoToken(ts.Project.ID) != "" {
		t.Error("the sign-on cookie survived the sign-out")
	}
	wantError(t, ts.do("GET", "/api/v1/session", tok, nil), http.StatusUnauthorized, "INVALID_SESSION")
	if again := b.get(ts.accountURL()); again.URL.Path != "/oidc/"+ts.Project.ID+auth.ForwardAuthSignInPath {
		t.Errorf("signed out, the page answered from %s", again.URL)
	}
}

// TestAccountPageStaleForm: a form without its CSRF token, with
// another browser's, or older than an hour answers a page that says
// the form is out of date (403), and changes nothing.
func TestAccountPageStaleForm(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const addr = "stale@example.com"
	other := str(t, ts.login(addr).Body, "token")
	b := ts.newBrowser()
	pg := ts.accountSignIn(b, addr)
	end := map[string]string{"sessionId": ts.sessionID(other)}
	stale := func(what string, got *webPage) {
		t.Helper()
		wantPanel(t, what, got, http.StatusForbidden, "This form is out of date", "Reload the account page")
		wantOK(t, ts.do("GET", "/api/v1/session", other, nil))
	}
	stale("no token", b.submitTo(pg, "/session-end", map[string]string{"sessionId": end["sessionId"], "csrf": "\x00"}))
	stale("a forged token", b.submitTo(pg, "/session-end", map[string]string{"sessionId": end["sessionId"], "csrf": "1.abc"}))
	// Another browser (its own CSRF cookie) posting this page's form.
	eve := ts.newBrowser()
	eve.get(ts.accountURL())
	stale("another browser's form", eve.submitTo(pg, "/session-end", end))
	// The page's own form, an hour and a minute later.
	ts.Clock.Advance(auth.AccountFormLifetime + time.Minute)
	stale("an expired form", b.submitTo(pg, "/session-end", end))
	// Reloaded, it works.
	fresh := b.get(ts.accountURL())
	wantPanel(t, "a fresh form", b.submitTo(fresh, "/session-end", end), http.StatusOK, "The session was ended.")
}

// TestAccountPageTOTPAndBackupCodes: a fresh sign-in (no factor yet)
// sets up TOTP on the page (the QR code as a data: image, the key, a
// wrong code refused, the right one enrolls: totp.enrolled); ten
// minutes later making backup codes asks for a step-up, which a wrong
// TOTP code does not give and the right one does; the codes are then
// shown once (backup_codes.generated) and work for a sign-in.
func TestAccountPageTOTPAndBackupCodes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const addr = "totp-page@example.com"
	b := ts.newBrowser()
	pg := ts.accountSignIn(b, addr)
	wantPanel(t, "before", pg, http.StatusOK, "Not set up.", "0 unused backup codes")
	n := len(ts.outbox())
	setup := b.submitTo(pg, "/totp-enroll", nil)
	wantPanel(t, "enroll", setup, http.StatusOK, `<img src="data:image/png;base64,`, `id="totp-secret"`)
	secret := regexp.MustCompile(`id="totp-secret">([A-Z2-7]+)<`).FindStringSubmatch(setup.Body)[1]
	wrong := b.submitTo(setup, "/totp-confirm", map[string]string{"code": ts.wrongTOTP(secret)})
	wantPanel(t, "a wrong code", wrong, http.StatusUnauthorized, `class="error"`, "Enter the current code")
	done := b.submitTo(wrong, "/totp-confirm", map[string]string{"code": ts.totpCode(secret, 0)})
	wantPanel(t, "confirm", done, http.StatusOK, "Your authenticator app is set up.", "Set up: sign-ins ask for its code.")
	if got := ts.eventTypes(n); !slices.Contains(got, "totp.enrolled") {
		t.Errorf("events %v, want totp.enrolled", got)
	}

	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	done = b.get(ts.accountURL())
	step := b.submitTo(done, "/backup-codes", nil)
	wantPanel(t, "backup codes on a stale session", step, http.StatusForbidden, "Confirm it is you", `action="`+ts.accountURL()+`/stepup-totp"`)
	if strings.Contains(step.Body, "stepup-signin") {
		t.Errorf("an account with TOTP is offered a new sign-in as step-up: %s", step.Body)
	}
	again := b.submitTo(step, "/stepup-totp", map[string]string{"code": ts.wrongTOTP(secret)})
	wantPanel(t, "a wrong step-up code", again, http.StatusUnauthorized, "Confirm it is you", `class="error"`)
	ts.Clock.Advance(30 * time.Second)
	ok := b.submitTo(again, "/stepup-totp", map[string]string{"code": ts.totpCode(secret, 0)})
	wantPanel(t, "step-up", ok, http.StatusOK, "you may now make the change")
	n = len(ts.outbox())
	codes := b.submitTo(ok, "/backup-codes", nil)
	wantPanel(t, "backup codes", codes, http.StatusOK, "Your new backup codes", `id="backup-codes"`)
	list := regexp.MustCompile(`<li>([^<]+)</li>`).FindAllStringSubmatch(codes.Body, -1)
	if len(list) != 10 {
		t.Fatalf("%d codes shown, want 10: %s", len(list), codes.Body)
	}
	if got := ts.eventTypes(n); !slices.Equal(got, []string{"backup_codes.generated"}) {
		t.Errorf("events %v, want backup_codes.generated", got)
	}
	wantPanel(t, "after", b.get(ts.accountURL()), http.StatusOK, "10 unused backup codes")
	email := addr
	wantOK(t, ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": email, "code": list[0][1]}))
}

// TestAccountPageAddress: a change of address on the page mails a code
// to the new address and asks for it (a wrong code refused); the right
// one changes the address (user.updated). On an account without a
// factor, a stale session is asked to sign in again, which ends it and
// comes back to the page after the new sign-in.
func TestAccountPageAddress(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const addr, next = "old@example.com", "new@example.com"
	b := ts.newBrowser()
	pg := ts.accountSignIn(b, addr)
	n := len(ts.outbox())
	confirm := b.submitTo(pg, "/email", map[string]string{"email": next})
	wantPanel(t, "change", confirm, http.StatusOK, "We sent a code to "+next)
	wrong := b.submitTo(confirm, "/email-confirm", map[string]string{"code": "000000"})
	wantPanel(t, "a wrong code", wrong, http.StatusUnauthorized, `class="error"`, "We sent a code to "+next)
	done := b.submitTo(wrong, "/email-confirm", map[string]string{"code": ts.lastMail(next).Code})
	wantPanel(t, "confirm", done, http.StatusOK, "Your email address was changed", `id="account-email">`+next+`<`)
	if got := ts.eventTypes(n); !slices.Contains(got, "user.updated") {
		t.Errorf("events %v, want user.updated", got)
	}

	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	tok := b.ssoToken(ts.Project.ID)
	step := b.submitTo(b.get(ts.accountURL()), "/email", map[string]string{"email": "third@example.com"})
	wantPanel(t, "a stale session", step, http.StatusForbidden, "Confirm it is you", "Sign in again")
	signin := b.submitTo(step, "/stepup-signin", nil)
	if signin.URL.Path != "/oidc/"+ts.Project.ID+auth.ForwardAuthSignInPath {
		t.Fatalf("sign in again: answered from %s", signin.URL)
	}
	wantError(t, ts.do("GET", "/api/v1/session", tok, nil), http.StatusUnauthorized, "INVALID_SESSION")
	back := b.signIn(signin, next)
	if back.URL.String() != ts.accountURL() {
		t.Fatalf("after the new sign-in: %s", back.URL)
	}
	wantPanel(t, "after signing in again", b.submitTo(back, "/email", map[string]string{"email": "third@example.com"}),
		http.StatusOK, "We sent a code to third@example.com")
}

// TestAccountPagePasskeys: with the base URL on localhost the page adds
// a passkey through the browser's ceremony (its script allowed by the
// CSP's nonce; passkey.registered), removes it (passkey.removed), and a
// stale session of an account with a passkey steps up with it: a
// passkey sign-in that replaces the browser's session.
func TestAccountPagePasskeys(t *testing.T) {
	t.Parallel()
	ts := newLocalhostServer(t)
	a := passkeytest.New(ts.URL)
	const addr = "keys@example.com"
	b := ts.newBrowser()
	pg := ts.accountSignIn(b, addr)
	wantPanel(t, "before", pg, http.StatusOK, "No passkeys yet.")
	n := len(ts.outbox())
	add := b.submitTo(pg, "/passkey-add", nil)
	wantPanel(t, "add", add, http.StatusOK, `data-mode="create"`, `<script nonce="`, "Create the passkey")
	cred, _, err := a.Create([]byte(unescape(accountOptions.FindStringSubmatch(add.Body)[1])))
	if err != nil {
		t.Fatal(err)
	}
	done := b.submitTo(add, "/passkey-finish", map[string]string{"credential": string(cred)})
	wantPanel(t, "finish", done, http.StatusOK, "The passkey was added.", "/passkey-remove")
	if got := ts.eventTypes(n); !slices.Contains(got, "passkey.registered") {
		t.Errorf("events %v, want passkey.registered", got)
	}
	// A forged credential: refused with the reason, nothing added.
	add = b.submitTo(done, "/passkey-add", nil)
	forged, _, _ := a.Create([]byte(unescape(accountOptions.FindStringSubmatch(add.Body)[1])), passkeytest.Tweak{Origin: "https://evil.example"})
	wantPanel(t, "forged", b.submitTo(add, "/passkey-finish", map[string]string{"credential": string(forged)}), http.StatusBadRequest, `class="error"`)

	// Stale: removing the passkey needs a step-up, by the passkey.
	ts.Clock.Advance(auth.StepUpWindow + time.Minute)
	old := b.ssoToken(ts.Project.ID)
	step := b.submitTo(b.get(ts.accountURL()), "/passkey-remove", nil)
	wantPanel(t, "remove on a stale session", step, http.StatusForbidden, "Confirm it is you", `data-mode="get"`, "Confirm with a passkey")
	assertion, _, err := a.Get([]byte(unescape(accountOptions.FindStringSubmatch(step.Body)[1])))
	if err != nil {
		t.Fatal(err)
	}
	ok := b.submitTo(step, "/stepup-passkey", map[string]string{"credential": string(assertion)})
	wantPanel(t, "passkey step-up", ok, http.StatusOK, "you may now make the change")
	if tok := b.ssoToken(ts.Project.ID); tok == "" || tok == old {
		t.Error("the passkey step-up did not replace the browser's session")
	}
	wantError(t, ts.do("GET", "/api/v1/session", old, nil), http.StatusUnauthorized, "INVALID_SESSION")
	n = len(ts.outbox())
	gone := b.submitTo(ok, "/passkey-remove", nil)
	wantPanel(t, "remove", gone, http.StatusOK, "The passkey was removed.", "No passkeys yet.")
	if got := ts.eventTypes(n); !slices.Equal(got, []string{"passkey.removed"}) {
		t.Errorf("events %v, want passkey.removed", got)
	}
}

// accountOptions reads the account page's passkey ceremony.
var accountOptions = regexp.MustCompile(`data-options="([^"]+)"`)
