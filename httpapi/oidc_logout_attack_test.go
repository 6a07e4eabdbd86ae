package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// registeredRP registers a client of project pid by dynamic registration
// (the project's registration opened), with rpRedirect and the
// post-logout address bye, and discovers its issuer with go-oidc.
func (ts *testServer) registeredRP(pid, bye string) *oidcRP {
	t := ts.t
	t.Helper()
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"clientRegistration": "open"}))
	r := ts.register(pid, map[string]any{"client_name": "Self-registered", "redirect_uris": []string{rpRedirect},
		"post_logout_redirect_uris": []string{bye}})
	if r.Status != http.StatusCreated {
		t.Fatalf("registration: %d %s", r.Status, r.Raw)
	}
	rp := &oidcRP{ts: ts, id: str(t, r.Body, "client_id"), issuer: ts.issuer(pid)}
	var err error
	if rp.provider, err = gooidc.NewProvider(ctx, rp.issuer); err != nil {
		t.Fatalf("go-oidc discovery: %v", err)
	}
	rp.config = oauth2.Config{ClientID: rp.id, Endpoint: rp.provider.Endpoint(), RedirectURL: rpRedirect,
		Scopes: []string{gooidc.ScopeOpenID, "email"}}
	return rp
}

// TestOIDCEndSessionRegisteredClientRedirect: anyone may register a
// client while registration is open, and with it any post-logout
// address. Such a client's post_logout_redirect_uri is followed only
// when its id_token_hint names the browser's own session: a link to the
// end-session endpoint with the client's id (no hint), or with an ID
// token of the registrant's own sign-in, sends a browser without a
// session nowhere (the signed-out page), so the endpoint is no open
// redirect on the service's address. The client's real sign-out (the
// hint of the browser's session) still returns to it with the state,
// and an admin-created client's registered address is followed as
// before.
func TestOIDCEndSessionRegisteredClientRedirect(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	rp := ts.registeredRP(pid, rpLogoutBye)
	attacker := signInRP(t, rp, nil, "mallory@example.com")

	signedOut := func(what string, pg *webPage) {
		t.Helper()
		if pg.Status != http.StatusOK || pg.Location != "" || !strings.Contains(pg.Body, "You are signed out.") {
			t.Fatalf("%s: %d %q %s, want the signed-out page and no redirect", what, pg.Status, pg.Location, pg.Body)
		}
	}
	bye := url.Values{"client_id": {rp.id}, "post_logout_redirect_uri": {rpLogoutBye}, "state": {"s"}}
	signedOut("client_id only", attacker.endSession(ts.newBrowser(), bye))
	withHint := url.Values{"id_token_hint": {attacker.idToken}, "post_logout_redirect_uri": {rpLogoutBye}, "state": {"s"}}
	signedOut("the registrant's own ID token in another browser", attacker.endSession(ts.newBrowser(), withHint))

	victim := signInRP(t, rp, nil, "victim@example.com")
	pg := victim.endSession(victim.b, url.Values{"id_token_hint": {victim.idToken}, "post_logout_redirect_uri": {rpLogoutBye}, "state": {"s2"}})
	if pg.Status != http.StatusSeeOther || pg.Location != rpLogoutBye+"?state=s2" {
		t.Fatalf("the client's own sign-out: %d %q %s, want a redirect to %s", pg.Status, pg.Location, pg.Body, rpLogoutBye)
	}
	if alive(ts, victim.session) {
		t.Error("the browser's session survived its sign-out")
	}

	admin := ts.newRP(pid, map[string]any{"postLogoutRedirectUris": []string{rpLogoutBye}})
	pg = signInRP(t, admin, nil, "ada@example.com").endSession(ts.newBrowser(),
		url.Values{"client_id": {admin.id}, "post_logout_redirect_uri": {rpLogoutBye}, "state": {"s3"}})
	if pg.Status != http.StatusSeeOther || pg.Location != rpLogoutBye+"?state=s3" {
		t.Fatalf("an admin-created client: %d %q, want a redirect to %s", pg.Status, pg.Location, rpLogoutBye)
	}
}
