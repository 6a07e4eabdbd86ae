package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/auth"
	"latchkey/store"
)

// The device flow (RFC 8628) of a project's provider over real HTTP:
// x/oauth2 asks for the codes, the test polls the token endpoint itself
// (the clock advanced, never slept), a browser with a cookie jar enters
// the user code on the device page, signs in there and answers.

// deviceRP registers a public client of the project with the device
// grant (and refresh tokens) and discovers it.
func (ts *testServer) deviceRP(body map[string]any) *oidcRP {
	in := map[string]any{"name": "TV App", "type": "public", "grantTypes": []string{auth.GrantDeviceCode, auth.GrantRefreshToken},
		"scopes": []string{"openid", "email", "profile", "offline_access"}}
	for k, v := range body {
		in[k] = v
	}
	rp := ts.newRP(ts.Project.ID, in)
	rp.config.Scopes = []string{gooidc.ScopeOpenID, "email", gooidc.ScopeOfflineAccess}
	return rp
}

// deviceCodes asks the device authorization endpoint for codes.
func (rp *oidcRP) deviceCodes() *oauth2.DeviceAuthResponse {
	rp.ts.t.Helper()
	da, err := rp.config.DeviceAuth(ctx)
	if err != nil {
		rp.ts.t.Fatalf("device authorization: %v", err)
	}
	return da
}

// poll asks the token endpoint once for the device code's tokens.
func (rp *oidcRP) poll(deviceCode string) *response {
	rp.ts.t.Helper()
	form := url.Values{"grant_type": {auth.GrantDeviceCode}, "device_code": {deviceCode}, "client_id": {rp.id}}
	req, err := http.NewRequest("POST", rp.issuer+"/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		rp.ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if rp.secret != "" {
		req.SetBasicAuth(rp.id, rp.secret)
	}
	return rp.ts.send(req)
}

// filledCode returns the code the device page's form holds.
func filledCode(t *testing.T, pg *webPage) string {
	t.Helper()
	m := regexp.MustCompile(`name="user_code"[^>]* value="([^"]*)"`).FindStringSubmatch(pg.Body)
	if m == nil {
		t.Fatalf("no code in the device page: %s", pg.Body)
	}
	return unescape(m[1])
}

var userCodeForm = regexp.MustCompile(`^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$`)

// enterCode opens the device page at u, enters code (as typed) and
// returns the answer.
func (b *browser) enterCode(u, code string) *webPage {
	b.ts.t.Helper()
	pg := b.get(u)
	if pg.Status != http.StatusOK || !strings.Contains(pg.Body, `name="user_code"`) {
		b.ts.t.Fatalf("not the device page: %d %s", pg.Status, pg.Body)
	}
	return b.submit(pg, map[string]string{"user_code": code})
}

// TestOIDCDeviceFlow: discovery names the endpoint and the grant; the
// codes (user code XXXX-XXXX of the 20 letters, verification URIs on
// the issuer, 10 minutes, every 5 s); polls answer authorization_pending,
// then slow_down when sooner than 5 s by the clock; the browser opens
// verification_uri_complete (the code filled in), signs in (the hosted
// sign-in, back to the device page), sees the client and the scopes in
// words and allows; the next poll gets the tokens (ID token verified by
// go-oidc, sid the device's own session, listed with method
// oidc:<client>, not the browser's), userinfo answers, the refresh
// token refreshes, and the device code is spent (expired_token).
func TestOIDCDeviceFlow(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.deviceRP(nil)
	if got := rp.provider.Endpoint().DeviceAuthURL; got != rp.issuer+"/device_authorization" {
		t.Fatalf("discovery device_authorization_endpoint=%q", got)
	}
	var doc struct {
		GrantTypes []string `json:"grant_types_supported"`
	}
	if err := rp.provider.Claims(&doc); err != nil || !slices.Contains(doc.GrantTypes, auth.GrantDeviceCode) {
		t.Fatalf("grant_types_supported=%v (%v), want the device grant", doc.GrantTypes, err)
	}
	da := rp.deviceCodes()
	if !userCodeForm.MatchString(da.UserCode) || da.VerificationURI != rp.issuer+"/device" ||
		da.VerificationURIComplete != rp.issuer+"/device?user_code="+da.UserCode || da.Interval != 5 || len(da.DeviceCode) < 20 {
		t.Fatalf("device authorization %+v", da)
	}
	if left := time.Until(da.Expiry); left < 9*time.Minute || left > 10*time.Minute {
		t.Errorf("expires in %s, want 10 minutes", left)
	}
	wantOAuthError(t, rp.poll(da.DeviceCode), http.StatusBadRequest, "authorization_pending")
	wantOAuthError(t, rp.poll(da.DeviceCode), http.StatusBadRequest, "slow_down")
	ts.Clock.Advance(5 * time.Second)
	wantOAuthError(t, rp.poll(da.DeviceCode), http.StatusBadRequest, "authorization_pending")

	b := ts.newBrowser()
	const addr = "tv@example.com"
	page := b.get(da.VerificationURIComplete)
	if !strings.Contains(page.Body, `<input id="user_code" name="user_code"`) || !strings.Contains(page.Body, `value="`+da.UserCode+`"`) {
		t.Fatalf("the device page does not hold the code: %s", page.Body)
	}
	if csp := page.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || page.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("device page headers %v", page.Header)
	}
	signIn := b.submit(page, map[string]string{"user_code": filledCode(t, page)})
	if !strings.HasPrefix(signIn.URL.Path, "/oidc/"+ts.Project.ID+"/login") {
		t.Fatalf("a browser without a session went to %s (%d %s), want the sign-in page", signIn.URL, signIn.Status, signIn.Body)
	}
	back := b.signIn(signIn, addr)
	if back.URL.Path != "/oidc/"+ts.Project.ID+"/device" || back.URL.Query().Get("user_code") != da.UserCode {
		t.Fatalf("signed in, the browser is at %s, want the device page with the code", back.URL)
	}
	confirm := b.submit(back, map[string]string{"user_code": filledCode(t, back)})
	for _, want := range []string{"<strong>TV App</strong>", auth.BuiltInPageTexts()["scope_openid"], auth.BuiltInPageTexts()["scope_email"],
		auth.BuiltInPageTexts()["scope_offline_access"],
		`name="decision" value="allow"`, `name="decision" value="deny"`, da.UserCode} {
		if !strings.Contains(confirm.Body, want) {
			t.Fatalf("confirm page lacks %q: %d %s", want, confirm.Status, confirm.Body)
		}
	}
	wantOAuthError(t, rp.poll(da.DeviceCode), http.StatusBadRequest, "slow_down") // the clock has not moved
	done := b.submit(confirm, map[string]string{"decision": "allow"})
	if done.Status != http.StatusOK || !strings.Contains(done.Body, "Device connected") {
		t.Fatalf("allow: %d %s", done.Status, done.Body)
	}
	// The confirmation page was the consent page of this third-party
	// client: the consent is remembered (listed, revocable) and told.
	list := ts.admin("GET", "/api/v1/admin/users/"+ts.userByEmail(addr).ID+"/consents", nil)
	wantOK(t, list)
	if cs := list.Body["consents"].([]any); len(cs) != 1 || cs[0].(map[string]any)["clientId"] != rp.id ||
		fmt.Sprint(cs[0].(map[string]any)["scopes"]) != "[openid email offline_access]" {
		t.Fatalf("consents after allowing the device: %s", list.Raw)
	}
	if evs := ts.outbox(); !slices.Contains(evs, auth.EventConsentGranted) {
		t.Fatalf("outbox %v, want %s", evs, auth.EventConsentGranted)
	}

	ts.Clock.Advance(5 * time.Second)
	r := rp.poll(da.DeviceCode)
	if r.Status != http.StatusOK || r.Body["token_type"] != "Bearer" {
		t.Fatalf("poll after approval: %d %s", r.Status, r.Raw)
	}
	at, rt, rawID := r.Body["access_token"].(string), r.Body["refresh_token"].(string), r.Body["id_token"].(string)
	if at == "" || rt == "" || rawID == "" {
		t.Fatalf("tokens %s", r.Raw)
	}
	idt, err := rp.provider.Verifier(&gooidc.Config{ClientID: rp.id}).Verify(ctx, rawID)
	if err != nil {
		t.Fatalf("ID token: %v", err)
	}
	var claims struct {
		Sub   string   `json:"sub"`
		Email string   `json:"email"`
		SID   string   `json:"sid"`
		ACR   string   `json:"acr"`
		AMR   []string `json:"amr"`
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	u := ts.userByEmail(addr)
	browserSID := ts.sessionID(b.ssoToken(ts.Project.ID))
	if claims.Sub != u.ID || claims.Email != addr || claims.ACR != auth.ACRSingleFactor || !slices.Equal(claims.AMR, []string{"otp"}) ||
		claims.SID == "" || claims.SID == browserSID {
		t.Fatalf("ID token claims %+v (user %s, browser session %s)", claims, u.ID, browserSID)
	}
	if h := jwtPart(t, at, 0); h["typ"] != "at+jwt" {
		t.Errorf("access token header %v", h)
	}
	var sess *store.Session
	if err := ts.DB.View(ctx, func(tx store.Tx) (err error) { sess, err = tx.Session(claims.SID); return err }); err != nil {
		t.Fatal(err)
	}
	if sess.Method != "oidc:TV App" || sess.UserID != u.ID {
		t.Errorf("the device's session %+v, want method oidc:TV App", sess)
	}
	info := rp.userinfo(at)
	if info.Status != http.StatusOK || info.Body["sub"] != u.ID || info.Body["email"] != addr {
		t.Fatalf("userinfo: %d %s", info.Status, info.Raw)
	}
	tok, err := rp.config.TokenSource(ctx, &oauth2.Token{RefreshToken: rt, Expiry: time.Now().Add(-time.Minute)}).Token()
	if err != nil || tok.AccessToken == "" || tok.RefreshToken == rt {
		t.Fatalf("refresh: %+v %v", tok, err)
	}
	ts.Clock.Advance(5 * time.Second)
	wantOAuthError(t, rp.poll(da.DeviceCode), http.StatusBadRequest, "expired_token")
	// The page's sign-in request never gives a code to the client.
	id := signIn.URL.Query().Get("authRequestID")
	if !strings.HasPrefix(id, "device-") {
		t.Fatalf("sign-in request id %q", id)
	}
	wantErrorPage(t, b.get(rp.issuer+"/authorize/callback?id="+url.QueryEscape(id)), http.StatusBadRequest, "cannot be completed")
}

// TestOIDCDeviceDenied: a signed-in browser (single sign-on: no sign-in
// again) denies; the device hears access_denied, and the code is no
// longer accepted on the page. A browser signed out before it answers
// answers nothing (401 page).
func TestOIDCDeviceDenied(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.deviceRP(nil)
	b := ts.newBrowser()
	code := ts.newRP(ts.Project.ID, nil)
	first := code.authorize(b, oauth2.GenerateVerifier(), "s", "n")
	code.answer(b.signIn(first, "deny@example.com")) // the browser has a session now
	da := rp.deviceCodes()
	confirm := b.enterCode(rp.issuer+"/device", strings.ToLower(strings.ReplaceAll(da.UserCode, "-", " ")))
	if !strings.Contains(confirm.Body, `value="deny"`) {
		t.Fatalf("a signed-in browser did not get the confirm page: %d %s", confirm.Status, confirm.Body)
	}
	done := b.submit(confirm, map[string]string{"decision": "deny"})
	if done.Status != http.StatusOK || !strings.Contains(done.Body, "Device not connected") {
		t.Fatalf("deny: %d %s", done.Status, done.Body)
	}
	wantOAuthError(t, rp.poll(da.DeviceCode), http.StatusBadRequest, "access_denied")
	again := b.enterCode(rp.issuer+"/device", da.UserCode)
	if again.Status != http.StatusUnauthorized || !strings.Contains(again.Body, "not valid or has expired") {
		t.Fatalf("a denied code entered again: %d %s", again.Status, again.Body)
	}
	// Signed out between the confirm page and the answer: nothing is
	// answered.
	da2 := rp.deviceCodes()
	confirm = b.enterCode(rp.issuer+"/device", da2.UserCode)
	wantOK(t, ts.admin("POST", "/api/v1/admin/users/"+ts.userByEmail("deny@example.com").ID+"/sessions/revoke", nil))
	wantErrorPage(t, b.submit(confirm, map[string]string{"decision": "allow"}), http.StatusUnauthorized, "Your sign-in has ended")
	wantOAuthError(t, rp.poll(da2.DeviceCode), http.StatusBadRequest, "authorization_pending")
}

// TestOIDCDeviceExpired: ten minutes later (the clock) the device hears
// expired_token and the page refuses the code; the sweep removes it.
func TestOIDCDeviceExpired(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.deviceRP(nil)
	da := rp.deviceCodes()
	ts.Clock.Advance(auth.OIDCDeviceLifetime)
	wantOAuthError(t, rp.poll(da.DeviceCode), http.StatusBadRequest, "expired_token")
	pg := ts.newBrowser().enterCode(da.VerificationURIComplete, da.UserCode)
	if pg.Status != http.StatusUnauthorized || !strings.Contains(pg.Body, "not valid or has expired") ||
		!strings.Contains(pg.Body, `name="user_code"`) {
		t.Fatalf("an expired code: %d %s", pg.Status, pg.Body)
	}
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ts.DB.View(ctx, func(tx store.Tx) error {
		_, err := tx.OIDCDeviceAuthByUserCode(ts.Project.ID, da.UserCode)
		return err
	}); err != store.ErrNotFound {
		t.Fatalf("after the sweep: %v, want not found", err)
	}
}

// TestOIDCDeviceWrongCodes: a wrong code shows the form again (401)
// with the message; after DeviceGuessesPerIP wrong codes within a
// minute the address is refused (429, Retry-After), the right code
// too, while another address still gets in; a minute later (the clock)
// the first address may try again. A form without its CSRF token is
// refused (403).
func TestOIDCDeviceWrongCodes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.deviceRP(nil)
	da := rp.deviceCodes()
	b := ts.newBrowser()
	page := b.get(rp.issuer + "/device")
	wrong := b.submit(page, map[string]string{"user_code": "BBBB-BBBB"})
	if wrong.Status != http.StatusUnauthorized || !strings.Contains(wrong.Body, "not valid or has expired") || !strings.Contains(wrong.Body, `value="BBBB-BBBB"`) {
		t.Fatalf("a wrong code: %d %s", wrong.Status, wrong.Body)
	}
	for i := 1; i < auth.DeviceGuessesPerIP; i++ {
		if pg := b.submit(page, map[string]string{"user_code": "not a code " + strconv.Itoa(i)}); pg.Status != http.StatusUnauthorized {
			t.Fatalf("wrong code %d: %d", i, pg.Status)
		}
	}
	limited := b.submit(page, map[string]string{"user_code": da.UserCode})
	if limited.Status != http.StatusTooManyRequests || limited.Header.Get("Retry-After") == "" || !strings.Contains(limited.Body, "Too many wrong codes") {
		t.Fatalf("the right code after %d wrong ones: %d %v %s", auth.DeviceGuessesPerIP, limited.Status, limited.Header, limited.Body)
	}
	// Another address: the throttle is per address.
	form := url.Values{"user_code": {da.UserCode}}
	other := ts.newBrowser()
	pg := other.get(rp.issuer + "/device")
	for _, m := range oidcHidden.FindAllStringSubmatch(pg.Body, -1) {
		form.Set(m[1], unescape(m[2]))
	}
	req, _ := http.NewRequest("POST", rp.issuer+"/device", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	u, _ := url.Parse(rp.issuer)
	for _, c := range other.client.Jar.Cookies(u.JoinPath("device")) {
		req.AddCookie(c)
	}
	if r := ts.sendFrom("127.0.0.2", req); r.Status != http.StatusSeeOther || !strings.Contains(r.Header.Get("Location"), "/login?authRequestID=device-") {
		t.Fatalf("the right code from another address: %d %v %s", r.Status, r.Header, r.Raw)
	}
	ts.Clock.Advance(61 * time.Second)
	if pg := b.submit(page, map[string]string{"user_code": da.UserCode}); !strings.HasPrefix(pg.URL.Path, "/oidc/"+ts.Project.ID+"/login") {
		t.Fatalf("a minute later: %d %s %s", pg.Status, pg.URL, pg.Body)
	}
	wantErrorPage(t, b.submit(page, map[string]string{"user_code": da.UserCode, "csrf": "\x00"}), http.StatusForbidden, "not sent from its page")
}

// TestOIDCDeviceClients: a client without the device grant is refused
// (unauthorized_client); a confidential client with it must
// authenticate (invalid_client without, codes with Basic) and polls
// with Basic; another client's device code, or an unknown one, is
// refused as invalid_grant (and stays the first client's).
func TestOIDCDeviceClients(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	codeOnly := ts.newRP(ts.Project.ID, nil)
	if _, err := codeOnly.config.DeviceAuth(ctx); err == nil || !strings.Contains(err.Error(), "unauthorized_client") {
		t.Fatalf("a client without the device grant: %v, want unauthorized_client", err)
	}
	conf := ts.newRP(ts.Project.ID, map[string]any{"name": "Conf", "grantTypes": []string{auth.GrantDeviceCode}})
	form := url.Values{"client_id": {conf.id}, "scope": {"openid"}}
	req, _ := http.NewRequest("POST", conf.issuer+"/device_authorization", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	wantOAuthError(t, ts.send(req), http.StatusUnauthorized, "invalid_client")
	req, _ = http.NewRequest("POST", conf.issuer+"/device_authorization", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(conf.id, conf.secret)
	r := ts.send(req)
	dc, _ := r.Body["device_code"].(string)
	if r.Status != http.StatusOK || dc == "" {
		t.Fatalf("a confidential client with Basic: %d %s", r.Status, r.Raw)
	}
	da := &oauth2.DeviceAuthResponse{DeviceCode: dc}
	wantOAuthError(t, conf.poll(da.DeviceCode), http.StatusBadRequest, "authorization_pending")
	other := ts.deviceRP(map[string]any{"name": "Other"})
	ts.Clock.Advance(5 * time.Second)
	// RFC 8628 (section 3.5) and RFC 6749 (section 5.2): a device code
	// the client does not hold is an invalid grant, not a denial.
	wantOAuthError(t, other.poll(da.DeviceCode), http.StatusBadRequest, "invalid_grant")
	wantOAuthError(t, other.poll("no-such-code"), http.StatusBadRequest, "invalid_grant")
	wantOAuthError(t, conf.poll(da.DeviceCode), http.StatusBadRequest, "authorization_pending")
}
