package httpapi_test

import (
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Providers that answer with response_mode=form_post (Apple, or any
// OpenID Connect provider added with responseMode "form_post") return
// the browser with a form their page posts to POST /oauth/callback,
// from their own origin. The tests run it against the zitadel provider
// of oauth_test.go, whose form_post page is the one it serves to real
// browsers.

// startWith begins a sign-in with the project's provider name and
// returns the authorization URL.
func (ts *testServer) startWith(t *testing.T, provider string) string {
	t.Helper()
	r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": provider, "redirectUrl": oauthApp + "/done"})
	wantOK(t, r)
	return str(t, r.Body, "authorizationUrl")
}

var (
	formAction = regexp.MustCompile(`<form method="post" action="([^"]+)">`)
	formInput  = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)"\s*/>`)
)

// browseForm signs in at the provider as user and returns the form its
// page would make the browser post: the action and the fields.
func (o *testOP) browseForm(t *testing.T, authURL, user string) (string, url.Values) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	res, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Request.URL.Query().Get("authRequestID")
	res, err = c.PostForm(o.URL+"/login/username", url.Values{"username": {user}, "password": {"verysecure"}, "id": {id}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(res.Body)
	m := formAction.FindSubmatch(page)
	if res.StatusCode != http.StatusOK || m == nil || !strings.HasPrefix(res.Request.URL.String(), o.URL) {
		t.Fatalf("want the provider's form_post page: status=%d url=%s\n%s", res.StatusCode, res.Request.URL, page)
	}
	fields := url.Values{}
	for _, in := range formInput.FindAllSubmatch(page, -1) {
		fields.Set(html.UnescapeString(string(in[1])), html.UnescapeString(string(in[2])))
	}
	return html.UnescapeString(string(m[1])), fields
}

// crossSitePost posts body to the callback URL action with contentType, as
// a browser posts a form from another site's page: Origin is that
// site's and Sec-Fetch-Site is cross-site.
func (ts *testServer) crossSitePost(t *testing.T, action, contentType, body, fromOrigin string) *response {
	t.Helper()
	req, err := http.NewRequest("POST", action, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Origin", fromOrigin)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	return ts.send(req)
}

const formType = "application/x-www-form-urlencoded"

// addFormPostProvider adds "corp-post", the provider of oauthSetup
// again, asked to answer with form_post.
func addFormPostProvider(t *testing.T, ts *testServer, o *testOP) {
	t.Helper()
	r := ts.admin("POST", "/api/v1/admin/projects/"+ts.Project.ID+"/providers", map[string]any{
		"name": "corp-post", "type": "oidc", "clientId": o.ClientID, "clientSecret": "op-secret", "issuer": o.URL, "responseMode": "form_post"})
	wantOK(t, r)
	if got := obj(t, r.Body, "provider")["responseMode"]; got != "form_post" {
		t.Fatalf("responseMode=%v, want form_post", got)
	}
}

// TestOAuthFormPost: a provider with responseMode form_post is asked
// for it, and its page's cross-site form POST to the callback signs the
// user in as GET does; the state is single use there too.
func TestOAuthFormPost(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	addFormPostProvider(t, ts, o)
	authURL := ts.startWith(t, "corp-post")
	u, _ := url.Parse(authURL)
	if got := u.Query().Get("response_mode"); got != "form_post" {
		t.Fatalf("authorization URL %s: response_mode=%q, want form_post", authURL, got)
	}
	if u, _ := url.Parse(ts.oauthStart(t)); u.Query().Has("response_mode") {
		t.Fatalf("a query provider's authorization URL names a response_mode: %s", u)
	}
	action, fields := o.browseForm(t, authURL, "alice")
	if action != ts.URL+"/api/v1/oauth/callback" || fields.Get("code") == "" || fields.Get("state") != u.Query().Get("state") {
		t.Fatalf("form to %s with %v", action, fields)
	}
	r := ts.crossSitePost(t, action, formType, fields.Encode(), o.URL)
	res := &http.Response{StatusCode: r.Status, Header: r.Header}
	code := appQuery(t, res).Get("code")
	if r.Header.Get("Cache-Control") != "no-store" || code == "" {
		t.Fatalf("Cache-Control=%q code=%q", r.Header.Get("Cache-Control"), code)
	}
	x := ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
	wantOK(t, x)
	wantLoginUser(t, x.Body, "ada@example.com")
	if x.Body["provider"] != "corp-post" {
		t.Fatalf("provider=%v, want corp-post", x.Body["provider"])
	}
	// The same form again: the state was used.
	wantError(t, ts.crossSitePost(t, action, formType, fields.Encode(), o.URL), http.StatusBadRequest, "INVALID_STATE")

	// The provider refused (Apple: the user cancelled; its form carries
	// user, which is not read): the app gets error=OAUTH_DENIED.
	state, _ := url.Parse(ts.startWith(t, "corp-post"))
	denied := url.Values{"state": {state.Query().Get("state")}, "error": {"user_cancelled_authorize"},
		"user": {`{"name":{"firstName":"Mallory"},"email":"mallory@example.com"}`}}
	r = ts.crossSitePost(t, action, formType+"; charset=UTF-8", denied.Encode(), "https://appleid.apple.com")
	if q := appQuery(t, &http.Response{StatusCode: r.Status, Header: r.Header}); q.Get("error") != "OAUTH_DENIED" || q.Has("code") {
		t.Fatalf("app query %v, want error=OAUTH_DENIED", q)
	}

	// An expired state, posted: 400 INVALID_STATE, as on GET.
	late, _ := url.Parse(ts.startWith(t, "corp-post"))
	ts.Clock.Advance(11 * time.Minute)
	wantError(t, ts.crossSitePost(t, action, formType, url.Values{"state": {late.Query().Get("state")}, "code": {"x"}}.Encode(), o.URL),
		http.StatusBadRequest, "INVALID_STATE")
	if got := ts.methodEvents("oauth", "callback"); got[""] != 1 || got["invalid_code"] != 2 || got["expired"] != 1 {
		t.Fatalf("callback events %v, want 1 success, 2 invalid_code (the replay, the refusal), 1 expired", got)
	}
}

// TestOAuthFormPostRefusedBodies: a callback POST whose body is not a
// form, cannot be parsed or is over 64 KiB is answered with the error
// envelope before the state is touched: the same state then works.
func TestOAuthFormPostRefusedBodies(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	addFormPostProvider(t, ts, o)
	action, fields := o.browseForm(t, ts.startWith(t, "corp-post"), "alice")
	json := `{"state":"` + fields.Get("state") + `","code":"` + fields.Get("code") + `"}`
	wantError(t, ts.crossSitePost(t, action, "application/json", json, o.URL), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, ts.crossSitePost(t, action, "multipart/form-data; boundary=x", "--x--", o.URL), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, ts.crossSitePost(t, action, formType, "state=%zz&code=1", o.URL), http.StatusBadRequest, "VALIDATION_ERROR")
	big := fields.Encode() + "&pad=" + strings.Repeat("x", 64<<10)
	wantError(t, ts.crossSitePost(t, action, formType, big, o.URL), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
	if got := ts.methodEvents("oauth", "callback"); got[""] != 0 || len(got) == 0 {
		t.Fatalf("callback events %v, want the refusals recorded and no success", got)
	}
	r := ts.crossSitePost(t, action, formType, fields.Encode(), o.URL)
	if code := appQuery(t, &http.Response{StatusCode: r.Status, Header: r.Header}).Get("code"); code == "" {
		t.Fatal("the refused bodies spent the state")
	}
}

// TestOAuthResponseModeAdmin: responseMode is checked, defaults by type
// (Apple form_post, the others query), and is listed.
func TestOAuthResponseModeAdmin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	base := "/api/v1/admin/projects/" + ts.Project.ID + "/providers"
	add := func(body map[string]any) *response {
		body["clientId"], body["clientSecret"] = "cid", "secret"
		return ts.admin("POST", base, body)
	}
	for _, bad := range []map[string]any{
		{"type": "oidc", "issuer": "https://idp.example.com", "responseMode": "fragment"},
		{"type": "oidc", "issuer": "https://idp.example.com", "responseMode": 1},
		{"type": "github", "responseMode": "form_post"},
		{"type": "apple", "responseMode": "query"}, // Apple asks form_post for email and name
	} {
		wantError(t, add(bad), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	cases := []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"type": "apple"}, "form_post"},
		{map[string]any{"type": "apple", "name": "apple-id-only", "scopes": []string{"openid"}, "responseMode": "query"}, "query"},
		{map[string]any{"type": "github"}, "query"},
		{map[string]any{"type": "google"}, "query"},
		{map[string]any{"type": "oidc", "issuer": "https://idp.example.com", "responseMode": "form_post"}, "form_post"},
	}
	for _, c := range cases {
		r := add(c.body)
		wantOK(t, r)
		if got := obj(t, r.Body, "provider")["responseMode"]; got != c.want {
			t.Fatalf("%v: responseMode=%v, want %s", c.body, got, c.want)
		}
	}
	r := ts.admin("GET", base, nil)
	wantOK(t, r)
	var modes []string
	for _, p := range r.Body["providers"].([]any) {
		modes = append(modes, p.(map[string]any)["responseMode"].(string))
	}
	if got := strings.Join(modes, " "); got != "form_post query query query form_post" {
		t.Fatalf("listed response modes %q", got)
	}
}
