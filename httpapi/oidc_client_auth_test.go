package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"latchkey/auth"
)

// postForm sends form to the provider's endpoint path as the client
// with its secret in the form (client_secret_post), secret standing for
// the client's.
func (rp *oidcRP) postForm(path, secret string, form url.Values) *response {
	rp.ts.t.Helper()
	form.Set("client_id", rp.id)
	form.Set("client_secret", secret)
	req, err := http.NewRequest("POST", rp.issuer+path, strings.NewReader(form.Encode()))
	if err != nil {
		rp.ts.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return rp.ts.send(req)
}

// TestOIDCClientSecretPost: a confidential client that authenticates
// with its secret in the form (client_secret_post, which discovery names
// for the token endpoint, and which a relying party such as openid-client
// then uses at every endpoint) runs the whole device flow with it (the
// device authorization endpoint and the polls of the token endpoint,
// where op read only HTTP Basic), and introspects with it (discovery now
// names client_secret_post for introspection too). A wrong secret, in
// the form or by HTTP Basic, is 401 invalid_client at each (op answered
// the device endpoints' 400 unauthorized_client), and changes nothing.
func TestOIDCClientSecretPost(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, map[string]any{"name": "Post TV", "firstParty": true,
		"grantTypes": []string{auth.GrantDeviceCode, auth.GrantClientCredentials}})
	var doc struct {
		Introspection []string `json:"introspection_endpoint_auth_methods_supported"`
	}
	if err := rp.provider.Claims(&doc); err != nil || !slices.Contains(doc.Introspection, "client_secret_post") {
		t.Fatalf("introspection_endpoint_auth_methods_supported=%v (%v), want client_secret_post", doc.Introspection, err)
	}

	// Refusals first: a wrong secret in the form, or by HTTP Basic
	// (RFC 6749, section 5.2: invalid_client, 401).
	wantOAuthError(t, rp.postForm("/device_authorization", "lkcs_wrong", url.Values{"scope": {"openid"}}), http.StatusUnauthorized, "invalid_client")
	req, _ := http.NewRequest("POST", rp.issuer+"/device_authorization", strings.NewReader("scope=openid"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(rp.id, "lkcs_wrong")
	wantOAuthError(t, ts.send(req), http.StatusUnauthorized, "invalid_client")
	r := rp.postForm("/device_authorization", rp.secret, url.Values{"scope": {"openid email"}})
	dc, _ := r.Body["device_code"].(string)
	uc, _ := r.Body["user_code"].(string)
	if r.Status != http.StatusOK || dc == "" || uc == "" {
		t.Fatalf("device authorization with client_secret_post: %d %s", r.Status, r.Raw)
	}
	poll := func(secret string) *response {
		return rp.postForm("/oauth/token", secret, url.Values{"grant_type": {auth.GrantDeviceCode}, "device_code": {dc}})
	}
	wantOAuthError(t, poll("lkcs_wrong"), http.StatusUnauthorized, "invalid_client")
	ts.Clock.Advance(5 * time.Second)
	wantOAuthError(t, poll(rp.secret), http.StatusBadRequest, "authorization_pending")

	b := ts.newBrowser()
	page := b.get(rp.issuer + "/device?user_code=" + url.QueryEscape(uc))
	back := b.signIn(b.submit(page, map[string]string{"user_code": filledCode(t, page)}), "post-tv@example.com")
	confirm := b.submit(back, map[string]string{"user_code": filledCode(t, back)})
	if done := b.submit(confirm, map[string]string{"decision": "allow"}); !strings.Contains(done.Body, "Device connected") {
		t.Fatalf("allow: %d %s", done.Status, done.Body)
	}
	ts.Clock.Advance(5 * time.Second)
	tok := poll(rp.secret)
	at, _ := tok.Body["access_token"].(string)
	if tok.Status != http.StatusOK || at == "" || tok.Body["id_token"] == nil {
		t.Fatalf("device token with client_secret_post: %d %s", tok.Status, tok.Raw)
	}

	// Introspection in the form: the device's access token, then a
	// client_credentials token; a wrong secret is refused.
	in := rp.postForm("/oauth/introspect", rp.secret, url.Values{"token": {at}})
	if in.Status != http.StatusOK || in.Body["active"] != true || in.Body["client_id"] != rp.id {
		t.Fatalf("introspection with client_secret_post: %d %s", in.Status, in.Raw)
	}
	wrong := rp.postForm("/oauth/introspect", "lkcs_wrong", url.Values{"token": {at}})
	wantOAuthError(t, wrong, http.StatusUnauthorized, "invalid_client")
	if !strings.HasPrefix(wrong.Header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("refused introspection: WWW-Authenticate %q", wrong.Header.Get("WWW-Authenticate"))
	}
	cc := rp.ccConfig()
	cc.AuthStyle = oauth2.AuthStyleInParams
	cct, err := cc.Token(ctx)
	if err != nil {
		t.Fatalf("client_credentials with client_secret_post: %v", err)
	}
	if in := rp.postForm("/oauth/introspect", rp.secret, url.Values{"token": {cct.AccessToken}}); in.Body["active"] != true {
		t.Fatalf("introspection of a client_credentials token with client_secret_post: %d %s", in.Status, in.Raw)
	}
	// A client without a secret cannot introspect by naming itself.
	pub := ts.newRP(ts.Project.ID, map[string]any{"name": "Pub", "type": "public", "redirectUris": []string{"http://127.0.0.1/cb"}})
	wantOAuthError(t, pub.postForm("/oauth/introspect", "", url.Values{"token": {at}}), http.StatusUnauthorized, "invalid_client")
}
