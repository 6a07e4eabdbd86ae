package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// TestOIDCUnsupportedResponseType: an authorization request of a known
// client and a registered redirect URI whose response_type is not code
// (implicit, hybrid, none, unknown) is redirected back with
// unsupported_response_type, state and iss (RFC 6749, section 4.1.2.1),
// in the fragment for the types with token or id_token (OAuth 2.0
// Multiple Response Type Encoding Practices: an answer of those types
// goes there) and in the query for the others, or as response_mode
// asks (query, form_post); it was the page
// saying the redirect URI is not registered. An unregistered redirect
// URI still gets that page, whatever the response type.
func TestOIDCUnsupportedResponseType(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	authorize := func(responseType, mode, redirect string) *webPage {
		q := url.Values{"client_id": {rp.id}, "redirect_uri": {redirect}, "response_type": {responseType}, "scope": {"openid"},
			"state": {"st-rt"}, "nonce": {"n"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
			"code_challenge_method": {"S256"}}
		if mode != "" {
			q.Set("response_mode", mode)
		}
		return b.get(rp.issuer + "/authorize?" + q.Encode())
	}
	for _, c := range []struct {
		responseType string
		fragment     bool
	}{
		{"token", true},
		{"id_token", true},
		{"id_token token", true},
		{"code id_token", true},
		{"code token", true},
		{"code id_token token", true},
		{"none", false},
		{"bogus", false},
	} {
		pg := authorize(c.responseType, "", rpRedirect)
		sep := "?"
		if c.fragment {
			sep = "#"
		}
		if pg.Status != http.StatusFound || !strings.HasPrefix(pg.Location, rpRedirect+sep) {
			t.Errorf("response_type=%q: %d %q %s, want a redirect to %s%s", c.responseType, pg.Status, pg.Location, pg.Body, rpRedirect, sep)
			continue
		}
		u, _ := url.Parse(pg.Location)
		q := u.Query()
		if c.fragment {
			q, _ = url.ParseQuery(u.Fragment)
		}
		if q.Get("error") != "unsupported_response_type" || q.Get("state") != "st-rt" || q.Get("iss") != rp.issuer ||
			!strings.Contains(q.Get("error_description"), "response_type must be code") || q.Get("code") != "" {
			t.Errorf("response_type=%q: answer %v", c.responseType, q)
		}
	}
	if pg := authorize("token", "query", rpRedirect); !strings.HasPrefix(pg.Location, rpRedirect+"?error=") {
		t.Errorf("response_type=token in query mode: %d %q", pg.Status, pg.Location)
	}
	q := rp.formPostAnswer(authorize("id_token", "form_post", rpRedirect))
	if q.Get("error") != "unsupported_response_type" || q.Get("state") != "st-rt" {
		t.Errorf("response_type=id_token in form_post mode: %v", q)
	}
	wantErrorPage(t, authorize("token", "", "https://evil.example/cb"), http.StatusBadRequest, "not registered")
	// response_type code goes on to the sign-in page, as before.
	if pg := authorize("code", "", rpRedirect); pg.Status != http.StatusOK || !strings.Contains(pg.Body, `name="email"`) {
		t.Errorf("response_type=code: %d %s", pg.Status, pg.Body)
	}
}

// TestOIDCRequestObjectRefused: a request object by reference
// (request_uri) or by value (request), or client metadata with the
// request (registration), none of which the provider takes (discovery
// says so), is redirected back with OpenID Connect Core's error for it,
// its description, state and iss, not ignored (a request_uri was, and
// the request went on to sign in).
func TestOIDCRequestObjectRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, nil)
	b := ts.newBrowser()
	for _, c := range []struct{ param, value, code string }{
		{"request_uri", "https://rp.example/request.jwt", "request_uri_not_supported"},
		{"request", "eyJhbGciOiJub25lIn0.e30.", "request_not_supported"},
		{"registration", `{"client_name":"x"}`, "registration_not_supported"},
	} {
		q := url.Values{"client_id": {rp.id}, "redirect_uri": {rpRedirect}, "response_type": {"code"}, "scope": {"openid"},
			"state": {"st-ro"}, "nonce": {"n"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
			"code_challenge_method": {"S256"}, c.param: {c.value}}
		pg := b.get(rp.issuer + "/authorize?" + q.Encode())
		if pg.Status != http.StatusFound || !strings.HasPrefix(pg.Location, rpRedirect+"?") {
			t.Errorf("%s: %d %q, want an error redirect", c.param, pg.Status, pg.Location)
			continue
		}
		u, _ := url.Parse(pg.Location)
		a := u.Query()
		if a.Get("error") != c.code || a.Get("state") != "st-ro" || a.Get("iss") != rp.issuer || a.Get("error_description") == "" || a.Get("code") != "" {
			t.Errorf("%s: answer %v", c.param, a)
		}
	}
}
