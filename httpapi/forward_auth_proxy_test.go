package httpapi_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"latchkey/internal/testkit"
)

// What the tests behind a real Caddy and a real Traefik share: the
// proxy's process, and the walk a browser makes through it.

// freeLoopbackPort returns a TCP port free on 127.0.0.1 a moment ago,
// for a proxy to listen on.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// runProxy starts cmd, a proxy (name, for messages) that listens on
// 127.0.0.1:port, and returns that address once it accepts
// connections. At cleanup the proxy is interrupted (killed after 10 s),
// and its output logged when the test failed.
func runProxy(t *testing.T, name string, cmd *exec.Cmd, port int) string {
	t.Helper()
	var logs testkit.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", name, logs.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen on %s within 15 s: %v\n%s", name, addr, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wantProxyWalk walks a browser (a cookie jar, the email code read from
// the queued mail) through proxy (its name, for messages), which
// serves the echo upstream at app (http://app.<faDomain>:<port>) behind
// latchkey's forward-auth with faRules, answering with latchkey's 302
// (Caddy's forward_auth, Traefik's ForwardAuth): bypass paths pass
// signed out, without identity even when the browser sends Remote-*
// itself; signed out, the proxy passes latchkey's 302 to the sign-in
// page with the original URL; forged X-Forwarded-* from the browser
// change nothing, and a forged X-Original-URL is refused (400); signed
// in, the app gets the identity headers (the browser's own replaced); a
// group rule refuses a user in none of its groups (403) and lets her
// through once in one; an mfa rule asks a user with TOTP for the second
// factor (wantMFAPath); sign-out ends the session the proxy let through.
func (ts *testServer) wantProxyWalk(proxy, app string) {
	t := ts.t
	t.Helper()
	pid := ts.Project.ID
	b := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	// forgedGet opens u sending the headers a proxy would, and identity
	// headers, as the browser's own (headers: name, value, ...).
	forgedGet := func(u string, headers ...string) *webPage {
		t.Helper()
		req, _ := http.NewRequest("GET", u, nil)
		for i := 0; i < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		return (&browser{ts: ts, client: b.client}).do(req)
	}
	forgedFwd := []string{"X-Forwarded-Host", "app." + faDomain, "X-Forwarded-Uri", "/public/", "X-Forwarded-Proto", "http",
		"Remote-User", "forged", "Remote-Email", "forged@example.com"}

	// Bypass, signed out: no identity, the browser's own Remote-* dropped.
	if pg := forgedGet(app+"/public/x.css", forgedFwd...); pg.Status != http.StatusOK || pg.Body != "app /public/x.css user= email= groups= name=" {
		t.Fatalf("bypass path: %d %s", pg.Status, pg.Body)
	}
	// Signed out: the proxy passes latchkey's 302 to the sign-in page with
	// the original URL.
	orig := app + "/page?x=1&y=2"
	pg := b.get(orig)
	signin := ts.faBase() + "/oidc/" + pid + "/signin?rd=" + url.QueryEscape(orig)
	if pg.Status != http.StatusFound || pg.Location != signin {
		t.Fatalf("signed out, %s answered %d %q, want 302 to %s\n%s", proxy, pg.Status, pg.Location, signin, pg.Body)
	}
	// Forged headers from the browser do not open a protected path:
	// the proxy replaces X-Forwarded-*, and passes X-Original-URL on,
	// which latchkey finds naming another request than the proxy's
	// headers (400, which the proxy passes to the browser).
	if forged := forgedGet(app+"/page", forgedFwd...); forged.Status != http.StatusFound || forged.Location != ts.faBase()+"/oidc/"+pid+"/signin?rd="+url.QueryEscape(app+"/page") {
		t.Fatalf("forged X-Forwarded-* through %s: %d %s %s", proxy, forged.Status, forged.Location, forged.Body)
	}
	if forged := forgedGet(app+"/page", "X-Original-URL", app+"/public/"); forged.Status != http.StatusBadRequest ||
		!strings.Contains(forged.Body, "FORWARDED_HEADERS_MISSING") || strings.Contains(forged.Body, "app /page") {
		t.Fatalf("forged X-Original-URL through %s: %d %s %s", proxy, forged.Status, forged.Location, forged.Body)
	}

	// Sign in, then back through the proxy to the app, with the identity.
	back := b.signIn(b.get(pg.Location), "ada@example.com")
	if back.Status != http.StatusSeeOther || back.Location != orig {
		t.Fatalf("after the code: %d %s, want 303 to %s", back.Status, back.Location, orig)
	}
	u := ts.userByEmail("ada@example.com")
	want := fmt.Sprintf("app /page user=%s email=ada@example.com groups= name=", u.ID)
	if pg := b.get(back.Location); pg.Status != http.StatusOK || pg.Body != want {
		t.Fatalf("signed in: %d %q, want %q", pg.Status, pg.Body, want)
	}
	// The browser's own identity headers are replaced by latchkey's.
	if pg := forgedGet(app+"/page", forgedFwd...); pg.Status != http.StatusOK || pg.Body != want {
		t.Fatalf("signed in, forged Remote-*: %d %q, want %q", pg.Status, pg.Body, want)
	}
	// A group rule: ada is in no group (403); in sre, she passes.
	if pg := b.get(app + "/ops/"); pg.Status != http.StatusForbidden {
		t.Fatalf("group rule, user in no group: %d %s", pg.Status, pg.Body)
	}
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+u.ID, map[string]any{"groups": []string{"sre"}}))
	wantOK(t, ts.do("PATCH", "/api/v1/user", b.sso(pid), map[string]any{"firstName": "Ada"}))
	if pg := b.get(app + "/ops/"); pg.Status != http.StatusOK || pg.Body != fmt.Sprintf("app /ops/ user=%s email=ada@example.com groups=sre name=Ada", u.ID) {
		t.Fatalf("group rule, user in sre: %d %s", pg.Status, pg.Body)
	}

	// mfa: a user with TOTP is asked for it, then served.
	ts.wantMFAPath(app + "/admin/")

	// Sign-out ends the session: the proxy sends the browser to sign in.
	if out := b.get(ts.faBase() + "/oidc/" + pid + "/logout?rd=" + url.QueryEscape(app+"/")); out.Status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d %s", out.Status, out.Body)
	}
	if pg := b.get(app + "/page"); pg.Status != http.StatusFound {
		t.Fatalf("after sign-out: %d %s", pg.Status, pg.Body)
	}
}
