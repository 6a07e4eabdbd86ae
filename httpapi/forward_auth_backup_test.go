package httpapi_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
)

// backupLink finds the second-factor page's "Use a backup code" link.
var backupLink = regexp.MustCompile(`<a href="([^"]+method=backup)">Use a backup code</a>`)

// TestForwardAuthBackupCode: a user with TOTP and backup codes, asked
// for the second factor on a proxied app's sign-in, may use a backup
// code instead (a link on the page, whose form links back to the
// authenticator app): the API's backup-code sign-in, so a wrong code is
// refused on the form and counted (401, an event of method backup_code
// failed), the right one signs in anew (session.created of method
// forward-auth for the webhooks, an event of method backup_code
// succeeded) and the browser goes back to the app with a cookie the
// check takes; the code is used up, and five failures lock the address
// out (429). An address whose rule is mfa takes no backup code: the page
// does not offer it, and a posted one is refused (403).
func TestForwardAuthBackupCode(t *testing.T) {
	t.Parallel()
	ts := newFwdServer(t)
	pid := ts.Project.ID
	const addr = "backup@example.com"
	tok := str(t, ts.login(addr).Body, "token")
	ts.enrollTOTP(tok)
	codes := ts.backupCodes(tok)
	signin := ts.faBase() + "/oidc/" + pid + "/signin?rd="
	rd := "http://app." + faDomain + "/page"
	ts.Clock.Advance(2 * time.Minute) // past the email code's send throttle

	b := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	mfa := b.signIn(b.get(signin+url.QueryEscape(rd)), addr)
	link := backupLink.FindStringSubmatch(mfa.Body)
	if mfa.Status != http.StatusOK || !strings.Contains(mfa.Body, `name="method" value="totp"`) || link == nil || strings.Contains(mfa.Body, "Use a text message") {
		t.Fatalf("second-factor page: %d %s", mfa.Status, mfa.Body)
	}
	form := b.get(unescape(link[1]))
	if form.Status != http.StatusOK || !strings.Contains(form.Body, `name="method" value="backup"`) ||
		!strings.Contains(form.Body, "Enter one of your backup codes") || !strings.Contains(form.Body, "Use your authenticator app</a>") {
		t.Fatalf("backup code page: %d %s", form.Status, form.Body)
	}
	user := ts.userByEmail(addr)
	failed := func() int {
		n := 0
		for _, e := range ts.events("?limit=1000") {
			if e["method"] == "backup_code" && e["action"] == "verify" && e["success"] == false && e["userId"] == user.ID {
				n++
			}
		}
		return n
	}
	wrong := b.submit(form, map[string]string{"code": "AAAAA-AAAAA"})
	if wrong.Status != http.StatusUnauthorized || !strings.Contains(wrong.Body, `class="error"`) || !strings.Contains(wrong.Body, `name="method" value="backup"`) {
		t.Fatalf("wrong backup code: %d %s", wrong.Status, wrong.Body)
	}
	if failed() != 1 {
		t.Errorf("%d failed backup_code events after a wrong code, want 1", failed())
	}
	wantError(t, ts.fwdCheck("127.0.0.1", pid, fwdHeaders(rd), b.cookie(pid)), http.StatusFound, "SIGN_IN_REQUIRED")

	n := len(ts.outbox())
	before := b.sso(pid)
	back := b.submit(wrong, map[string]string{"code": codes[0]})
	if back.Status != http.StatusSeeOther || back.Location != rd {
		t.Fatalf("after the backup code: %d %s %s", back.Status, back.Location, back.Body)
	}
	if b.sso(pid) == before {
		t.Error("the backup code did not sign in anew")
	}
	wantIdentity(t, ts.fwdCheck("127.0.0.1", pid, fwdHeaders(rd), b.cookie(pid)), user, "")
	var created bool
	for _, e := range ts.outboxSince(n) {
		created = created || (e.Type == "session.created" && e.Data["method"] == "forward-auth" && e.Data["user_id"] == user.ID)
	}
	if !created {
		t.Errorf("events %v, want session.created of method forward-auth", ts.eventTypes(n))
	}
	ok := false
	for _, e := range ts.events("?limit=1000") {
		ok = ok || (e["method"] == "backup_code" && e["action"] == "verify" && e["success"] == true && e["userId"] == user.ID)
	}
	if !ok {
		t.Error("no successful backup_code event")
	}

	// The code is used up; five failures lock the address out.
	other := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	ts.Clock.Advance(2 * time.Minute)
	pg := other.get(unescape(backupLink.FindStringSubmatch(other.signIn(other.get(signin+url.QueryEscape(rd)), addr).Body)[1]))
	for i, c := range []string{codes[0], "BBBBB-BBBBB", "CCCCC-CCCCC", "DDDDD-DDDDD"} {
		if pg = other.submit(pg, map[string]string{"code": c}); pg.Status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d %s", i+2, pg.Status, pg.Body)
		}
	}
	if failed() != 5 {
		t.Errorf("%d failed backup_code events, want 5", failed())
	}
	locked := other.submit(pg, map[string]string{"code": codes[1]})
	if locked.Status != http.StatusTooManyRequests || !strings.Contains(locked.Body, `class="error"`) {
		t.Fatalf("after five failures: %d %s", locked.Status, locked.Body)
	}
	wantError(t, ts.fwdCheck("127.0.0.1", pid, fwdHeaders(rd), other.cookie(pid)), http.StatusFound, "SIGN_IN_REQUIRED")

	// An mfa address: no backup code offered, a posted one refused.
	ts.Clock.Advance(auth.BackupFailWindow)
	admin := "http://app." + faDomain + "/admin/x"
	strict := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	mfa = strict.signIn(strict.get(signin+url.QueryEscape(admin)), addr)
	if mfa.Status != http.StatusOK || backupLink.MatchString(mfa.Body) {
		t.Fatalf("mfa address's second-factor page: %d %s", mfa.Status, mfa.Body)
	}
	refused := strict.submit(mfa, map[string]string{"method": "backup", "code": codes[1]})
	if refused.Status != http.StatusForbidden || !strings.Contains(refused.Body, "A backup code cannot be used here") {
		t.Fatalf("a backup code for an mfa address: %d %s", refused.Status, refused.Body)
	}
}

// TestAccountPageBackupCode: an account whose only second factor is a
// phone (texted a code as the sign-in's second-factor page opens) may
// sign in to the account page with a backup code instead, having lost
// the phone: the page opens on a session of method account, with one
// code fewer left.
func TestAccountPageBackupCode(t *testing.T) {
	t.Parallel()
	ts, fake := newSMSServer(t)
	const addr, phone = "lost-phone@example.com", "+15551230049"
	tok := str(t, ts.login(addr).Body, "token")
	ts.enrollPhone(fake, tok, phone)
	codes := ts.backupCodes(tok)
	ts.Clock.Advance(2 * time.Minute)

	b := ts.newBrowser()
	n := fake.texts()
	mfa := b.signIn(b.get(ts.accountURL()), addr)
	wantPanel(t, "after the emailed code", mfa, http.StatusOK, "We texted a code to your phone", `name="method" value="sms"`, "Use a backup code")
	link := backupLink.FindStringSubmatch(mfa.Body)
	form := b.get(unescape(link[1]))
	wantPanel(t, "the backup code form", form, http.StatusOK, `name="method" value="backup"`, "Use a text message")
	if fake.texts() != n+1 {
		t.Errorf("%d texts, want the one sent as the second-factor page opened", fake.texts()-n)
	}
	pg := b.submit(form, map[string]string{"code": codes[3]})
	wantPanel(t, "after the backup code", pg, http.StatusOK, `id="account-email">`+addr+`<`, "9 unused backup codes")
	if pg.URL.String() != ts.accountURL() || b.sessionMethod(ts.Project.ID) != "account" {
		t.Errorf("after the backup code: %s, session method %q", pg.URL, b.sessionMethod(ts.Project.ID))
	}
}
