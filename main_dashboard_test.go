package main

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

	"latchkey/mail/mailtest"
)

// TestDashboardShowsMailConfigError: with an SMTP password the server
// refuses, the signed-in dashboard shows, on every page, a banner that
// names mail and gives the server's own words, without the password;
// the sign-in page shows nothing.
func TestDashboardShowsMailConfigError(t *testing.T) {
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
