package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

// TestOIDCConsentRegisteredClientHost: anyone may register a client
// under any name while registration is open, so the consent page of a
// self-registered client names where the answer goes back to, its
// redirect URI's host (without the port; an app's own scheme for a
// custom-scheme URI), escaped as every text; the page of a client the
// operator created under the same name does not.
func TestOIDCConsentRegisteredClientHost(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	pid := ts.Project.ID
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+pid, map[string]any{"clientRegistration": "open"}))
	consentPage := func(rp *oidcRP, addr string) *webPage {
		t.Helper()
		b := ts.newBrowser()
		pg := b.signIn(rp.authorize(b, oauth2.GenerateVerifier(), "st", "n"), addr)
		if pg.Status != http.StatusOK || !strings.Contains(pg.Body, `name="decision" value="allow"`) {
			t.Fatalf("not the consent page: %d %s", pg.Status, pg.Body)
		}
		return pg
	}
	for i, c := range []struct{ redirect, host string }{
		{"https://app.example.net:8443/cb?x=1", "app.example.net"},
		{rpRedirect, "127.0.0.1"},
		{"com.example.app:/callback", "com.example.app:"},
	} {
		r := ts.register(pid, map[string]any{"client_name": "Test App", "redirect_uris": []string{c.redirect}})
		if r.Status != http.StatusCreated {
			t.Fatalf("registration of %s: %d %s", c.redirect, r.Status, r.Raw)
		}
		rp := &oidcRP{ts: ts, id: str(t, r.Body, "client_id"), issuer: ts.issuer(pid)}
		rp.config = oauth2.Config{ClientID: rp.id, Endpoint: oauth2.Endpoint{AuthURL: rp.issuer + "/authorize"},
			RedirectURL: c.redirect, Scopes: []string{gooidc.ScopeOpenID, "email"}}
		pg := consentPage(rp, string(rune('a'+i))+"@example.com")
		want := `<p id="consent-return">This application registered itself: after you answer, you go back to <strong>` + c.host +
			`</strong>. Continue only if you know that address.</p>`
		if !strings.Contains(pg.Body, want) {
			t.Errorf("consent page of a client registered with %s: want %s in\n%s", c.redirect, want, pg.Body)
		}
	}
	admin := ts.newRP(pid, nil) // "Test App" too
	if pg := consentPage(admin, "d@example.com"); strings.Contains(pg.Body, "consent-return") || strings.Contains(pg.Body, "registered itself") {
		t.Errorf("the consent page of the operator's client names a return host:\n%s", pg.Body)
	}
}
