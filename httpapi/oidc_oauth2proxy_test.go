package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"latchkey/internal/testkit"
)

// oauth2-proxy (built from the Go module proxy) in front of an app,
// with a project's OpenID provider as its issuer: the settings
// docs/oidc.md gives for it, driven end to end by a browser (a cookie
// jar following every redirect, the email code read from the queued
// mail).

// oauth2ProxyModule and oauth2ProxyVersion are the oauth2-proxy the test
// builds.
const (
	oauth2ProxyModule  = "github.com/oauth2-proxy/oauth2-proxy/v7"
	oauth2ProxyVersion = "v7.15.6"
)

// oauth2ProxyBinary returns the path of oauth2-proxy, built once with
// `go install` into a directory beside Go's build cache
// (<GOCACHE>/../latchkey-oauth2-proxy/<version>) and reused by later
// runs. LATCHKEY_TEST_OAUTH2_PROXY=1 (as .ci/oauth2-proxy sets) builds it
// when it is missing, which takes minutes of CPU; without it the test
// runs only when an earlier build is there, and is skipped otherwise
// (=0 skips it always).
func oauth2ProxyBinary(t *testing.T) string {
	t.Helper()
	want := os.Getenv("LATCHKEY_TEST_OAUTH2_PROXY")
	if want == "0" {
		t.Skip("oauth2-proxy test off (LATCHKEY_TEST_OAUTH2_PROXY=0)")
	}
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	gocache := strings.TrimSpace(string(out))
	if err != nil || gocache == "" || gocache == "off" {
		t.Skipf("oauth2-proxy test not run: no Go build cache to keep its binary beside (go env GOCACHE: %q, %v)", gocache, err)
	}
	dir := filepath.Join(filepath.Dir(gocache), "latchkey-oauth2-proxy", oauth2ProxyVersion)
	bin := filepath.Join(dir, "oauth2-proxy")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if want != "1" {
		t.Skip("!!!!! OAUTH2-PROXY TEST NOT RUN: no build of oauth2-proxy " + oauth2ProxyVersion + " in " + dir +
			"; run .ci/oauth2-proxy (or set LATCHKEY_TEST_OAUTH2_PROXY=1) to build it once !!!!!")
	}
	// Built into a directory of its own, then renamed into place: a
	// concurrent or interrupted build never leaves half a binary at bin.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", oauth2ProxyModule+"@"+oauth2ProxyVersion)
	cmd.Dir = tmp // outside the module: `go install m@v` builds m as released
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOFLAGS=-buildvcs=false")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("go install %s@%s: %v\n%s", oauth2ProxyModule, oauth2ProxyVersion, err, log.Bytes())
	}
	ps := cmd.ProcessState
	t.Logf("built oauth2-proxy %s in %s (CPU: %s user, %s system) into %s", oauth2ProxyVersion,
		time.Since(start).Round(time.Second), ps.UserTime().Round(time.Second), ps.SystemTime().Round(time.Second), dir)
	if err := os.Rename(filepath.Join(tmp, "oauth2-proxy"), bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// oauth2ProxyArgs are oauth2-proxy's settings for latchkey: listening on
// addr (host:port) in front of upstream, with client id and secret of
// issuer's provider, letting in members of allowedGroup. They are the
// flags docs/oidc.md shows (cookie-secure off and a short cookie-refresh
// only here, for http on loopback and a refresh within the test).
func oauth2ProxyArgs(addr, upstream, issuer, id, secret, allowedGroup string) []string {
	return []string{
		"--http-address=" + addr,
		"--upstream=" + upstream,
		"--provider=oidc",
		"--oidc-issuer-url=" + issuer,
		"--client-id=" + id,
		"--client-secret=" + secret,
		"--redirect-url=http://" + addr + "/oauth2/callback",
		"--code-challenge-method=S256",
		"--scope=openid email profile groups offline_access",
		"--email-domain=*",
		"--oidc-groups-claim=groups",
		"--allowed-group=" + allowedGroup,
		"--skip-provider-button",
		"--cookie-secret=0123456789abcdef0123456789abcdef",
		"--cookie-secure=false",
		"--cookie-refresh=1s",
	}
}

// oauth2ProxyRefresh is the --cookie-refresh of oauth2ProxyArgs: a
// request later than that after the session's last refresh refreshes
// it at latchkey's token endpoint.
const oauth2ProxyRefresh = time.Second

// waitOAuth2ProxyRefresh waits until oauth2-proxy's next request
// refreshes a session made or refreshed before the call. oauth2-proxy
// reads the machine's clock (no clock can be injected into it) and
// counts a session's age from the current time truncated to the second,
// hence one more second than the refresh period.
func waitOAuth2ProxyRefresh() { time.Sleep(oauth2ProxyRefresh + time.Second + 200*time.Millisecond) }

// startOAuth2Proxy runs bin with args (oauth2ProxyArgs for addr) and
// returns once it answers its /ping.
func startOAuth2Proxy(t *testing.T, bin, addr string, args []string) {
	t.Helper()
	var log testkit.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("oauth2-proxy's log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + addr + "/ping")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-done:
			t.Fatalf("oauth2-proxy exited: %v\n%s", cmd.ProcessState, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("oauth2-proxy did not answer /ping on %s within 30 s: %v\n%s", addr, err, log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freeAddr returns a loopback address (127.0.0.1:port) nothing listens
// on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestOAuth2Proxy: oauth2-proxy with the settings docs/oidc.md gives
// (provider oidc with the project's issuer, PKCE S256, the groups claim,
// an allowed group, offline_access) in front of an app that echoes the
// identity headers it gets. A browser that is not signed in is sent to
// latchkey's sign-in page, signs in with the emailed code and comes back
// through oauth2-proxy's callback; a user in none of the allowed groups
// is refused there (403); once in the group, the next visit signs in by
// the latchkey session (single sign-on, no page) and the app gets
// X-Forwarded-User (the user id), -Email, -Preferred-Username and
// -Groups. oauth2-proxy refreshes its session with latchkey's refresh
// token: a change of the user's groups reaches the app, and once the
// latchkey session is revoked the refresh is refused (invalid_grant),
// oauth2-proxy drops its session and sends the browser to sign in
// again.
func TestOAuth2Proxy(t *testing.T) {
	t.Parallel()
	bin := oauth2ProxyBinary(t)
	ts := newTestServer(t)
	// oauth2-proxy checks tokens against the machine's clock.
	ts.Clock.Set(time.Now())
	pid := ts.Project.ID

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "app %s user=%s email=%s preferred=%s groups=%s", r.URL.RequestURI(), r.Header.Get("X-Forwarded-User"),
			r.Header.Get("X-Forwarded-Email"), r.Header.Get("X-Forwarded-Preferred-Username"), r.Header.Get("X-Forwarded-Groups"))
	}))
	t.Cleanup(up.Close)
	addr := freeAddr(t)
	app := "http://" + addr
	rp := ts.newRP(pid, map[string]any{"name": "oauth2-proxy", "redirectUris": []string{app + "/oauth2/callback"},
		"grantTypes": []string{"authorization_code", "refresh_token"}, "firstParty": true})
	startOAuth2Proxy(t, bin, addr, oauth2ProxyArgs(addr, up.URL+"/", rp.issuer, rp.id, rp.secret, "sre"))

	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{ts: ts, client: &http.Client{Jar: jar}} // follows every redirect
	t.Cleanup(b.client.CloseIdleConnections)
	const addrAda = "ada@example.com"
	orig := app + "/private?x=1"

	// Not signed in: oauth2-proxy sends the browser to latchkey's
	// sign-in page; ada signs in, and oauth2-proxy refuses her: she is
	// in no group.
	pg := b.get(orig)
	if pg.URL.Path != "/oidc/"+pid+"/login" {
		t.Fatalf("signed out, the browser ended at %s (%d), want latchkey's sign-in page\n%s", pg.URL, pg.Status, pg.Body)
	}
	pg = b.signIn(pg, addrAda)
	if pg.Status != http.StatusForbidden || pg.URL.Host != addr || pg.URL.Path != "/oauth2/callback" {
		t.Fatalf("a user in no group: %d at %s, want oauth2-proxy's 403\n%s", pg.Status, pg.URL, pg.Body)
	}
	u := ts.userByEmail(addrAda)

	// In sre (and dev), she gets in without a page: latchkey's session
	// answers the new authorization.
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+u.ID, map[string]any{"groups": []string{"sre", "dev"}}))
	want := fmt.Sprintf("app /private?x=1 user=%s email=%s preferred=%s groups=dev,sre", u.ID, addrAda, addrAda)
	if pg := b.get(orig); pg.Status != http.StatusOK || pg.Body != want {
		t.Fatalf("in the allowed group: %d at %s %q, want %q", pg.Status, pg.URL, pg.Body, want)
	}
	sid := b.ssoToken(pid)
	if sid == "" {
		t.Fatal("no latchkey session cookie")
	}

	// oauth2-proxy refreshes (its clock is the machine's: the test
	// waits out --cookie-refresh) and gets the new groups.
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+u.ID, map[string]any{"groups": []string{"sre", "ops"}}))
	waitOAuth2ProxyRefresh()
	want = strings.Replace(want, "groups=dev,sre", "groups=ops,sre", 1)
	if pg := b.get(orig); pg.Status != http.StatusOK || pg.Body != want {
		t.Fatalf("after a refresh: %d at %s %q, want %q", pg.Status, pg.URL, pg.Body, want)
	}

	// The latchkey session revoked, the next refresh is refused and
	// oauth2-proxy sends the browser to sign in again.
	r := ts.do("GET", "/api/v1/sessions", sid, nil)
	wantOK(t, r)
	list, _ := r.Body["sessions"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["method"] != "oidc:oauth2-proxy" {
		t.Fatalf("sessions %s, want one by oidc:oauth2-proxy", r.Raw)
	}
	wantOK(t, ts.do("DELETE", "/api/v1/sessions/"+str(t, list[0].(map[string]any), "id"), sid, nil))
	waitOAuth2ProxyRefresh()
	if pg := b.get(orig); pg.URL.Path != "/oidc/"+pid+"/login" || strings.Contains(pg.Body, "app /private") {
		t.Fatalf("after the session's revocation: %d at %s, want latchkey's sign-in page\n%s", pg.Status, pg.URL, pg.Body)
	}
}
