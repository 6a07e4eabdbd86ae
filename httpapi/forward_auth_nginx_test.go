package httpapi_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Forward-auth behind a real nginx (Debian's nginx package, with its
// auth_request module): nginx in front of an upstream that echoes the
// identity headers it gets, asking latchkey about every request. The
// configuration is the one docs/forward-auth.md shows.

// findNginx returns the path of nginx, or "" when it is not installed.
func findNginx() string {
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	return ""
}

// nginxConf is the test's nginx configuration: %[1]s the working
// directory, %[2]d nginx's port, %[3]s latchkey's address
// (127.0.0.1:port), %[4]s the project id, %[5]s the upstream's address,
// %[6]s the user line (root runs its workers as root here, since the
// working directory is its own), %[7]s a proxy_bind line or nothing.
const nginxConf = `%[6]s
daemon off;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log info;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;

    server {
        listen 127.0.0.1:%[2]d;
        server_name app.fa.localhost;
        %[7]s

        # --- from docs/forward-auth.md ---
        location / {
            auth_request /_latchkey;
            # Who latchkey let through, for the app.
            auth_request_set $remote_user_id $upstream_http_remote_user;
            auth_request_set $remote_email $upstream_http_remote_email;
            auth_request_set $remote_groups $upstream_http_remote_groups;
            auth_request_set $remote_name $upstream_http_remote_name;
            proxy_set_header Remote-User $remote_user_id;
            proxy_set_header Remote-Email $remote_email;
            proxy_set_header Remote-Groups $remote_groups;
            proxy_set_header Remote-Name $remote_name;
            # Not signed in: latchkey answers 401 with the sign-in page
            # (and the original URL) in Location.
            auth_request_set $latchkey_signin $upstream_http_location;
            error_page 401 =302 $latchkey_signin;

            proxy_pass http://%[5]s;
        }

        location = /_latchkey {
            internal;
            proxy_pass http://%[3]s/api/v1/forward-auth/%[4]s;
            proxy_method GET;
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URL $scheme://$http_host$request_uri;
            proxy_set_header X-Forwarded-Method $request_method;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            # Not the browser's: latchkey reads X-Original-URL.
            proxy_set_header X-Forwarded-Proto "";
            proxy_set_header X-Forwarded-Host "";
            proxy_set_header X-Forwarded-Uri "";
        }
        # --- end ---
    }
}
`

// startNginx runs nginx in front of upstream, asking ts about project
// pid, and returns its address (127.0.0.1:port). nginx connects to
// latchkey and the upstream from the loopback address from ("" for
// 127.0.0.1, its default), so that a test can trust nginx and not the
// browser. Without nginx the test is skipped with a loud message, or
// fails when LATCHKEY_REQUIRE_NGINX=1 (as .ci/run sets).
func startNginx(t *testing.T, ts *testServer, pid, upstream, from string) string {
	t.Helper()
	bin := findNginx()
	if bin == "" {
		msg := "NGINX TEST NOT RUN: nginx not found (/usr/sbin/nginx, or nginx on PATH); install Debian's nginx package"
		if os.Getenv("LATCHKEY_REQUIRE_NGINX") == "1" {
			t.Fatal(msg + " (required: LATCHKEY_REQUIRE_NGINX=1)")
		}
		t.Skip("!!!!! " + msg + " !!!!!")
	}
	dir := t.TempDir()
	port := freeLoopbackPort(t)
	userLine := ""
	if os.Geteuid() == 0 {
		userLine = "user root;"
	}
	bind := ""
	if from != "" {
		bind = "proxy_bind " + from + ";"
	}
	conf := filepath.Join(dir, "nginx.conf")
	lk := strings.TrimPrefix(ts.URL, "http://")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(nginxConf, dir, port, lk, pid, upstream, userLine, bind)), 0o600); err != nil {
		t.Fatal(err)
	}
	// nginx logs to error.log (the configuration's error_log, and -e
	// for what comes before it), shown when the test fails.
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "error.log")); err == nil {
				t.Logf("nginx error.log:\n%s", b)
			}
		}
	})
	return runProxy(t, "nginx", exec.Command(bin, "-p", dir, "-c", conf, "-e", filepath.Join(dir, "error.log")), port)
}

// echoUpstream is the protected app: it answers with the identity
// headers it got.
func echoUpstream(t *testing.T) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "app %s user=%s email=%s groups=%s name=%s", r.URL.Path, r.Header.Get("Remote-User"),
			r.Header.Get("Remote-Email"), r.Header.Get("Remote-Groups"), r.Header.Get("Remote-Name"))
	}))
	t.Cleanup(up.Close)
	return strings.TrimPrefix(up.URL, "http://")
}

// TestForwardAuthNginx: nginx's auth_request in front of an app. A
// browser (a cookie jar, the email code read from the queued mail) that
// is not signed in is sent by nginx (401, error_page) to the sign-in
// page with the original URL; once signed in it is sent back and nginx
// serves the app with the identity headers; a path under an mfa rule
// asks a user with TOTP for the second factor first; a group rule
// refuses a user in none of its groups (403 from nginx); bypass paths
// pass signed out; forged X-Forwarded-* headers from the browser change
// nothing (nginx's X-Original-URL is what latchkey reads), and sent to
// latchkey directly from an address that is not a trusted proxy they
// are refused (400); sign-out ends the session nginx lets through.
func TestForwardAuthNginx(t *testing.T) {
	t.Parallel()
	ts := newFwdServer(t)
	pid := ts.Project.ID
	ng := startNginx(t, ts, pid, echoUpstream(t), "")
	_, port, _ := net.SplitHostPort(ng)
	app := "http://app." + faDomain + ":" + port

	b := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	// Bypass, signed out.
	if pg := b.get(app + "/public/x.css"); pg.Status != http.StatusOK || !strings.Contains(pg.Body, "app /public/x.css user= ") {
		t.Fatalf("bypass path: %d %s", pg.Status, pg.Body)
	}
	// Signed out: to the sign-in page with the original URL.
	orig := app + "/page?x=1&y=2"
	pg := b.get(orig)
	signin := ts.faBase() + "/oidc/" + pid + "/signin?rd=" + url.QueryEscape(orig)
	if pg.Status != http.StatusFound || pg.Location != signin {
		t.Fatalf("signed out, nginx answered %d %q, want 302 to %s\n%s", pg.Status, pg.Location, signin, pg.Body)
	}
	// Forged headers from the browser do not open a protected path.
	req, _ := http.NewRequest("GET", app+"/page", nil)
	req.Header.Set("X-Forwarded-Host", "app."+faDomain)
	req.Header.Set("X-Forwarded-Uri", "/public/")
	req.Header.Set("X-Forwarded-Proto", "http")
	if forged := (&browser{ts: ts, client: b.client}).do(req); forged.Status != http.StatusFound || strings.Contains(forged.Body, "app /page") {
		t.Fatalf("forged X-Forwarded-* through nginx: %d %s", forged.Status, forged.Body)
	}
	// ... and sent to latchkey directly from an untrusted address.
	wantError(t, ts.fwdCheck("127.0.0.2", pid, fwdHeaders("http://app."+faDomain+"/public/"), ""), http.StatusBadRequest, "UNTRUSTED_PROXY")

	// Sign in, then back through nginx to the app, with the identity.
	back := b.signIn(b.get(pg.Location), "ada@example.com")
	if back.Status != http.StatusSeeOther || back.Location != orig {
		t.Fatalf("after the code: %d %s, want 303 to %s", back.Status, back.Location, orig)
	}
	u := ts.userByEmail("ada@example.com")
	want := fmt.Sprintf("app /page user=%s email=ada@example.com groups= name=", u.ID)
	if pg := b.get(back.Location); pg.Status != http.StatusOK || pg.Body != want {
		t.Fatalf("signed in: %d %q, want %q", pg.Status, pg.Body, want)
	}
	// A group rule: ada is in no group (403); in sre, she passes.
	if pg := b.get(app + "/ops/"); pg.Status != http.StatusForbidden {
		t.Fatalf("group rule, user in no group: %d %s", pg.Status, pg.Body)
	}
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/users/"+u.ID, map[string]any{"groups": []string{"sre"}}))
	if pg := b.get(app + "/ops/"); pg.Status != http.StatusOK || !strings.Contains(pg.Body, "groups=sre") {
		t.Fatalf("group rule, user in sre: %d %s", pg.Status, pg.Body)
	}

	// mfa: a user with TOTP is asked for it, then served.
	ts.wantMFAPath(app + "/admin/")
	// ada's session proved no second factor: the mfa path sends her to
	// sign in, where a page says her account has none.
	if pg := b.get(app + "/admin/"); pg.Status != http.StatusFound {
		t.Fatalf("mfa path, one factor: %d %s", pg.Status, pg.Body)
	} else if pg := b.get(pg.Location); pg.Status != http.StatusForbidden || !strings.Contains(pg.Body, "requires a second factor") {
		t.Fatalf("sign-in page for an mfa path, no second factor: %d %s", pg.Status, pg.Body)
	}

	// Sign-out ends the session: nginx sends the browser to sign in.
	if out := b.get(ts.faBase() + "/oidc/" + pid + "/logout?rd=" + url.QueryEscape(app+"/")); out.Status != http.StatusSeeOther {
		t.Fatalf("sign-out: %d %s", out.Status, out.Body)
	}
	if pg := b.get(app + "/page"); pg.Status != http.StatusFound {
		t.Fatalf("after sign-out: %d %s", pg.Status, pg.Body)
	}
}

// wantMFAPath has a new browser reach path, behind a proxy whose rule
// for it has policy mfa, as a user with TOTP: sent to sign in (302),
// asked for the second factor after the email code (and still sent to
// sign in before giving it), then back at path and served.
func (ts *testServer) wantMFAPath(path string) {
	t := ts.t
	t.Helper()
	secret := ts.enrollTOTP(str(t, ts.login("totp@example.com").Body, "token"))
	m := &fwdBrowser{ts: ts, client: loopbackClient(t, true)}
	pg := m.get(path)
	if pg.Status != http.StatusFound {
		t.Fatalf("mfa path signed out: %d %s", pg.Status, pg.Body)
	}
	second := m.signIn(m.get(pg.Location), "totp@example.com")
	if second.Status != http.StatusOK || !strings.Contains(second.Body, "authenticator app") {
		t.Fatalf("mfa path after the email code: %d %s", second.Status, second.Body)
	}
	if pg := m.get(path); pg.Status != http.StatusFound {
		t.Fatalf("mfa path before the second factor: %d %s", pg.Status, pg.Body)
	}
	back := m.submit(second, map[string]string{"code": ts.totpCode(secret, 0)})
	if back.Status != http.StatusSeeOther || back.Location != path {
		t.Fatalf("after TOTP: %d %s", back.Status, back.Location)
	}
	u, _ := url.Parse(path)
	if pg := m.get(back.Location); pg.Status != http.StatusOK || !strings.Contains(pg.Body, "app "+u.Path+" user="+ts.userByEmail("totp@example.com").ID) {
		t.Fatalf("mfa path after the second factor: %d %s", pg.Status, pg.Body)
	}
}
