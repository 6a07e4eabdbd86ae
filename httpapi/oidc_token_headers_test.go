package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// TestOIDCTokenAnswersNotCached: every answer of the token endpoint,
// those with tokens and the refusals alike, and of device
// authorization and introspection, says Cache-Control: no-store and
// Pragma: no-cache (RFC 6749, section 5.1: a success of the code grant
// had neither); a client refused after authenticating with HTTP Basic
// gets WWW-Authenticate: Basic (section 5.2), one that sent its secret
// in the form does not; a wrong secret is refused before the code is
// looked at, and leaves a live code good.
func TestOIDCTokenAnswersNotCached(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	verifier := oauth2.GenerateVerifier()
	code := rp.answer(b.signIn(rp.authorize(b, verifier, "st", "no"), "cache@example.com")).Get("code")
	// A live code with a wrong secret is refused for the secret, and
	// stays good.
	wrong := &oidcRP{ts: ts, id: rp.id, secret: "lkcs_wrong", issuer: rp.issuer, config: rp.config, provider: rp.provider}
	basic := wrong.exchange(code, verifier)
	if basic.Status != http.StatusUnauthorized || !strings.HasPrefix(basic.Header.Get("WWW-Authenticate"), "Basic realm=") {
		t.Errorf("a wrong secret by Basic: %d %v, WWW-Authenticate %q, want 401 with Basic", basic.Status, basic.Body, basic.Header.Get("WWW-Authenticate"))
	}
	post := rp.postForm("/oauth/token", "lkcs_wrong", url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {rp.config.RedirectURL}, "code_verifier": {verifier}})
	if post.Status != http.StatusUnauthorized || post.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("a wrong secret in the form: %d %v, WWW-Authenticate %q, want 401 without", post.Status, post.Body, post.Header.Get("WWW-Authenticate"))
	}
	// The client is authenticated before its code is looked at (RFC
	// 6749, section 4.1.3): an unknown code with a wrong secret is the
	// same 401, so the refusal says nothing of the code.
	for name, r := range map[string]*response{
		"Basic":    wrong.exchange("no-such-code", verifier),
		"the form": rp.postForm("/oauth/token", "lkcs_wrong", url.Values{"grant_type": {"authorization_code"}, "code": {"no-such-code"}, "redirect_uri": {rp.config.RedirectURL}, "code_verifier": {verifier}}),
	} {
		if r.Status != http.StatusUnauthorized || r.Body["error"] != "invalid_client" {
			t.Errorf("an unknown code with a wrong secret (%s): %d %v, want 401 invalid_client", name, r.Status, r.Body)
		}
	}
	// Its 401 is readable by a page of another origin, as op's are.
	req := wrong.request("/oauth/token", url.Values{"grant_type": {"authorization_code"}, "code": {"no-such-code"},
		"redirect_uri": {rp.config.RedirectURL}, "code_verifier": {verifier}})
	req.Header.Set("Origin", "https://spa.example")
	if r := ts.send(req); r.Status != http.StatusUnauthorized || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("a wrong secret from a page: %d, Access-Control-Allow-Origin %q, want 401 and *", r.Status, r.Header.Get("Access-Control-Allow-Origin"))
	}
	// The device endpoints refuse a wrong secret by Basic with the
	// challenge too.
	for name, r := range map[string]*response{
		"device authorization": wrong.post("/device_authorization", url.Values{"scope": {"openid"}}),
		"device code":          wrong.post("/oauth/token", url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:device_code"}, "device_code": {"x"}}),
	} {
		if r.Status != http.StatusUnauthorized || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Basic realm=") {
			t.Errorf("%s with a wrong secret by Basic: %d %v, WWW-Authenticate %q, want 401 with Basic", name, r.Status, r.Body, r.Header.Get("WWW-Authenticate"))
		}
	}
	// A public client's secret is no authentication (op ignores it):
	// its exchange goes on as before.
	pub := ts.newRP(ts.Project.ID, map[string]any{"type": "public"})
	pv := oauth2.GenerateVerifier()
	pcode := pub.answer(pub.authorize(b, pv, "st", "no")).Get("code")
	if r := pub.postForm("/oauth/token", "foo", url.Values{"grant_type": {"authorization_code"}, "code": {pcode},
		"redirect_uri": {pub.config.RedirectURL}, "code_verifier": {pv}}); r.Status != http.StatusOK {
		t.Errorf("a public client's exchange with a client_secret: %d %v, want 200", r.Status, r.Body)
	}
	ok := rp.exchange(code, verifier)
	if ok.Status != http.StatusOK {
		t.Fatalf("code exchange: %d %v", ok.Status, ok.Body)
	}
	at := str(t, ok.Body, "access_token")
	answers := map[string]*response{"code exchange": ok}
	answers["introspection"] = rp.introspect(at)
	answers["device authorization"] = rp.post("/device_authorization", url.Values{"scope": {"openid"}})
	answers["an unknown refresh token"] = rp.refresh("lkrt_x")
	answers["an unknown code"] = rp.exchange("no-such-code", verifier)
	answers["a spent code"] = rp.exchange(code, verifier)
	answers["a wrong secret, Basic"], answers["a wrong secret in the form"] = basic, post
	for name, r := range answers {
		if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("Pragma") != "no-cache" {
			t.Errorf("%s (%d): Cache-Control %q, Pragma %q, want no-store and no-cache", name, r.Status, r.Header.Get("Cache-Control"), r.Header.Get("Pragma"))
		}
	}
}
