package httpapi_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Forward-auth behind a real Caddy, built from the Go module proxy
// (github.com/caddyserver/caddy/v2/cmd/caddy at caddyVersion) once per
// machine into the user's cache directory, outside the repository:
// Caddy's forward_auth in front of an upstream that echoes the identity
// headers it gets. The configuration is the one docs/forward-auth.md
// shows. Building Caddy costs minutes of CPU, more than the test suite's
// budget has, so the build runs only when LATCHKEY_TEST_CADDY=1 (as
// .ci/caddy sets); a Caddy built before is used whatever the variable.

// caddyVersion is the Caddy the test builds and runs.
const caddyVersion = "v2.11.9"

// caddyBuildMu keeps two tests of this process from building at once.
var caddyBuildMu sync.Mutex

// caddyPath returns where the test keeps its Caddy:
// <user cache dir>/latchkey/caddy-<version>/caddy.
func caddyPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "latchkey", "caddy-"+caddyVersion, "caddy"), nil
}

// findCaddy returns the path of the test's Caddy, building it first when
// LATCHKEY_TEST_CADDY=1 and it is not there yet; without it the test is
// skipped with a loud message naming the way to run it.
func findCaddy(t *testing.T) string {
	t.Helper()
	bin, err := caddyPath()
	if err != nil {
		t.Fatalf("no cache directory for Caddy: %v", err)
	}
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if os.Getenv("LATCHKEY_TEST_CADDY") != "1" {
		t.Skip("!!!!! CADDY TEST NOT RUN: Caddy " + caddyVersion + " is not built at " + bin +
			"; .ci/caddy (or LATCHKEY_TEST_CADDY=1 go test -run Caddy ./httpapi/) builds it from the Go module proxy, once, and runs the test !!!!!")
	}
	caddyBuildMu.Lock()
	defer caddyBuildMu.Unlock()
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	// go install into a directory of its own, then one rename: another
	// test process building at the same time finds a whole binary or
	// none.
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Dir(bin)), "caddy-build-")
	if err != nil {
		if err = os.MkdirAll(filepath.Dir(filepath.Dir(bin)), 0o755); err == nil {
			tmp, err = os.MkdirTemp(filepath.Dir(filepath.Dir(bin)), "caddy-build-")
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	cmd := exec.Command("go", "install", "-trimpath", "-ldflags=-s", "github.com/caddyserver/caddy/v2/cmd/caddy@"+caddyVersion)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOFLAGS=-buildvcs=false")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	t.Logf("building Caddy %s from the Go module proxy into %s (once per machine; minutes of CPU)", caddyVersion, bin)
	if err := cmd.Run(); err != nil {
		t.Fatalf("go install caddy@%s: %v\n%s", caddyVersion, err, out.Bytes())
	}
	if cmd.ProcessState != nil {
		t.Logf("Caddy built in %v (CPU: user %v, system %v)", time.Since(start).Round(time.Second),
			cmd.ProcessState.UserTime().Round(time.Second), cmd.ProcessState.SystemTime().Round(time.Second))
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(tmp, "caddy"), bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// caddyfile is the test's Caddy configuration: %[1]s the working
// directory, %[2]d Caddy's port, %[3]s latchkey's address
// (127.0.0.1:port), %[4]s the project id, %[5]s the upstream's address.
const caddyfile = `{
	admin off
	auto_https off
	persist_config off
	storage file_system %[1]s/data
}

http://app.fa.localhost:%[2]d {
	bind 127.0.0.1

	# --- from docs/forward-auth.md ---
	forward_auth %[3]s {
		uri /api/v1/forward-auth/%[4]s
		copy_headers Remote-User Remote-Email Remote-Groups Remote-Name
	}
	reverse_proxy %[5]s
	# --- end ---
}
`

// startCaddy runs Caddy in front of upstream, asking ts about project
// pid, and returns its address (127.0.0.1:port).
func startCaddy(t *testing.T, ts *testServer, pid, upstream string) string {
	t.Helper()
	bin := findCaddy(t)
	dir := t.TempDir()
	port := freeLoopbackPort(t)
	conf := filepath.Join(dir, "Caddyfile")
	lk := strings.TrimPrefix(ts.URL, "http://")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(caddyfile, dir, port, lk, pid, upstream)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", conf, "--adapter", "caddyfile")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
	return runProxy(t, "caddy", cmd, port)
}

// TestForwardAuthCaddy: Caddy's forward_auth in front of an app. A
// browser (a cookie jar, the email code read from the queued mail) that
// is not signed in gets Caddy's 302 (latchkey's answer, passed on) to
// the sign-in page with the original URL; once signed in it is sent
// back and Caddy serves the app with the identity headers (copy_headers);
// bypass paths pass signed out, without identity even when the browser
// sends Remote-* headers itself; forged X-Forwarded-* headers from the
// browser change nothing (Caddy trusts no client's, and sets its own),
// and a forged X-Original-URL, which Caddy passes on, is refused (400);
// a group rule refuses a user in none of its groups (403); a path under
// an mfa rule asks a user with TOTP for the second factor first;
// sign-out ends the session Caddy lets through.
func TestForwardAuthCaddy(t *testing.T) {
	t.Parallel()
	findCaddy(t) // skips before the server starts
	ts := newFwdServer(t)
	pid := ts.Project.ID
	cd := startCaddy(t, ts, pid, echoUpstream(t))
	_, port, _ := net.SplitHostPort(cd)
	app := "http://app." + faDomain + ":" + port
	ts.wantProxyWalk("Caddy", app)
}
