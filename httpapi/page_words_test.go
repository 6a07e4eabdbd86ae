package httpapi_test

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"golang.org/x/oauth2"

	"latchkey/auth"
	"latchkey/httpapi"
)

// Every text a hosted page shows comes from a text key, over real HTTP:
// a project that words every key with a marker sees nothing else on its
// pages but values (an address, a code, a date); a project's wording in
// a locale replaces the account page's buttons and notices and the
// failures pages show, while the API's JSON keeps its messages.

// pageMarker is the marker a test project words each key with.
var pageMarker = regexp.MustCompile(`«[a-z0-9_]+»`)

// markAllTexts words every text key of project pid's pages, in locale,
// with its marker «key».
func (ts *testServer) markAllTexts(pid, locale string) {
	texts := map[string]any{}
	for k := range auth.BuiltInPageTexts() {
		texts[k] = "«" + k + "»"
	}
	wantOK(ts.t, ts.admin("PUT", "/api/v1/admin/projects/"+pid+"/page-texts/"+locale, texts))
}

// wantWorded fails unless every text pg shows is markers, values of
// data or characters without letters; and unless it shows each of the
// markers of keys.
func wantWorded(t *testing.T, what string, pg *webPage, status int, keys []string, data ...string) {
	t.Helper()
	if pg.Status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, pg.Status, status, pg.Body)
	}
	for _, k := range keys {
		if !strings.Contains(pg.Body, "«"+k+"»") {
			t.Errorf("%s: no «%s» on the page: %s", what, k, pg.Body)
		}
	}
	// Longest first: a shorter value inside a longer one (a backup code
	// "4WACD-FUTCY" holds "UTC") would otherwise break it.
	data = slices.Clone(data)
	slices.SortFunc(data, func(a, b string) int { return len(b) - len(a) })
	for _, s := range httpapi.VisibleTexts(pg.Body) {
		rest := pageMarker.ReplaceAllString(s, "")
		for _, d := range data {
			rest = strings.ReplaceAll(rest, d, "")
		}
		if strings.IndexFunc(rest, unicode.IsLetter) >= 0 {
			t.Errorf("%s shows words from no text key: %q (of %q)", what, rest, s)
		}
	}
}

// TestPagesWordedByKeys: with every key worded by a marker, the error
// page, the sign-in, code (with a wrong code and a bad address), device,
// signed-out, forward-auth sign-in and account pages (overview, TOTP,
// backup codes, address, notices, stale form, signed out) show markers
// and values only, the failures' texts among them.
func TestPagesWordedByKeys(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"displayName": "«brand»"}))
	ts.markAllTexts(pid, "en") // the project's English: every page's last locale
	rp := ts.newRP(pid, nil)
	b := ts.newBrowser()
	const addr = "ada@example.com"

	wantWorded(t, "unknown client", b.get(ts.issuer(pid)+"/authorize?client_id=nope&redirect_uri=x&response_type=code&scope=openid"),
		http.StatusBadRequest, []string{"error_title", "error_unknown_client"})
	pg := b.get(rp.config.AuthCodeURL("state", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	wantWorded(t, "sign-in page", pg, http.StatusOK, []string{"sign_in_title", "sign_in_text", "email_label", "continue_button"})
	wantWorded(t, "bad address", b.submit(pg, map[string]string{"email": "not an address"}), http.StatusBadRequest,
		[]string{"sign_in_title", "error_email_invalid"})
	code := b.submit(pg, map[string]string{"email": addr})
	wantWorded(t, "code page", code, http.StatusOK, []string{"code_title", "code_text", "code_label", "sign_in_button", "link_button"})
	wantWorded(t, "wrong code", b.submit(code, map[string]string{"code": wrongCode(ts.lastMail(addr).Code)}), http.StatusUnauthorized,
		[]string{"code_title", "error_invalid_code"})

	wantWorded(t, "device page", b.get(ts.issuer(pid)+"/device"), http.StatusOK, []string{"device_title", "device_text", "code_label"})
	dev := b.get(ts.issuer(pid) + "/device")
	wantWorded(t, "wrong device code", b.submit(dev, map[string]string{"user_code": "BCDF-GHJK"}), http.StatusUnauthorized,
		[]string{"device_title", "error_user_code_invalid"}, "BCDF-GHJK")

	// The account page, signed in on the forward-auth sign-in page.
	const acctAddr = "bob@example.com"
	other := str(t, ts.login(acctAddr).Body, "token")
	a := ts.newBrowser()
	signIn := a.get(ts.accountURL())
	wantWorded(t, "account sign-in page", signIn, http.StatusOK, []string{"sign_in_title", "email_label"})
	code = a.submit(signIn, map[string]string{"email": acctAddr})
	acct := a.submit(code, map[string]string{"code": ts.lastMail(acctAddr).Code})
	// Values of the page: the address, sessions' methods, addresses and
	// browsers, and the dates are digits.
	data := []string{acctAddr, "Go-http-client/1.1", "UTC"}
	for _, m := range regexp.MustCompile(`<div>([a-z_:]+)(?: <span|</div>)`).FindAllStringSubmatch(acct.Body, -1) {
		data = append(data, m[1])
	}
	wantWorded(t, "account page", acct, http.StatusOK, []string{"account_title", "account_signed_in_as",
		"account_this_browser", "account_session_meta", "sign_out_button", "account_end_session_button", "account_end_others_button",
		"account_no_passkeys", "account_passkey_add", "account_totp_off_text", "account_totp_setup", "account_backup_left",
		"account_backup_button", "account_no_apps", "account_email_label", "account_email_button"}, data...)

	totp := a.submitTo(acct, "/totp-enroll", nil)
	secret := regexp.MustCompile(`id="totp-secret">([A-Z2-7]+)<`).FindStringSubmatch(totp.Body)
	if secret == nil {
		t.Fatalf("TOTP panel without its key: %s", totp.Body)
	}
	wantWorded(t, "TOTP panel", totp, http.StatusOK, []string{"account_totp_setup", "account_totp_scan_text", "account_totp_qr_alt",
		"account_totp_key_label", "account_totp_app_code_label", "account_confirm_button", "account_cancel_link"}, append(data, secret[1])...)
	backup := a.submitTo(acct, "/backup-codes", nil)
	codes := regexp.MustCompile(`<li>([A-Z0-9]{5}-[A-Z0-9]{5})</li>`).FindAllStringSubmatch(backup.Body, -1)
	if len(codes) == 0 {
		t.Fatalf("backup panel without codes: %s", backup.Body)
	}
	for _, c := range codes {
		data = append(data, c[1])
	}
	wantWorded(t, "backup panel", backup, http.StatusOK, []string{"account_backup_title", "account_backup_text", "account_done_link"}, data...)
	email := a.submitTo(a.get(ts.accountURL()), "/email", map[string]string{"email": "bob.new@example.com"})
	wantWorded(t, "address panel", email, http.StatusOK, []string{"account_email_confirm_title", "account_email_code_text", "code_label"},
		append(data, "bob.new@example.com")...)
	wantWorded(t, "wrong address code", a.submitTo(email, "/email-confirm", map[string]string{"code": wrongCode(ts.lastMail("bob.new@example.com").Code)}), http.StatusUnauthorized,
		[]string{"account_email_confirm_title", "error_invalid_code"}, append(data, "bob.new@example.com")...)
	acct = a.get(ts.accountURL())
	wantWorded(t, "stale form", a.submitTo(acct, "/session-end", map[string]string{"csrf": "1.abc"}), http.StatusForbidden,
		[]string{"account_stale_title", "error_stale_form", "account_reload_link"})
	ended := a.submitTo(acct, "/session-end", map[string]string{"sessionId": ts.sessionID(other)})
	wantWorded(t, "a notice", ended, http.StatusOK, []string{"account_notice_session_ended"}, data...)
	own := regexp.MustCompile(`name="sessionId" value="([^"]+)">\s*<button type="submit" class="alt">«sign_out_button»`).FindStringSubmatch(ended.Body)
	if own == nil {
		t.Fatalf("no sign-out button of the browser's own session: %s", ended.Body)
	}
	wantWorded(t, "signed out", a.submitTo(ended, "/session-end", map[string]string{"sessionId": own[1]}), http.StatusOK,
		[]string{"signed_out_title", "signed_out_text", "account_sign_in_again"})
	wantWorded(t, "signed-out page", a.get(ts.issuer(pid)+auth.OIDCLogoutPath), http.StatusOK, []string{"signed_out_title", "signed_out_text"})
}

// wrongCode returns a code other than code, of its length: its last
// digit changed.
func wrongCode(code string) string {
	return code[:len(code)-1] + string('0'+(code[len(code)-1]-'0'+1)%10)
}

// langTransport sends every request with Accept-Language lang.
type langTransport string

func (l langTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept-Language", string(l))
	return http.DefaultTransport.RoundTrip(r)
}

// TestPageWordsInLocale: a browser asking for French sees a project's
// French for the account page's buttons and its notice after a change,
// and for a wrong code on the sign-in's code page, where English is
// gone; the API's JSON answer to a wrong code keeps its English message.
func TestPageWordsInLocale(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	wantOK(t, ts.admin("PUT", "/api/v1/admin/projects/"+pid+"/page-texts/fr", map[string]any{
		"error_invalid_code":           "Code incorrect.",
		"account_end_session_button":   "Fermer cette session",
		"account_passkey_add":          "Ajouter une clé d’accès",
		"account_notice_session_ended": "La session est fermée.",
	}))
	const addr = "ada@example.com"
	b := ts.newBrowser()
	b.client.Transport = langTransport("fr-CA,fr;q=0.9")
	other := str(t, ts.login(addr).Body, "token")
	code := b.submit(b.get(ts.accountURL()), map[string]string{"email": addr})
	mail := ts.lastMail(addr).Code
	pg := b.submit(code, map[string]string{"code": wrongCode(mail)})
	wantPanel(t, "wrong code in French", pg, http.StatusUnauthorized, `<html lang="fr">`, ">Code incorrect.</p>")
	if strings.Contains(pg.Body, auth.ErrInvalidCode.Message) {
		t.Errorf("the French page still says %q", auth.ErrInvalidCode.Message)
	}
	acct := b.submit(pg, map[string]string{"code": mail})
	wantPanel(t, "account page in French", acct, http.StatusOK, ">Fermer cette session</button>", ">Ajouter une clé d’accès</button>")
	for _, en := range []string{auth.BuiltInPageTexts()["account_end_session_button"], auth.BuiltInPageTexts()["account_passkey_add"]} {
		if strings.Contains(acct.Body, ">"+en+"<") {
			t.Errorf("the French account page still shows %q", en)
		}
	}
	ended := b.submitTo(acct, "/session-end", map[string]string{"sessionId": ts.sessionID(other)})
	wantPanel(t, "notice in French", ended, http.StatusOK, `<p class="notice" role="status">La session est fermée.</p>`)

	// The API's JSON keeps its words.
	ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "bob@example.com"})
	mail = ts.lastMail("bob@example.com").Code
	req, err := http.NewRequest("POST", ts.URL+"/api/v1/otp/verify", strings.NewReader(`{"email":"bob@example.com","code":"`+wrongCode(mail)+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+ts.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Language", "fr")
	r := ts.send(req)
	wantError(t, r, http.StatusUnauthorized, "INVALID_CODE")
	if msg := str(t, r.Body, "error"); msg != auth.ErrInvalidCode.Message {
		t.Errorf("the API's message %q, want %q whatever the project's page texts", msg, auth.ErrInvalidCode.Message)
	}
}
