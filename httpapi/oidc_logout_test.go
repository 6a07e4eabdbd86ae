package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/auth"
	"latchkey/store"
)

// Signing out at a project's provider over real HTTP: RP-initiated
// logout at <issuer>/logout (with and without id_token_hint, the
// confirmation page and its CSRF token, the registered post-logout
// address and state), and back-channel logout tokens received by a
// relying party's endpoint on loopback and verified with go-oidc, for
// every way a session ends.

// rpLogoutBye is the registered post-logout address of these tests'
// clients: the browser stops there.
const rpLogoutBye = "http://127.0.0.1:9/bye"

// bclReceiver is relying parties' back-channel logout endpoints: it
// keeps each logout_token posted to /bcl/<name>, and answers with the
// statuses queued for it (200 once none is).
type bclReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][]string // logout tokens by endpoint name
	bad []string            // requests that were not a form POST
	fix map[string][]int    // statuses to answer next, by name
}

func newBCLReceiver(t *testing.T) *bclReceiver {
	rc := &bclReceiver{got: map[string][]string{}, fix: map[string][]int{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/bcl/")
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			rc.bad = append(rc.bad, r.Method+" "+r.Header.Get("Content-Type"))
		}
		if q := rc.fix[name]; len(q) > 0 {
			rc.fix[name] = q[1:]
			w.WriteHeader(q[0])
			return
		}
		rc.got[name] = append(rc.got[name], r.PostFormValue("logout_token"))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// uri is the back-channel logout URI of endpoint name.
func (rc *bclReceiver) uri(name string) string { return rc.srv.URL + "/bcl/" + name }

// take returns and forgets the tokens endpoint name received.
func (rc *bclReceiver) take(name string) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.got[name]
	delete(rc.got, name)
	return out
}

// logoutRP is a relying party signed in with the browser: its ID token
// (raw, and its sid) and access token.
type logoutRP struct {
	rp      *oidcRP
	b       *browser
	idToken string
	sid     string
	access  string
	session string // the browser's session token (its SSO cookie)
}

// signInRP signs addr in for rp in browser b (a new one when nil), or
// at once by single sign-on when b is signed in already, and exchanges
// the code.
func signInRP(t *testing.T, rp *oidcRP, b *browser, addr string) *logoutRP {
	t.Helper()
	verifier := oauth2.GenerateVerifier()
	var pg *webPage
	if b == nil {
		b = rp.ts.newBrowser()
		pg = b.signIn(rp.authorize(b, verifier, "st", "nonce-1"), addr)
	} else {
		pg = rp.authorize(b, verifier, "st", "nonce-1")
	}
	tok, err := rp.config.Exchange(ctx, rp.answer(pg).Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	sid, _ := jwtPart(t, raw, 1)["sid"].(string)
	if sid == "" {
		t.Fatal("no sid in the ID token")
	}
	return &logoutRP{rp: rp, b: b, idToken: raw, sid: sid, access: tok.AccessToken, session: b.ssoToken(rp.ts.Project.ID)}
}

// endSession opens the end-session endpoint (from discovery) with q.
func (l *logoutRP) endSession(b *browser, q url.Values) *webPage {
	l.rp.ts.t.Helper()
	var d struct {
		EndSession string `json:"end_session_endpoint"`
	}
	if err := l.rp.provider.Claims(&d); err != nil || d.EndSession == "" {
		l.rp.ts.t.Fatalf("end_session_endpoint %q: %v", d.EndSession, err)
	}
	return b.get(d.EndSession + "?" + q.Encode())
}

// alive reports whether session token tok still works.
func alive(ts *testServer, tok string) bool {
	ts.t.Helper()
	r := ts.do("GET", "/api/v1/sessions", tok, nil)
	switch r.Status {
	case http.StatusOK:
		return true
	case http.StatusUnauthorized:
		return false
	}
	ts.t.Fatalf("GET /sessions: %d %s", r.Status, r.Raw)
	return false
}

// wantLogoutToken verifies tok as relying party rp's go-oidc does
// (signature with the JWKS, issuer, audience, expiry on the server's
// clock, the event, no nonce) and checks its header and claims.
func wantLogoutToken(t *testing.T, ts *testServer, rp *oidcRP, tok, sub, sid, alg string) {
	t.Helper()
	lt, err := rp.provider.Verifier(&gooidc.Config{ClientID: rp.id, Now: ts.Clock.Now}).VerifyLogout(ctx, tok)
	if err != nil {
		t.Fatalf("go-oidc refused the logout token: %v", err)
	}
	if lt.Subject != sub || lt.SessionID != sid || lt.Issuer != rp.issuer || lt.TokenID == "" ||
		!lt.IssuedAt.Equal(ts.Clock.Now().Truncate(time.Second)) || lt.Expiry.Sub(lt.IssuedAt) != 2*time.Minute {
		t.Errorf("logout token %+v, want sub %s sid %s issued now (%v) for 2 minutes", lt, sub, sid, ts.Clock.Now())
	}
	if h := jwtPart(t, tok, 0); h["typ"] != "logout+jwt" || h["alg"] != alg || h["kid"] == nil {
		t.Errorf("logout token header %v, want typ logout+jwt, alg %s, a kid", h, alg)
	}
	c := jwtPart(t, tok, 1)
	ev, _ := c["events"].(map[string]any)
	if e, ok := ev[auth.BackchannelLogoutEventURI].(map[string]any); !ok || len(e) != 0 || len(ev) != 1 {
		t.Errorf("events %v, want only the back-channel logout event, {}", c["events"])
	}
	if _, ok := c["nonce"]; ok {
		t.Errorf("logout token has a nonce: %v", c)
	}
}

// TestOIDCEndSessionWithHint: an RP-initiated logout whose
// id_token_hint names the browser's session ends it at once (GET, no
// confirmation): the browser goes to the registered post-logout address
// with the state, its SSO cookie is cleared, the session and the
// tokens issued under it stop working, session.revoked reaches the
// webhooks (which never see the back-channel events), and each client
// with a back-channel logout URI that holds tokens under the session
// (not the one without a URI, not a client of another session) receives
// a logout token, signed with its ID token algorithm, that go-oidc
// verifies. A receiver that fails gets a fresh token on the retry.
func TestOIDCEndSessionWithHint(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	rc := newBCLReceiver(t)
	hook := newReceiver(t)
	ts.createWebhook(hook.URL, nil)
	rp := ts.newRP(pid, map[string]any{"backchannelLogoutUri": rc.uri("one"), "postLogoutRedirectUris": []string{rpLogoutBye, rpLogoutBye + "?from=lk"}})
	es := ts.newRP(pid, map[string]any{"backchannelLogoutUri": rc.uri("two"), "idTokenAlg": "ES256"})
	quiet := ts.newRP(pid, nil)
	a := signInRP(t, rp, nil, "ada@example.com")
	signInRP(t, es, a.b, "")
	signInRP(t, quiet, a.b, "")
	other := signInRP(t, es, nil, "bob@example.com") // another session: not ended
	ts.deliver()
	before := len(hook.deliveries())
	rc.fix["two"] = []int{http.StatusServiceUnavailable}

	pg := a.endSession(a.b, url.Values{"id_token_hint": {a.idToken}, "post_logout_redirect_uri": {rpLogoutBye + "?from=lk"}, "state": {"s 9"}})
	if pg.Status != http.StatusSeeOther || pg.Location != rpLogoutBye+"?from=lk&state=s+9" {
		t.Fatalf("end-session answered %d %q %s, want 303 to the post-logout address with the state", pg.Status, pg.Location, pg.Body)
	}
	if a.b.ssoToken(pid) != "" {
		t.Error("the SSO cookie survived the sign-out")
	}
	if alive(ts, a.session) {
		t.Error("the session survived the sign-out")
	}
	if !alive(ts, other.session) {
		t.Error("another browser's session ended")
	}
	if r := rp.userinfo(a.access); r.Status != http.StatusUnauthorized {
		t.Errorf("userinfo with an access token of the ended session: %d %s", r.Status, r.Raw)
	}
	ts.deliver()
	u := ts.userByEmail("ada@example.com")
	if got := rc.take("one"); len(got) != 1 {
		t.Fatalf("client one received %d logout tokens, want 1", len(got))
	} else {
		wantLogoutToken(t, ts, rp, got[0], u.ID, a.sid, "RS256")
	}
	if got := rc.take("two"); len(got) != 0 {
		t.Fatalf("client two received %d logout tokens while answering 503", len(got))
	}
	// The retry, 30 s on, carries a token signed then.
	ts.Clock.Advance(31 * time.Second)
	ts.deliver()
	if got := rc.take("two"); len(got) != 1 {
		t.Fatalf("client two received %d logout tokens on the retry, want 1", len(got))
	} else {
		wantLogoutToken(t, ts, es, got[0], u.ID, a.sid, "ES256")
	}
	ts.Clock.Advance(time.Hour)
	ts.deliver()
	if len(rc.take("one"))+len(rc.take("two")) != 0 || len(rc.bad) != 0 {
		t.Errorf("more deliveries than one per client, or not form posts: %v", rc.bad)
	}
	var types []string
	for _, e := range hook.deliveries()[before:] {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				SessionID string `json:"session_id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(e.body, &ev); err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type+" "+ev.Data.SessionID)
	}
	if len(types) != 1 || types[0] != "session.revoked "+a.sid {
		t.Errorf("the webhook received %v, want session.revoked of %s only", types, a.sid)
	}

	// Without post_logout_redirect_uri: the signed-out page. A browser
	// without a session signs the hint's session out at once.
	b2 := signInRP(t, rp, nil, "cy@example.com")
	pg = b2.endSession(ts.newBrowser(), url.Values{"id_token_hint": {b2.idToken}})
	if pg.Status != http.StatusOK || pg.Location != "" || !strings.Contains(pg.Body, "<h1>Signed out</h1>") {
		t.Fatalf("end-session without an address: %d %q %s", pg.Status, pg.Location, pg.Body)
	}
	if alive(ts, b2.session) {
		t.Error("the hint's session survived")
	}
	ts.deliver()
	if got := rc.take("one"); len(got) != 1 {
		t.Fatalf("client one received %d logout tokens for the hint's session, want 1", len(got))
	} else {
		wantLogoutToken(t, ts, rp, got[0], ts.userByEmail("cy@example.com").ID, b2.sid, "RS256")
	}

	// An expired ID token is still a hint.
	c := signInRP(t, rp, nil, "dee@example.com")
	set, err := ts.Svc.OIDCKeys(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-2 * time.Hour).Unix()
	expired := signed(t, set.Active["RS256"], map[string]any{"iss": rp.issuer, "sub": ts.userByEmail("dee@example.com").ID,
		"aud": []string{rp.id}, "azp": rp.id, "iat": past, "exp": past + 3600, "sid": c.sid})
	if pg := c.endSession(c.b, url.Values{"id_token_hint": {expired}, "post_logout_redirect_uri": {rpLogoutBye}}); pg.Status != http.StatusSeeOther ||
		pg.Location != rpLogoutBye {
		t.Fatalf("end-session with an expired hint: %d %q %s", pg.Status, pg.Location, pg.Body)
	}
	if alive(ts, c.session) {
		t.Error("the session survived a sign-out with an expired hint")
	}
}

// TestOIDCEndSessionConfirm: without an id_token_hint, or with one of
// another session than the browser's, the end-session endpoint asks
// first and ends nothing; the confirmation form, posted from another
// browser or with a wrong CSRF token, is refused and ends nothing;
// posted from its page it ends the browser's sessions (and the hint's),
// then redirects with the state and back-channel logout follows. A
// browser without a session is sent on at once.
func TestOIDCEndSessionConfirm(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	rc := newBCLReceiver(t)
	rp := ts.newRP(pid, map[string]any{"backchannelLogoutUri": rc.uri("one"), "postLogoutRedirectUris": []string{rpLogoutBye}})
	a := signInRP(t, rp, nil, "ada@example.com")
	q := url.Values{"client_id": {rp.id}, "post_logout_redirect_uri": {rpLogoutBye}, "state": {"s1"}}

	pg := a.endSession(a.b, q)
	if pg.Status != http.StatusOK || !strings.Contains(pg.Body, "<h1>Sign out</h1>") ||
		!strings.Contains(pg.Body, `<input type="hidden" name="confirm" value="yes"><button type="submit">Sign out</button>`) {
		t.Fatalf("end-session without a hint: %d %q %s, want the confirmation page", pg.Status, pg.Location, pg.Body)
	}
	if h := pg.Header.Get("Content-Security-Policy"); !strings.Contains(h, "frame-ancestors 'none'") || pg.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("confirmation page headers %v", pg.Header)
	}
	if !alive(ts, a.session) {
		t.Fatal("the confirmation page ended the session")
	}
	// Another browser posting the form, or a wrong token: refused.
	other := ts.newBrowser()
	other.get(ts.issuer(pid) + "/logout") // its own CSRF cookie, no session
	for name, pg := range map[string]*webPage{
		"another browser":  other.submit(pg, nil),
		"a wrong token":    a.b.submit(pg, map[string]string{"csrf": "x" + strings.Repeat("A", 42)}),
		"another address":  a.b.submit(pg, map[string]string{"post_logout_redirect_uri": rpLogoutBye + "/x"}),
		"another state":    a.b.submit(pg, map[string]string{"state": "s2"}),
		"no token":         a.b.submit(pg, map[string]string{"csrf": "\x00"}),
		"another client":   a.b.submit(pg, map[string]string{"client_id": "\x00", "post_logout_redirect_uri": "\x00"}),
		"no confirm field": a.b.submit(pg, map[string]string{"confirm": "\x00"}),
	} {
		switch name {
		case "another address":
			wantLogoutRefused(t, pg, http.StatusBadRequest, "an address it has not registered")
		case "no confirm field":
			// The POST is a new request without a hint: asked again.
			if pg.Status != http.StatusOK || !strings.Contains(pg.Body, "<h1>Sign out</h1>") {
				t.Errorf("%s: %d %s, want the confirmation page again", name, pg.Status, pg.Body)
			}
		default:
			wantLogoutRefused(t, pg, http.StatusForbidden, "not sent from its page in this browser")
		}
		if !alive(ts, a.session) {
			t.Fatalf("%s ended the session", name)
		}
	}
	done := a.b.submit(pg, nil)
	if done.Status != http.StatusSeeOther || done.Location != rpLogoutBye+"?state=s1" {
		t.Fatalf("confirmed: %d %q %s", done.Status, done.Location, done.Body)
	}
	if alive(ts, a.session) || a.b.ssoToken(pid) != "" {
		t.Error("the confirmed sign-out left the session or its cookie")
	}
	ts.deliver()
	if got := rc.take("one"); len(got) != 1 {
		t.Fatalf("%d logout tokens after the confirmed sign-out, want 1", len(got))
	} else {
		wantLogoutToken(t, ts, rp, got[0], ts.userByEmail("ada@example.com").ID, a.sid, "RS256")
	}

	// A hint of another session than the browser's: asked first; the
	// confirmation ends both.
	b := signInRP(t, rp, nil, "bob@example.com")
	c := signInRP(t, rp, nil, "cy@example.com")
	pg = c.endSession(b.b, url.Values{"id_token_hint": {c.idToken}})
	if pg.Status != http.StatusOK || !strings.Contains(pg.Body, "<h1>Sign out</h1>") {
		t.Fatalf("a hint of another session: %d %s, want the confirmation page", pg.Status, pg.Body)
	}
	if !alive(ts, b.session) || !alive(ts, c.session) {
		t.Fatal("the confirmation page ended a session")
	}
	if done := b.b.submit(pg, nil); done.Status != http.StatusOK || !strings.Contains(done.Body, "<h1>Signed out</h1>") {
		t.Fatalf("confirmed: %d %s", done.Status, done.Body)
	}
	if alive(ts, b.session) || alive(ts, c.session) {
		t.Error("the confirmation left a session")
	}

	// Nothing to end: sent on at once.
	if pg := a.endSession(ts.newBrowser(), q); pg.Status != http.StatusSeeOther || pg.Location != rpLogoutBye+"?state=s1" {
		t.Errorf("a browser without a session: %d %q", pg.Status, pg.Location)
	}
}

// wantLogoutRefused fails unless pg is the sign-out error page with
// status: HTML, no redirect, the pages' headers.
func wantLogoutRefused(t *testing.T, pg *webPage, status int, text string) {
	t.Helper()
	if pg.Status != status || pg.Location != "" || !strings.HasPrefix(pg.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(pg.Body, "<h1>Sign-out failed</h1>") || !strings.Contains(pg.Body, text) {
		t.Fatalf("got %d %q %s, want the sign-out error page %d saying %q", pg.Status, pg.Location, pg.Body, status, text)
	}
	if !strings.Contains(pg.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") || pg.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("error page headers %v", pg.Header)
	}
}

// TestOIDCEndSessionRefusals: a post_logout_redirect_uri the client did
// not register (or with no client to check it against), an unknown
// client, a client_id that is not the hint's, a hint this provider did
// not sign, another project's, or an access token as the hint: the
// error page, no redirect, and the session lives on.
func TestOIDCEndSessionRefusals(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	rp := ts.newRP(pid, map[string]any{"postLogoutRedirectUris": []string{rpLogoutBye}})
	two := ts.newRP(pid, map[string]any{"postLogoutRedirectUris": []string{rpLogoutBye + "/two"}})
	second := str(t, obj(t, ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "Second"}).Body, "project"), "id")
	elsewhere := ts.newRP(second, nil)
	a := signInRP(t, rp, nil, "ada@example.com")
	e := signInRP(t, elsewhere, nil, "ada@example.com")
	forged := a.idToken[:strings.LastIndex(a.idToken, ".")+1] + "AAAA"
	for _, c := range []struct {
		name string
		q    url.Values
		text string
	}{
		{"unregistered address", url.Values{"id_token_hint": {a.idToken}, "post_logout_redirect_uri": {rpLogoutBye + "/x"}, "state": {"s"}},
			"an address it has not registered"},
		{"another client's address", url.Values{"client_id": {rp.id}, "post_logout_redirect_uri": {rpLogoutBye + "/two"}},
			"an address it has not registered"},
		{"address without a client", url.Values{"post_logout_redirect_uri": {rpLogoutBye}}, "without saying which application"},
		{"unknown client", url.Values{"client_id": {"nope"}}, "not known to this sign-in service"},
		{"client_id not the hint's", url.Values{"id_token_hint": {a.idToken}, "client_id": {two.id}}, "another application than its ID token"},
		{"forged hint", url.Values{"id_token_hint": {forged}}, "did not issue or cannot read"},
		{"another project's hint", url.Values{"id_token_hint": {e.idToken}}, "did not issue or cannot read"},
		{"an access token as hint", url.Values{"id_token_hint": {a.access}}, "did not issue or cannot read"},
		{"not a token", url.Values{"id_token_hint": {"<b>hi</b>"}}, "did not issue or cannot read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantLogoutRefused(t, a.endSession(a.b, c.q), http.StatusBadRequest, c.text)
			if !alive(ts, a.session) {
				t.Fatal("a refused sign-out ended the session")
			}
		})
	}
}

// TestOIDCBackchannelEveryPath: however a session ends (POST /logout,
// DELETE /sessions/:id, the admin's revocation, disabling or deleting
// the user, the user deleting their account), the clients that hold
// tokens under it receive a logout token for it; a client deleted in
// the meantime, or one whose back-channel URI was removed, gets none.
func TestOIDCBackchannelEveryPath(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	rc := newBCLReceiver(t)
	rp := ts.newRP(pid, map[string]any{"backchannelLogoutUri": rc.uri("one")})
	for _, c := range []struct {
		name string
		end  func(l *logoutRP, userID string) *response
	}{
		{"POST /logout", func(l *logoutRP, _ string) *response { return ts.do("POST", "/api/v1/logout", l.session, nil) }},
		{"POST /logout all", func(l *logoutRP, _ string) *response {
			return ts.do("POST", "/api/v1/logout", l.session, map[string]any{"scope": "all"})
		}},
		{"DELETE /sessions/:id", func(l *logoutRP, _ string) *response {
			return ts.do("DELETE", "/api/v1/sessions/"+l.sid, l.session, nil)
		}},
		{"admin revocation", func(_ *logoutRP, uid string) *response {
			return ts.admin("POST", "/api/v1/admin/users/"+uid+"/sessions/revoke", nil)
		}},
		{"admin disable", func(_ *logoutRP, uid string) *response {
			return ts.admin("POST", "/api/v1/admin/users/"+uid+"/disable", nil)
		}},
		{"admin deletion", func(_ *logoutRP, uid string) *response {
			return ts.admin("DELETE", "/api/v1/admin/users/"+uid, nil)
		}},
		{"account deletion", func(l *logoutRP, _ string) *response { return ts.do("DELETE", "/api/v1/user", l.session, nil) }},
	} {
		addr := strings.ToLower(strings.NewReplacer(" ", "-", "/", "", ":", "").Replace(c.name)) + "@example.com"
		l := signInRP(t, rp, nil, addr)
		uid := ts.userByEmail(addr).ID
		wantOK(t, c.end(l, uid))
		ts.deliver()
		if got := rc.take("one"); len(got) != 1 {
			t.Errorf("%s: %d logout tokens, want 1", c.name, len(got))
		} else {
			wantLogoutToken(t, ts, rp, got[0], uid, l.sid, "RS256")
		}
	}

	// The URI removed, or the client deleted, before the delivery:
	// nothing is posted, and nothing is retried.
	gone := ts.newRP(pid, map[string]any{"backchannelLogoutUri": rc.uri("gone")})
	removed := ts.newRP(pid, map[string]any{"backchannelLogoutUri": rc.uri("removed")})
	l := signInRP(t, gone, nil, "eve@example.com")
	signInRP(t, removed, l.b, "")
	wantOK(t, ts.do("POST", "/api/v1/logout", l.session, nil))
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+pid+"/clients/"+gone.id, nil))
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid+"/clients/"+removed.id, map[string]any{"backchannelLogoutUri": ""}))
	ts.deliver()
	ts.Clock.Advance(time.Hour)
	ts.deliver()
	if n := len(rc.take("gone")) + len(rc.take("removed")); n != 0 {
		t.Errorf("%d logout tokens posted for a deleted client or a removed URI", n)
	}
	var queued int
	if err := ts.DB.View(ctx, func(tx store.Tx) (err error) { queued, err = tx.JobCount(); return err }); err != nil {
		t.Fatal(err)
	}
	if queued != 0 {
		t.Errorf("%d deliveries still queued", queued)
	}
}

// TestForwardAuthSignOutCrossSite: the forward-auth sign-out (rd) of a
// browser that says the request comes from another site is confirmed
// first (the form ends the session, both cookies, then follows rd); a
// bare sign-out without rd nor hint always asks; the sign-out of a
// proxied app's own link (same site, or no Sec-Fetch-Site) ends at once
// (TestForwardAuthSignIn).
func TestForwardAuthSignOutCrossSite(t *testing.T) {
	t.Parallel()
	ts := newFwdServer(t)
	pid := ts.Project.ID
	app := "http://app." + faDomain
	b := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	back := b.signIn(b.get(ts.faBase()+"/oidc/"+pid+"/signin?rd="+url.QueryEscape(app+"/")), "ada@example.com")
	if back.Status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", back.Status, back.Body)
	}
	tok := b.sso(pid) // the session's token; the forward-auth cookie's is no API token
	logout := ts.faBase() + "/oidc/" + pid + "/logout"
	for _, c := range []struct{ name, url, site string }{
		{"no rd", logout, ""},
		{"cross-site", logout + "?rd=" + url.QueryEscape(app+"/"), "cross-site"},
	} {
		req, err := http.NewRequest("GET", c.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.site != "" {
			req.Header.Set("Sec-Fetch-Site", c.site)
		}
		pg := (&browser{ts: ts, client: b.client}).do(req)
		if pg.Status != http.StatusOK || !strings.Contains(pg.Body, "<h1>Sign out</h1>") || !alive(ts, tok) {
			t.Fatalf("%s: %d %s, want the confirmation page and the session alive", c.name, pg.Status, pg.Body)
		}
		if c.name == "cross-site" {
			done := b.submit(pg, nil)
			if done.Status != http.StatusSeeOther || done.Location != app+"/" {
				t.Fatalf("confirmed: %d %q %s", done.Status, done.Location, done.Body)
			}
		}
	}
	if alive(ts, tok) || b.cookie(pid) != "" {
		t.Error("the confirmed forward-auth sign-out left the session or its cookie")
	}
}
