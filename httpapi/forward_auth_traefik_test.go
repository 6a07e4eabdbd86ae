package httpapi_test

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Forward-auth behind a real Traefik, built from the Go module proxy
// (github.com/traefik/traefik/v3 at traefikVersion) once per machine by
// .ci/traefik into the user's cache directory, outside the repository:
// Traefik's ForwardAuth middleware, from its file provider, in front of
// an upstream that echoes the identity headers it gets. The
// configuration is the one docs/forward-auth.md shows. Building Traefik
// costs many minutes of CPU and needs a few stand-ins for modules the
// proxy does not serve (.ci/traefik says which), so the test only finds
// it: without it the test is skipped with a message naming .ci/traefik.

// traefikVersion is the Traefik the test runs (.ci/traefik builds it).
const traefikVersion = "v3.7.13"

// findTraefik returns the path of the test's Traefik,
// <user cache dir>/latchkey/traefik-<version>/traefik, or skips the test
// with a loud message naming the way to build it.
func findTraefik(t *testing.T) string {
	t.Helper()
	dir, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no cache directory for Traefik: %v", err)
	}
	bin := filepath.Join(dir, "latchkey", "traefik-"+traefikVersion, "traefik")
	if _, err := os.Stat(bin); err != nil {
		t.Skip("!!!!! TRAEFIK TEST NOT RUN: Traefik " + traefikVersion + " is not built at " + bin +
			"; .ci/traefik builds it from the Go module proxy, once, and runs the test !!!!!")
	}
	return bin
}

// traefikStatic is the test's static configuration: %[1]d Traefik's
// port, %[2]s the dynamic configuration's file. The entry point trusts
// no client's X-Forwarded-* headers (no forwardedHeaders.trustedIPs): it
// replaces them with its own, which ForwardAuth then passes on
// (trustForwardHeader).
const traefikStatic = `global:
  checkNewVersion: false
  sendAnonymousUsage: false
log:
  level: ERROR
entryPoints:
  web:
    address: "127.0.0.1:%[1]d"
providers:
  file:
    filename: "%[2]s"
`

// traefikDynamic is the test's dynamic configuration (the file
// provider's): %[1]s latchkey's address (127.0.0.1:port), %[2]s the
// project id, %[3]s the upstream's address.
const traefikDynamic = `http:
  routers:
    app:
      rule: "Host(` + "`app.fa.localhost`" + `)"
      entryPoints: [web]
      middlewares: [latchkey]
      service: app
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://%[3]s"
  middlewares:
    # --- from docs/forward-auth.md ---
    latchkey:
      forwardAuth:
        address: "http://%[1]s/api/v1/forward-auth/%[2]s"
        trustForwardHeader: true
        authResponseHeaders:
          - Remote-User
          - Remote-Email
          - Remote-Groups
          - Remote-Name
    # --- end ---
`

// startTraefik runs Traefik in front of upstream, asking ts about
// project pid, and returns its address (127.0.0.1:port).
func startTraefik(t *testing.T, ts *testServer, pid, upstream string) string {
	t.Helper()
	bin := findTraefik(t)
	dir := t.TempDir()
	port := freeLoopbackPort(t)
	static, dynamic := filepath.Join(dir, "traefik.yml"), filepath.Join(dir, "dynamic.yml")
	lk := strings.TrimPrefix(ts.URL, "http://")
	if err := os.WriteFile(dynamic, []byte(fmt.Sprintf(traefikDynamic, lk, pid, upstream)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(static, []byte(fmt.Sprintf(traefikStatic, port, dynamic)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--configFile="+static)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	addr := runProxy(t, "traefik", cmd, port)
	// The file provider loads the routes a moment after the port opens:
	// wait until the bypass path answers from the app.
	c := loopbackClient(t, false)
	for i := 0; ; i++ {
		res, err := c.Get("http://app." + faDomain + ":" + fmt.Sprint(port) + "/public/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return addr
			}
		}
		if i == 300 {
			t.Fatalf("traefik did not route to the app within 15 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestForwardAuthTraefik: Traefik's ForwardAuth in front of an app, the
// walk of the Caddy test (wantProxyWalk: latchkey's 302 to the sign-in
// page passed on, the identity headers on the app's requests
// (authResponseHeaders) and never the browser's own, forged
// X-Forwarded-* and X-Original-URL, a group rule's 403, an mfa rule's
// second factor, sign-out), then the sign-in in Chromium, which sends
// forged X-Forwarded-* and Remote-* headers with every request:
// signed out it lands on the sign-in page with the original URL, the
// email code brings it back to the app with its identity; an rd to
// another domain gets an error page, never a redirect. The check,
// called with a forged X-Forwarded-Host from an address that is not a
// trusted proxy (127.0.0.3), is refused (400 UNTRUSTED_PROXY).
func TestForwardAuthTraefik(t *testing.T) {
	t.Parallel()
	findTraefik(t) // skips before the server starts
	ts := newFwdServer(t)
	pid := ts.Project.ID
	tr := startTraefik(t, ts, pid, echoUpstream(t))
	_, port, _ := net.SplitHostPort(tr)
	app := "http://app." + faDomain + ":" + port
	ts.wantProxyWalk("Traefik", app)

	// From an untrusted address, straight to latchkey: refused, not read.
	req, _ := http.NewRequest("GET", ts.URL+"/api/v1/forward-auth/"+pid, nil)
	req.Header.Set("X-Forwarded-Host", "app."+faDomain)
	req.Header.Set("X-Forwarded-Uri", "/page")
	req.Header.Set("X-Forwarded-Proto", "http")
	wantError(t, ts.sendFrom("127.0.0.3", req), http.StatusBadRequest, "UNTRUSTED_PROXY")

	// In Chromium, forging the proxy's headers with every request.
	ctx := newBrowser(t)
	c := &fwdChrome{t: t, ts: ts, ctx: ctx}
	forged := network.Headers{"X-Forwarded-Proto": "http", "X-Forwarded-Host": "app." + faDomain, "X-Forwarded-Uri": "/public/",
		"X-Forwarded-Method": "GET", "Remote-User": "forged", "Remote-Email": "forged@example.com"}
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: forged}); err != nil {
		t.Fatalf("extra headers: %v", err)
	}
	signin := ts.faBase() + "/oidc/" + pid + "/signin?rd="
	orig := app + "/page?x=1&y=2"
	if res := c.navigate(orig); res.Status != http.StatusOK || c.location() != signin+url.QueryEscape(orig) {
		t.Fatalf("signed out: %d at %s, want the sign-in page %s", res.Status, c.location(), signin+url.QueryEscape(orig))
	}
	const addr = "traefik-chrome@example.com"
	back := c.signIn(addr)
	if c.location() != orig {
		t.Fatalf("after the code the browser is at %s, want %s", c.location(), orig)
	}
	c.appSays(back, "/page", addr, "")
	for _, rd := range []string{"https://evil.example/", "http://app." + faDomain + ".evil.example/"} {
		res := c.navigate(signin + url.QueryEscape(rd))
		if res.Status != http.StatusBadRequest || c.location() != signin+url.QueryEscape(rd) || !strings.Contains(pageText(t, ctx), "not under this project") {
			t.Fatalf("rd %s: %d at %s: %q", rd, res.Status, c.location(), pageText(t, ctx))
		}
	}
}
