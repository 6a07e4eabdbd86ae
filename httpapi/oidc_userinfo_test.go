package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestOIDCUserinfoRequests: the userinfo endpoint takes the access
// token as OpenID Connect Core 5.3 and RFC 6750 send it (a Bearer
// header, its scheme in any case; a form body's access_token; the
// query's, as op read it) and answers each with the same claims, as
// JSON, readable from any origin; a call without a token, with another
// scheme or with a token that is not one is 401 with WWW-Authenticate:
// Bearer error="invalid_token" and a JSON invalid_token error; its
// preflight is answered.
func TestOIDCUserinfoRequests(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rp := ts.newRP(ts.Project.ID, nil)
	tok, _ := rp.signedIn("userinfo-requests@example.com")
	uid := ts.userByEmail("userinfo-requests@example.com").ID
	at := tok.AccessToken
	cases := []struct {
		name, method, auth, query, form, origin string
		ok                                      bool
	}{
		{name: "bearer header", method: "GET", auth: "Bearer " + at, ok: true},
		{name: "bearer header, lower case", method: "GET", auth: "bearer " + at, ok: true},
		{name: "bearer header, post", method: "POST", auth: "Bearer " + at, ok: true},
		{name: "form body", method: "POST", form: url.Values{"access_token": {at}}.Encode(), ok: true},
		{name: "query", method: "GET", query: "?access_token=" + url.QueryEscape(at), ok: true},
		{name: "from a page", method: "GET", auth: "Bearer " + at, origin: "https://spa.example.org", ok: true},
		{name: "no token", method: "GET"},
		{name: "empty bearer", method: "GET", auth: "Bearer "},
		{name: "basic", method: "GET", auth: "Basic " + at},
		{name: "not a token", method: "POST", form: "access_token=garbage"},
		{name: "the token altered", method: "GET", auth: "Bearer " + at[:len(at)-3] + "AAA"},
		{name: "refused from a page", method: "GET", auth: "Bearer x", origin: "https://spa.example.org"},
	}
	for _, c := range cases {
		var body *strings.Reader
		if c.form != "" {
			body = strings.NewReader(c.form)
		} else {
			body = strings.NewReader("")
		}
		req, err := http.NewRequest(c.method, rp.issuer+"/userinfo"+c.query, body)
		if err != nil {
			t.Fatal(err)
		}
		if c.form != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		r := ts.send(req)
		if c.origin != "" && r.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: Access-Control-Allow-Origin %q", c.name, r.Header.Get("Access-Control-Allow-Origin"))
		}
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: Content-Type %q", c.name, r.Header.Get("Content-Type"))
		}
		if c.ok {
			if r.Status != http.StatusOK || r.Body["sub"] != uid || r.Body["email"] != "userinfo-requests@example.com" {
				t.Errorf("%s: %d %s", c.name, r.Status, r.Raw)
			}
			continue
		}
		if r.Status != http.StatusUnauthorized || r.Header.Get("WWW-Authenticate") != `Bearer error="invalid_token"` ||
			r.Body["error"] != "invalid_token" || r.Body["error_description"] == "" {
			t.Errorf("%s: %d %v %s", c.name, r.Status, r.Header, r.Raw)
		}
	}
	pre, _ := http.NewRequest("OPTIONS", rp.issuer+"/userinfo", nil)
	pre.Header.Set("Origin", "https://spa.example.org")
	pre.Header.Set("Access-Control-Request-Method", "GET")
	pre.Header.Set("Access-Control-Request-Headers", "authorization")
	if r := ts.send(pre); r.Status/100 != 2 || r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("userinfo's preflight: %d %v", r.Status, r.Header)
	}
}
