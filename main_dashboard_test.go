package main

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/mail/mailtest"
	"latchkey/store"
	"latchkey/store/storetest"
)

// TestDashboardShowsMailConfigError: with an SMTP password the server
// refuses, the signed-in dashboard shows, on every page, a banner that
// names mail and gives the server's own words, without the password;
// the sign-in page shows nothing.
func TestDashboardShowsMailConfigError(t *testing.T) {
	t.Parallel()
	srv := mailtest.NewServer(t, mailtest.Options{User: "mailer", Pass: "right-password"})
	m, out := startMain(t, Config{
		SMTPURL: "smtp://mailer:wrong-password@" + srv.Addr, SMTPCAFile: srv.CAFile(t)})
	key, admin := match(t, keyLine, out.String()), match(t, adminLine, out.String())
	base := "http://" + m.Addr()
	if st, body := (client{t, base}).do("POST", "/api/v1/otp/send", key, map[string]any{"email": "kept@example.com"}); st != 200 {
		t.Fatalf("send: %d %v", st, body)
	}
	deadline := time.Now().Add(15 * time.Second)
	for m.Mail.ConfigError() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if m.Mail.ConfigError() == nil {
		t.Fatal("no configuration error after a refused login")
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) string {
		t.Helper()
		res, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if body := get("/admin/"); strings.Contains(body, "not-ready") {
		t.Fatal("the sign-in page shows the banner")
	}
	res, err := c.PostForm(base+"/admin/login", url.Values{"token": {admin}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	banner := regexp.MustCompile(`(?s)<div class="banner" id="not-ready" role="alert">.*?</div>`)
	for _, p := range []string{"/admin/", "/admin/events"} {
		b := html.UnescapeString(banner.FindString(get(p)))
		if !strings.Contains(b, "<strong>mail</strong>: the SMTP server refuses the configuration") ||
			!strings.Contains(b, m.Mail.ConfigError().Error()) || strings.Contains(b, "wrong-password") {
			t.Fatalf("%s: banner %q, want mail named with the server's words (%v) and no password", p, b, m.Mail.ConfigError())
		}
	}
}

// TestDashboardSessionEndsWithAdminToken: a dashboard session belongs to
// the admin token that opened it. Restarted with another admin token,
// the server refuses the old cookie on every page and the old CSRF
// token with it mints no API key, on both backends; restarted with the
// same token, a session survives where the store keeps it (PostgreSQL;
// the data file keeps dashboard sessions in memory only).
func TestDashboardSessionEndsWithAdminToken(t *testing.T) {
	t.Parallel()
	const tokenA, tokenB = "adm_dashboard_first_token_0123456789", "adm_dashboard_second_token_012345678"
	dsn := storetest.New(t)
	outbox := filepath.Join(t.TempDir(), "outbox")
	serve := func(token string) (*Main, string) {
		t.Helper()
		m := NewMain()
		m.Stdout, m.outbox = io.Discard, outbox
		args := []string{"--addr", "127.0.0.1:0", "--admin-token", token, "--data", dsn}
		if store.IsURL(dsn) {
			args = []string{"--addr", "127.0.0.1:0", "--admin-token", token, "--database-url", dsn, "--master-key", testMasterKey}
		}
		if err := m.ParseFlags(args, func(string) string { return "" }); err != nil {
			t.Fatal(err)
		}
		m.Logger = discardLogger()
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m, "http://" + m.Addr()
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	send := func(method, target, cookie string, form url.Values) (int, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, _ := http.NewRequest(method, target, body)
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		if cookie != "" {
			req.AddCookie(&http.Cookie{Name: "latchkey_admin", Value: cookie})
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if method == "POST" && strings.HasSuffix(target, "/admin/login") {
			for _, c := range res.Cookies() {
				if c.Name == "latchkey_admin" {
					return res.StatusCode, c.Value
				}
			}
			t.Fatalf("sign-in: %d without a cookie: %s", res.StatusCode, b)
		}
		return res.StatusCode, string(b)
	}
	csrfField := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	// signIn opens a dashboard session with token and returns its
	// cookie and CSRF token.
	signIn := func(base, token string) (cookie, csrf string) {
		t.Helper()
		_, cookie = send("POST", base+"/admin/login", "", url.Values{"token": {token}})
		st, page := send("GET", base+"/admin/", cookie, nil)
		if st != 200 || !strings.Contains(page, "Sign out") {
			t.Fatalf("signed-in page: %d\n%s", st, page)
		}
		return cookie, match(t, csrfField, page)
	}
	keyCount := func(base, token string) int {
		t.Helper()
		st, body := (client{t, base}).do("GET", "/api/v1/admin/keys", token, nil)
		if st != 200 {
			t.Fatalf("key list with the admin token in force: %d %v", st, body)
		}
		return len(body["apiKeys"].([]any))
	}
	// mint posts the new-key form of project with the session's cookie
	// and CSRF token, and reports whether a key was made.
	mint := func(base, token, project, cookie, csrf string) bool {
		t.Helper()
		before := keyCount(base, token)
		st, page := send("POST", base+"/admin/projects/"+project+"/keys", cookie, url.Values{"csrf": {csrf}, "mode": {"test"}})
		after := keyCount(base, token)
		switch {
		case st == http.StatusSeeOther && after == before+1:
			return true
		case st == http.StatusUnauthorized && after == before && strings.Contains(page, `name="token"`):
			return false // the sign-in page, nothing made
		}
		t.Fatalf("new key: %d, keys %d -> %d\n%s", st, before, after, page)
		return false
	}

	m, base := serve(tokenA)
	_, projects := (client{t, base}).do("GET", "/api/v1/admin/projects", tokenA, nil)
	project := projects["projects"].([]any)[0].(map[string]any)["id"].(string)
	cookie, csrf := signIn(base, tokenA)
	if !mint(base, tokenA, project, cookie, csrf) {
		t.Fatal("a signed-in session could not make a key")
	}

	// The same token after a restart: the database keeps the session.
	m.Close()
	m, base = serve(tokenA)
	if kept := mint(base, tokenA, project, cookie, csrf); kept != store.IsURL(dsn) {
		t.Fatalf("after a restart with the same admin token the session works: %v, want %v (it survives only in a database)", kept, store.IsURL(dsn))
	}
	cookie, csrf = signIn(base, tokenA)

	// Another token after a restart: the session opened with the first
	// is gone, everywhere.
	m.Close()
	_, base = serve(tokenB)
	if st, body := (client{t, base}).do("GET", "/api/v1/admin/keys", tokenA, nil); st != 401 {
		t.Fatalf("the replaced admin token still opens the admin API: %d %v", st, body)
	}
	for _, path := range []string{"/admin/", "/admin/projects/" + project} {
		if st, page := send("GET", base+path, cookie, nil); st != 200 || strings.Contains(page, "Sign out") || !strings.Contains(page, `name="token"`) {
			t.Fatalf("GET %s with the old cookie: %d, want the sign-in page\n%s", path, st, page)
		}
	}
	if mint(base, tokenB, project, cookie, csrf) {
		t.Fatal("a dashboard session of the replaced admin token minted an API key")
	}
	// The new token signs in as usual.
	cookie, csrf = signIn(base, tokenB)
	if !mint(base, tokenB, project, cookie, csrf) {
		t.Fatal("a session of the new admin token could not make a key")
	}
}
