package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"latchkey/store/storetest"
)

var (
	killFormAction = regexp.MustCompile(`<form method="post" action="([^"]+)"[^>]*>`)
	killHidden     = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)
)

// killBrowser is a browser of the provider's pages: cookies kept,
// redirects followed within the server, no connection kept between
// requests (the server is killed under it).
type killBrowser struct {
	t      *testing.T
	client *http.Client
}

func newKillBrowser(t *testing.T, base string) *killBrowser {
	jar, _ := cookiejar.New(nil)
	return &killBrowser{t: t, client: &http.Client{Jar: jar, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if !strings.HasPrefix(req.URL.String(), base+"/") {
				return http.ErrUseLastResponse
			}
			return nil
		}}}
}

// do sends req and returns the last answer's status, Location and body.
func (b *killBrowser) do(req *http.Request) (int, string, string) {
	b.t.Helper()
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(body)
}

// submit posts the page's first form with its hidden fields and values.
func (b *killBrowser) submit(page string, values url.Values) (int, string, string) {
	b.t.Helper()
	m := killFormAction.FindStringSubmatchIndex(page)
	if m == nil {
		b.t.Fatalf("no form on the page: %s", page)
	}
	action := strings.ReplaceAll(page[m[2]:m[3]], "&amp;", "&")
	form, _, _ := strings.Cut(page[m[1]:], "</form>")
	for _, h := range killHidden.FindAllStringSubmatch(form, -1) {
		if !values.Has(h[1]) {
			values.Set(h[1], strings.ReplaceAll(h[2], "&#43;", "+"))
		}
	}
	req, _ := http.NewRequest("POST", action, strings.NewReader(values.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// token posts form to the token endpoint as the client (HTTP Basic).
func killToken(t *testing.T, issuer, id, secret string, form url.Values) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", issuer+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	res, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]any{}
	json.NewDecoder(res.Body).Decode(&out)
	return res.StatusCode, out
}

// TestOIDCKill9KeepsCodeAndTokens: a code the provider handed to the
// client (the redirect answered) survives a kill -9 of the server: the
// server restarted on the same data file and address redeems it. The
// refresh token that exchange answered survives a second kill -9 and
// refreshes, and the code stays spent (invalid_grant).
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: kill -9 of a child
// process serving a data file.
func TestOIDCKill9KeepsCodeAndTokens(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	if testing.Short() {
		t.Skip("spawns server processes")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	data := filepath.Join(t.TempDir(), "latchkey.db")
	p := spawnAt(t, data, addr)
	admin := p.printed(adminLine)
	c := client{t, p.base}
	_, body := c.do("GET", "/api/v1/admin/projects", admin, nil)
	project := body["projects"].([]any)[0].(map[string]any)["id"].(string)
	const redirect = "http://127.0.0.1:9/callback"
	st, body := c.do("POST", "/api/v1/admin/projects/"+project+"/clients", admin, map[string]any{"name": "Kill", "type": "confidential",
		"redirectUris": []string{redirect}, "firstParty": true,
		"grantTypes": []string{"authorization_code", "refresh_token"}})
	if st != 200 {
		t.Fatalf("create client: %d %v", st, body)
	}
	id, secret := body["client"].(map[string]any)["id"].(string), body["clientSecret"].(string)
	issuer := p.base + "/oidc/" + project

	verifier := strings.Repeat("v", 50)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {id}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"openid email offline_access"},
		"state": {"st"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	b := newKillBrowser(t, p.base)
	req, _ := http.NewRequest("GET", issuer+"/authorize?"+q.Encode(), nil)
	st, _, page := b.do(req)
	if st != 200 {
		t.Fatalf("sign-in page: %d %s", st, page)
	}
	if st, _, page = b.submit(page, url.Values{"email": {"kill@example.com"}}); st != 200 {
		t.Fatalf("code page: %d %s", st, page)
	}
	st, loc, page := b.submit(page, url.Values{"code": {waitForCode(t, data+".outbox")}})
	if st != http.StatusFound || !strings.HasPrefix(loc, redirect+"?") {
		t.Fatalf("no redirect to the client: %d %q %s", st, loc, page)
	}
	u, _ := url.Parse(loc)
	code := u.Query().Get("code")
	if code == "" {
		t.Fatalf("no code in %s", loc)
	}

	p.kill()
	p = spawnAt(t, data, addr)
	exchange := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect}, "code_verifier": {verifier}}
	st, tok := killToken(t, issuer, id, secret, exchange)
	rt, _ := tok["refresh_token"].(string)
	if st != 200 || tok["access_token"] == nil || tok["id_token"] == nil || rt == "" {
		t.Fatalf("the code after kill -9: %d %v", st, tok)
	}

	p.kill()
	p = spawnAt(t, data, addr)
	defer p.kill()
	st, tok = killToken(t, issuer, id, secret, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}})
	if st != 200 || tok["access_token"] == nil || tok["refresh_token"] == nil || tok["refresh_token"] == rt {
		t.Fatalf("the refresh token after kill -9: %d %v", st, tok)
	}
	// The code was spent before the kill: still spent after it.
	if st, again := killToken(t, issuer, id, secret, exchange); st != 400 || again["error"] != "invalid_grant" {
		t.Fatalf("the code twice: %d %v, want 400 invalid_grant", st, again)
	}
}
