package cli_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/httpapi"
	"latchkey/internal/cli"
	"latchkey/store"
	"latchkey/store/storetest"
	"latchkey/webhook"
)

const testAdminToken = "adm_clitestclitestclitestclitest"

var testMaster = bytes.Repeat([]byte{7}, 32)

// The tests run on the store backend LATCHKEY_TEST_STORE names
// (storetest).
func TestMain(m *testing.M) { os.Exit(storetest.RunMain(m)) }

// ctx is the context of the tests' store calls: never cancelled.
var ctx = context.Background()

// testServer is the real API over loopback HTTP on a real store of the
// backend the tests run on (storetest: by default a bbolt file).
type testServer struct {
	t          testing.TB
	URL        string
	Path       string // the data file (a name beside which the CLI finds the token file, on other backends)
	AdminToken string
	Project    *store.Project // "default"
	Key        string         // a test key of Project
	db         store.DB
}

// newTestServer starts a server on a fresh store with the "default"
// project. adminToken configures the token; empty has the server generate
// one, as a first start without LATCHKEY_ADMIN_TOKEN does.
func newTestServer(t testing.TB, adminToken string) *testServer {
	t.Helper()
	dsn := storetest.New(t)
	db, _, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := dsn
	if store.IsURL(dsn) {
		path = filepath.Join(t.TempDir(), "latchkey.db")
	}
	keys, err := store.NewKeyring(testMaster)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(nil)
	url := "http://" + hs.Listener.Addr().String()
	logger := slog.New(slog.DiscardHandler)
	svc, err := auth.New(db, keys, auth.Config{BaseURL: url, AdminToken: adminToken, Logger: logger, BuiltInMail: httpapi.BuiltInMail})
	if err != nil {
		t.Fatal(err)
	}
	b, err := svc.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = httpapi.New(svc, httpapi.Config{Logger: logger, Webhooks: &webhook.Service{DB: db, Keys: keys, Now: time.Now}})
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		db.Close() // a data file is checked next (storetest.New)
	})
	ts := &testServer{t: t, URL: url, Path: path, AdminToken: adminToken, Project: b.Project, Key: b.APIKey, db: db}
	if adminToken == "" {
		ts.AdminToken = b.AdminToken
	}
	return ts
}

// result is one CLI run.
type result struct {
	Code           int
	Stdout, Stderr string
}

// run runs the CLI with exactly env as its environment.
func run(t testing.TB, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := cli.Run(context.Background(), args, cli.Env{Getenv: func(k string) string { return env[k] }}, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// cli runs the CLI against ts with the admin token in the environment.
func (ts *testServer) cli(args ...string) result {
	ts.t.Helper()
	return run(ts.t, map[string]string{"LATCHKEY_SERVER": ts.URL, "LATCHKEY_ADMIN_TOKEN": ts.AdminToken}, args...)
}

// ok runs the CLI and fails unless it exits 0.
func (ts *testServer) ok(args ...string) string {
	ts.t.Helper()
	r := ts.cli(args...)
	if r.Code != 0 {
		ts.t.Fatalf("latchkey %s: exit %d, want 0\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	if r.Stderr != "" {
		ts.t.Fatalf("latchkey %s: stderr %q, want empty", strings.Join(args, " "), r.Stderr)
	}
	return r.Stdout
}

// okJSON runs the CLI with --json and decodes its output.
func (ts *testServer) okJSON(args ...string) map[string]any {
	ts.t.Helper()
	out := ts.ok(append(args, "--json")...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		ts.t.Fatalf("latchkey %s --json: output is not JSON: %v\n%s", strings.Join(args, " "), err, out)
	}
	if m["success"] != true {
		ts.t.Fatalf("latchkey %s --json: success=%v", strings.Join(args, " "), m["success"])
	}
	return m
}

// wantFail fails unless r exited with code and stderr holds each of want.
func wantFail(t testing.TB, r result, code int, want ...string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.Code, code, r.Stdout, r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.Stderr, w) {
			t.Fatalf("stderr does not contain %q:\n%s", w, r.Stderr)
		}
	}
}

// wantContains fails unless s holds each of want.
func wantContains(t testing.TB, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("output does not contain %q:\n%s", w, s)
		}
	}
}

// tableRow returns the first table line (not indented) holding needle,
// split into cells.
func tableRow(t testing.TB, out, needle string) []string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, needle) && !strings.HasPrefix(line, " ") {
			return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
		}
	}
	t.Fatalf("no line holds %q:\n%s", needle, out)
	return nil
}

// get sends GET path with a bearer token and returns status and body.
func (ts *testServer) get(path, token string) (int, map[string]any) {
	ts.t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	return ts.send(req)
}

func (ts *testServer) send(req *http.Request) (int, map[string]any) {
	ts.t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		ts.t.Fatalf("%s %s: body is not JSON: %v", req.Method, req.URL.Path, err)
	}
	return res.StatusCode, m
}

// login signs addr in by email OTP (reading the code from the queued
// mail) and returns the session token and the user id.
func (ts *testServer) login(addr string) (token, userID string) {
	ts.t.Helper()
	if status, body := ts.post("/api/v1/otp/send", ts.Key, map[string]any{"email": addr}); status != 200 {
		ts.t.Fatalf("otp/send: %d %v", status, body)
	}
	status, body := ts.post("/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": ts.lastCode(addr)})
	if status != 200 {
		ts.t.Fatalf("otp/verify: %d %v", status, body)
	}
	return body["token"].(string), body["userId"].(string)
}

// confirm signs an external-method login for extID with secret and
// returns the status and wire code.
func (ts *testServer) confirm(secret, method, extID, email string) (int, string) {
	ts.t.Helper()
	body, _ := json.Marshal(map[string]any{
		"externalUserId": extID, "method": method, "email": email,
		"verifiedAt": time.Now().UTC().Format(time.RFC3339Nano),
	})
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/external-auth/confirm", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+ts.Key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Service-Signature", hex.EncodeToString(mac.Sum(nil)))
	status, m := ts.send(req)
	code, _ := m["code"].(string)
	return status, code
}

func TestProjectCommands(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)

	out := ts.ok("project", "create", "--name", "Shop", "--origin", "https://shop.example",
		"--origin", "http://localhost:5173", "--company-id", "acme", "--rp-id", "shop.example",
		"--session-ttl", "3600", "--rate-limit", "500", "--deny-cidr", "10.0.0.0/8,192.0.2.0/24")
	wantContains(t, out, "Shop", "https://shop.example,http://localhost:5173", "acme", "shop.example",
		"1h (3600 s)", "500/min", "10.0.0.0/8,192.0.2.0/24")

	p := ts.okJSON("project", "create", "--name", "Blog")["project"].(map[string]any)
	id := p["id"].(string)
	if p["name"] != "Blog" || p["rateLimitPerMinute"] != float64(100) || p["sessionTtlSeconds"] != float64(86400) || p["sessionRateLimitPerMinute"] != float64(120) {
		t.Fatalf("project=%v, want Blog with server defaults", p)
	}

	out = ts.ok("project", "list")
	if got := tableRow(t, out, "ID"); strings.Join(got, "|") != "ID|NAME|ORIGINS|RP ID|SESSION TTL|RATE/MIN|SESSION RATE/MIN|DENY CIDRS|EMAIL CHANGE|COMPANY ID|CREATED" {
		t.Fatalf("header=%q", got)
	}
	row := tableRow(t, out, id)
	if row[1] != "Blog" || row[2] != "-" || row[4] != "1d" || row[5] != "100" || row[6] != "120" || row[7] != "-" || row[8] != "verify" {
		t.Fatalf("row=%q", row)
	}
	wantContains(t, out, "default", "http://localhost:3000", "Shop")
	if n := len(ts.okJSON("project", "list")["projects"].([]any)); n != 3 {
		t.Fatalf("%d projects, want 3", n)
	}

	// Only the flags given are sent; flags may follow the positional ID.
	p = ts.okJSON("project", "update", id, "--name", "Blog 2", "--origin", "https://blog.example")["project"].(map[string]any)
	if p["name"] != "Blog 2" || p["rateLimitPerMinute"] != float64(100) || p["allowedOrigins"].([]any)[0] != "https://blog.example" {
		t.Fatalf("project=%v", p)
	}
	p = ts.okJSON("project", "update", "--rate-limit", "7", id)["project"].(map[string]any)
	if p["name"] != "Blog 2" || p["rateLimitPerMinute"] != float64(7) || len(p["allowedOrigins"].([]any)) != 1 {
		t.Fatalf("project=%v", p)
	}
	// A repeatable flag replaces the list; an empty value empties it.
	p = ts.okJSON("project", "update", id, "--origin", "")["project"].(map[string]any)
	if len(p["allowedOrigins"].([]any)) != 0 {
		t.Fatalf("allowedOrigins=%v, want empty", p["allowedOrigins"])
	}
	out = ts.ok("project", "update", id, "--session-ttl", "5400")
	wantContains(t, out, "Blog 2", "1h30m (5400 s)", "7/min")
	p = ts.okJSON("project", "update", id, "--email-change", "direct")["project"].(map[string]any)
	if p["emailChange"] != "direct" || p["sessionTtlSeconds"] != float64(5400) {
		t.Fatalf("project=%v", p)
	}
	wantContains(t, ts.ok("project", "update", id, "--email-change", "verify"), "Email change", "verify")
	p = ts.okJSON("project", "update", id, "--session-rate-limit", "30")["project"].(map[string]any)
	if p["sessionRateLimitPerMinute"] != float64(30) || p["rateLimitPerMinute"] != float64(7) {
		t.Fatalf("project=%v", p)
	}
	wantContains(t, ts.ok("project", "update", id, "--session-rate-limit", "45"), "Session rate limit", "45/min per session")
	wantFail(t, ts.cli("project", "update", id, "--session-rate-limit", "0"), 1, "(VALIDATION_ERROR)")
	p = ts.okJSON("project", "update", id, "--session-idle", "86400", "--session-max", "604800")["project"].(map[string]any)
	if p["sessionIdleSeconds"] != float64(86400) || p["sessionMaxSeconds"] != float64(604800) || p["sessionTtlSeconds"] != float64(5400) {
		t.Fatalf("project=%v", p)
	}
	wantContains(t, ts.ok("project", "update", id, "--session-max", "1209600"), "Session idle", "1d (86400 s) without a refresh",
		"Session maximum", "14d (1209600 s) after the sign-in")
	wantFail(t, ts.cli("project", "update", id, "--session-idle", "3600"), 1, "(VALIDATION_ERROR)") // under the token lifetime
	wantFail(t, ts.cli("project", "update", id, "--email-change", "never"), 1, "(VALIDATION_ERROR)")
	// Forward-auth: JSON in, shown compact; refused settings say why; null removes them.
	fa := `{"cookieDomain": ".example.com", "rules": [{"host": "app.example.com", "policy": "mfa"}]}`
	wantContains(t, ts.ok("project", "update", id, "--forward-auth", fa), "Forward-auth",
		`{"cookieDomain":"example.com","rules":[{"host":"app.example.com","policy":"mfa"}]}`)
	wantFail(t, ts.cli("project", "update", id, "--forward-auth", `{"cookieDomain": "example.com", "rules": [{"host": "", "policy": "mfa"}]}`), 1, "host is required")
	wantFail(t, ts.cli("project", "update", id, "--forward-auth", "not json"), 1, "(VALIDATION_ERROR)")
	if p = ts.okJSON("project", "update", id, "--forward-auth", "null")["project"].(map[string]any); p["forwardAuth"] != nil {
		t.Fatalf("forwardAuth=%v after null", p["forwardAuth"])
	}
	// Branding: sent as given; a bad colour is the server's refusal.
	p = ts.okJSON("project", "update", id, "--display-name", "Acme", "--logo-url", "https://cdn.example.com/l.png", "--accent-color", "#0A7F3E")["project"].(map[string]any)
	if p["displayName"] != "Acme" || p["logoUrl"] != "https://cdn.example.com/l.png" || p["accentColor"] != "#0a7f3e" {
		t.Fatalf("branding=%v %v %v", p["displayName"], p["logoUrl"], p["accentColor"])
	}
	wantFail(t, ts.cli("project", "update", id, "--accent-color", "red"), 1, "(VALIDATION_ERROR)")

	wantFail(t, ts.cli("project", "update", "nope", "--name", "x"), 1, "(PROJECT_NOT_FOUND)")
	wantFail(t, ts.cli("project", "create", "--name", "x", "--origin", "ftp://x.example"), 1, "(VALIDATION_ERROR)")
}

var keyShape = regexp.MustCompile(`(?m)^    (sk_(live|test)_[0-9A-Za-z]{8}_[0-9A-Za-z]{32})$`)

func TestKeyCommands(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	pid := ts.Project.ID

	out := ts.ok("key", "create", "--project", pid, "--mode", "live")
	wantContains(t, out, "shown once")
	m := keyShape.FindStringSubmatch(out)
	if m == nil || m[2] != "live" {
		t.Fatalf("no live key on a line of its own:\n%s", out)
	}
	key, prefix := m[1], m[1][:16]
	if row := tableRow(t, out, prefix); strings.Join(row, "|") != prefix+"|live|"+pid+"|active|never|"+row[5] {
		t.Fatalf("row=%q", row)
	}
	if status, body := ts.get("/api/v1/me", key); status != 200 || body["companyId"] != ts.Project.CompanyID {
		t.Fatalf("GET /me with the printed key: %d %v", status, body)
	}

	// --json prints the response, key included.
	created := ts.okJSON("key", "create", "--no-project", "--expires", "2000-01-01T00:00:00Z")
	if k, _ := created["key"].(string); !strings.HasPrefix(k, "sk_test_") {
		t.Fatalf("key=%v, want a test key", created["key"])
	}
	expired := created["apiKey"].(map[string]any)["prefix"].(string)

	out = ts.ok("key", "list")
	if got := tableRow(t, out, "PREFIX"); strings.Join(got, "|") != "PREFIX|MODE|PROJECT|STATUS|EXPIRES|CREATED" {
		t.Fatalf("header=%q", got)
	}
	if row := tableRow(t, out, expired); row[1] != "test" || row[2] != "-" || row[3] != "expired" || row[4] != "2000-01-01 00:00:00 UTC" {
		t.Fatalf("row=%q", row)
	}
	if strings.Contains(out, key) {
		t.Fatal("key list prints a full key")
	}
	if n := len(ts.okJSON("key", "list", "--project", pid)["apiKeys"].([]any)); n != 2 {
		t.Fatalf("%d keys of the default project, want 2", n)
	}

	// Flags after the positional argument.
	if got := ts.okJSON("key", "revoke", prefix); len(got) != 1 {
		t.Fatalf("revoke --json=%v, want {success:true}", got)
	}
	if status, body := ts.get("/api/v1/me", key); status != 401 || body["code"] != "API_KEY_REVOKED" {
		t.Fatalf("GET /me with a revoked key: %d %v", status, body)
	}
	if row := tableRow(t, ts.ok("key", "list", "--project", pid), prefix); row[3] != "revoked" {
		t.Fatalf("row=%q", row)
	}
	wantContains(t, ts.ok("key", "revoke", "--", expired), "Revoked API key "+expired)
	wantFail(t, ts.cli("key", "revoke", "sk_test_ZZZZZZZZ"), 1, "(API_KEY_NOT_FOUND)")
	wantFail(t, ts.cli("key", "create", "--project", "nope"), 1, "(PROJECT_NOT_FOUND)")
}

func TestMethodUserAndEventCommands(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	pid := ts.Project.ID

	out := ts.ok("method", "create", "--project", pid, "--method", "bank_id", "--pattern", "direct")
	wantContains(t, out, "shown once")
	if secret := regexp.MustCompile(`(?m)^    ([0-9a-f]{64})$`).FindStringSubmatch(out); secret == nil {
		t.Fatalf("no secret on a line of its own:\n%s", out)
	}
	reg := ts.okJSON("method", "create", "--project", pid, "--method", "card", "--pattern", "direct")["registration"].(map[string]any)
	mid, secret := reg["id"].(string), reg["secret"].(string)

	if status, code := ts.confirm(secret, "card", "ext-1", "Ann@Example.com"); status != 200 {
		t.Fatalf("confirm: %d %s", status, code)
	}
	ts.confirm(secret, "card", "ext-2", "bob@example.com")

	out = ts.ok("user", "list", "--project", pid)
	if got := tableRow(t, out, "EMAIL"); strings.Join(got, "|") != "ID|EMAIL|VERIFIED|EXTERNAL ID|COMPANY ID|GROUPS|STATUS|CREATED" {
		t.Fatalf("header=%q", got)
	}
	row := tableRow(t, out, "ann@example.com")
	uid := row[0]
	if row[2] != "yes" || row[3] != "ext-1" || row[4] != "-" || row[5] != "-" || row[6] != "active" {
		t.Fatalf("row=%q", row)
	}
	users := ts.okJSON("user", "list", "--project", pid, "--email", "bob@example.com")["users"].([]any)
	if len(users) != 1 || users[0].(map[string]any)["externalUserId"] != "ext-2" {
		t.Fatalf("users=%v", users)
	}
	if out := ts.ok("user", "list", "--project", pid, "--email", "nobody@example.com"); out != "No users.\n" {
		t.Fatalf("out=%q", out)
	}

	wantContains(t, ts.ok("user", "disable", uid), "Disabled user "+uid)
	if status, code := ts.confirm(secret, "card", "ext-1", ""); status != 403 || code != "USER_DISABLED" {
		t.Fatalf("confirm for a disabled user: %d %s", status, code)
	}
	if row := tableRow(t, ts.ok("user", "list", "--project", pid), uid); row[6] != "disabled" {
		t.Fatalf("row=%q", row)
	}
	ts.okJSON("user", "enable", uid)
	if status, code := ts.confirm(secret, "card", "ext-1", ""); status != 200 {
		t.Fatalf("confirm after enable: %d %s", status, code)
	}
	wantFail(t, ts.cli("user", "disable", "nope"), 1, "(USER_NOT_FOUND)")
	wantFail(t, ts.cli("user", "reset-totp", uid), 1, "(TOTP_NOT_ENROLLED)")
	wantFail(t, ts.cli("user", "reset-totp", "nope"), 1, "(USER_NOT_FOUND)")
	wantFail(t, ts.cli("user", "reset-totp"), 2)
	wantFail(t, ts.cli("user", "reset-sms", uid), 1, "(SMS_NOT_ENROLLED)")
	wantFail(t, ts.cli("user", "reset-sms", "nope"), 1, "(USER_NOT_FOUND)")
	wantFail(t, ts.cli("user", "reset-sms"), 2)

	if row := tableRow(t, ts.ok("method", "disable", mid), mid); row[2] != "card" || row[3] != "direct" || row[4] != "inactive" {
		t.Fatalf("row=%q", row)
	}
	if status, _ := ts.confirm(secret, "card", "ext-1", ""); status == 200 {
		t.Fatal("confirm succeeded on an inactive registration")
	}
	got := ts.okJSON("method", "enable", mid)["registration"].(map[string]any)
	if got["status"] != "active" || got["secret"] != nil {
		t.Fatalf("registration=%v, want active without its secret", got)
	}

	// Events: three logins, one disabled user, one inactive method.
	out = ts.ok("events", "--project", pid)
	if got := tableRow(t, out, "TIME"); strings.Join(got, "|") != "TIME|PROJECT|METHOD|ACTION|RESULT|EMAIL|IP" {
		t.Fatalf("header=%q", got)
	}
	wantContains(t, out, "user_disabled", "ann@example.com", "ok")
	evs := ts.okJSON("events", "--project", pid)["events"].([]any)
	if len(evs) != 5 {
		t.Fatalf("%d events, want 5", len(evs))
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--failure-code", "user_disabled"}, 1},
		{[]string{"--limit", "2"}, 2},
		{[]string{"--project", "nope"}, 0},
	} {
		if n := len(ts.okJSON(append([]string{"events"}, tc.args...)...)["events"].([]any)); n != tc.want {
			t.Errorf("events %v: %d events, want %d", tc.args, n, tc.want)
		}
	}
	out = ts.ok("events", "--failure-code", "user_disabled")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "user_disabled") {
		t.Fatalf("out=%q", out)
	}
	if out := ts.ok("events", "--project", "nope"); out != "No events.\n" {
		t.Fatalf("out=%q", out)
	}
}

// TestBackup: backups are data files (bbolt only: on PostgreSQL the
// server answers 501, pg_dump backs it up).
func TestBackup(t *testing.T) {
	t.Parallel()
	if storetest.Backend(t) != storetest.Bolt {
		t.Skip("a backup is a bbolt data file")
	}
	ts := newTestServer(t, testAdminToken)
	dir := t.TempDir()
	file := filepath.Join(dir, "backup.db")
	wantContains(t, ts.ok("backup", "--out", file), "Wrote a backup of", file)
	checkBackup(t, file, ts.Project.ID)
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode=%v, want 0600", st.Mode().Perm())
	}
	// Overwrites atomically and leaves no temporary file.
	got := ts.okJSON("backup", "--out", file)
	if got["out"] != file || got["bytes"].(float64) <= 0 {
		t.Fatalf("backup --json=%v", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("%d files in the output directory, want 1", len(ents))
	}

	// --out - writes the copy to stdout.
	raw := ts.ok("backup", "--out", "-")
	stdoutCopy := filepath.Join(dir, "stdout.db")
	if err := os.WriteFile(stdoutCopy, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	checkBackup(t, stdoutCopy, ts.Project.ID)

	wantFail(t, ts.cli("backup", "--out", ts.Path, "--data", ts.Path), 1, "refusing")
	wantFail(t, ts.cli("backup", "--out", filepath.Join(dir, "missing", "b.db")), 1)
}

// checkBackup opens file as a data file and finds project id in it.
func checkBackup(t *testing.T, file, projectID string) {
	t.Helper()
	db, created, err := store.Open(ctx, file, store.Options{})
	if err != nil {
		t.Fatalf("open backup: %v", err)
	}
	defer db.Close()
	if created {
		t.Fatal("backup file was missing")
	}
	if err := db.(store.File).Check(); err != nil {
		t.Fatalf("backup check: %v", err)
	}
	if err := db.View(ctx, func(tx store.Tx) error {
		_, err := tx.Project(projectID)
		return err
	}); err != nil {
		t.Fatalf("project in backup: %v", err)
	}
}

func TestAdminTokenSources(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, "") // the server generates the token
	file := ts.Path + ".admin-token"
	if err := os.WriteFile(file, []byte("\n  "+ts.AdminToken+"  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrong := "adm_wrongwrongwrongwrongwrong"
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"file from LATCHKEY_DATA", map[string]string{"LATCHKEY_DATA": ts.Path}, nil},
		{"file from --data", nil, []string{"--data", ts.Path}},
		{"--data beats LATCHKEY_DATA", map[string]string{"LATCHKEY_DATA": "/nonexistent/x.db"}, []string{"--data", ts.Path}},
		{"env", map[string]string{"LATCHKEY_ADMIN_TOKEN": ts.AdminToken}, nil},
		{"env beats file", map[string]string{"LATCHKEY_ADMIN_TOKEN": ts.AdminToken, "LATCHKEY_DATA": "/nonexistent/x.db"}, nil},
		{"flag beats env", map[string]string{"LATCHKEY_ADMIN_TOKEN": wrong}, []string{"--admin-token", ts.AdminToken}},
		{"--server flag", map[string]string{"LATCHKEY_SERVER": "http://127.0.0.1:1", "LATCHKEY_ADMIN_TOKEN": ts.AdminToken}, []string{"--server", ts.URL + "/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"LATCHKEY_SERVER": ts.URL}
			for k, v := range tc.env {
				env[k] = v
			}
			r := run(t, env, append([]string{"project", "list"}, tc.args...)...)
			if r.Code != 0 || !strings.Contains(r.Stdout, "default") {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}

	r := run(t, map[string]string{"LATCHKEY_SERVER": ts.URL, "LATCHKEY_DATA": filepath.Join(t.TempDir(), "none.db")}, "project", "list")
	wantFail(t, r, 1, "no admin token", "none.db.admin-token")
}

func TestWrongAdminToken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	wrong := "adm_wrongwrongwrongwrongwrong"
	for _, args := range [][]string{
		{"project", "list"},
		{"key", "create", "--project", "p", "--json"},
		{"user", "disable", "x"},
		{"backup", "--out", filepath.Join(t.TempDir(), "b.db")},
		{"backup", "--out", "-"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := run(t, map[string]string{"LATCHKEY_SERVER": ts.URL, "LATCHKEY_ADMIN_TOKEN": wrong}, args...)
			wantFail(t, r, 1)
			if !regexp.MustCompile(`^latchkey: \S.* \(UNAUTHORIZED\)\n$`).MatchString(r.Stderr) {
				t.Fatalf("stderr=%q, want latchkey: <message> (UNAUTHORIZED)", r.Stderr)
			}
			if strings.Contains(r.Stdout+r.Stderr, wrong) {
				t.Fatalf("stdout=%q stderr=%q: the token is shown", r.Stdout, r.Stderr)
			}
			if !slices.Contains(args, "--json") {
				if r.Stdout != "" {
					t.Fatalf("stdout=%q, want nothing", r.Stdout)
				}
				return
			}
			// --json prints the error envelope as the API sent it.
			var env map[string]any
			if err := json.Unmarshal([]byte(r.Stdout), &env); err != nil || env["success"] != false || env["code"] != "UNAUTHORIZED" || env["error"] == "" {
				t.Fatalf("stdout=%q, want the UNAUTHORIZED envelope", r.Stdout)
			}
		})
	}
	// Help and usage never show a token taken from the environment.
	r := run(t, map[string]string{"LATCHKEY_ADMIN_TOKEN": testAdminToken}, "key", "create", "--help")
	if r.Code != 0 || strings.Contains(r.Stdout+r.Stderr, testAdminToken) {
		t.Fatalf("exit %d, help shows the token:\n%s", r.Code, r.Stdout)
	}
	// A malformed token is refused without being echoed.
	bad := "adm_bad\ntoken"
	r = run(t, map[string]string{"LATCHKEY_SERVER": ts.URL, "LATCHKEY_ADMIN_TOKEN": bad}, "project", "list")
	wantFail(t, r, 1, "malformed")
	if strings.Contains(r.Stderr, "adm_bad") {
		t.Fatalf("stderr echoes the token: %q", r.Stderr)
	}
}

func TestUnreachableServer(t *testing.T) {
	t.Parallel()
	r := run(t, map[string]string{"LATCHKEY_SERVER": "http://127.0.0.1:1", "LATCHKEY_ADMIN_TOKEN": testAdminToken}, "project", "list")
	wantFail(t, r, 1, "cannot reach http://127.0.0.1:1")
	if strings.Contains(r.Stderr, testAdminToken) {
		t.Fatal("stderr holds the token")
	}
}

// singleDash finds a flag written with one dash ("-server") in a message.
var singleDash = regexp.MustCompile(`(^|[\s:(])-[a-z]`)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	// No server: a usage error must be found before any request.
	env := map[string]string{"LATCHKEY_SERVER": "http://127.0.0.1:1", "LATCHKEY_ADMIN_TOKEN": testAdminToken}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing", nil, "latchkey key create"},
		{"unknown command", []string{"frob"}, `unknown command "frob"`},
		{"group alone", []string{"key"}, "missing subcommand"},
		{"unknown subcommand", []string{"key", "frob"}, `unknown subcommand "frob"`},
		{"unknown flag", []string{"key", "list", "--bogus"}, "latchkey key list: unknown flag --bogus\n"},
		{"unknown flag, one dash", []string{"key", "list", "-bogus"}, "latchkey key list: unknown flag --bogus\n"},
		{"flag without value", []string{"key", "list", "--project"}, "latchkey key list: --project needs a value\n"},
		{"bad boolean", []string{"key", "list", "--json=maybe"}, `latchkey key list: invalid value "maybe" for --json: parse error`},
		{"bad mode", []string{"key", "create", "--project", "p", "--mode", "prod"}, "--mode must be live or test"},
		{"bad expires", []string{"key", "create", "--no-project", "--expires", "tomorrow"}, "--expires must be an RFC 3339 time"},
		{"key without project", []string{"key", "create"}, "--project is required"},
		{"key without project, live", []string{"key", "create", "--mode", "live", "--json"}, "--no-project"},
		{"key with both", []string{"key", "create", "--project", "p", "--no-project"}, "not both"},
		{"key with empty project", []string{"key", "create", "--project", ""}, "--project needs a project ID"},
		{"unknown failure code", []string{"events", "--failure-code", "bogus"}, `--failure-code must be one of invalid_code, expired, already_used, rate_limited, user_not_found, user_disabled, user_exists, validation_error, risk_blocked, external_method_error, internal_error; got "bogus"`},
		{"empty failure code", []string{"events", "--failure-code", ""}, "--failure-code must be one of"},
		{"project delete id", []string{"project", "delete"}, "missing ID"},
		{"webhook project required", []string{"webhook", "list"}, "--project is required"},
		{"method list project required", []string{"method", "list"}, "--project is required"},
		{"user update nothing", []string{"user", "update", "u"}, "nothing to update"},
		{"user update both", []string{"user", "update", "u", "--company-id", "acme", "--no-company"}, "not both"},
		{"user update metadata not JSON", []string{"user", "update", "u", "--metadata", "role=admin"}, "--metadata must be a JSON object"},
		{"user update metadata not an object", []string{"user", "update", "u", "--metadata", "[1]"}, "--metadata must be a JSON object"},
		{"user delete id", []string{"user", "delete"}, "missing ID"},
		{"missing positional", []string{"key", "revoke"}, "missing PREFIX"},
		{"extra positional", []string{"key", "revoke", "a", "b"}, `unexpected argument "b"`},
		{"positional where none", []string{"project", "list", "x"}, `unexpected argument "x"`},
		{"project name required", []string{"project", "create", "--origin", "https://a.example"}, "--name is required"},
		{"nothing to update", []string{"project", "update", "x", "--json"}, "nothing to update"},
		{"bad int", []string{"project", "update", "x", "--session-ttl", "1h"}, `invalid value "1h" for --session-ttl: parse error`},
		{"method project required", []string{"method", "create", "--method", "m", "--pattern", "direct"}, "--project is required"},
		{"method pattern", []string{"method", "create", "--project", "p", "--method", "m", "--pattern", "carrier"}, "--pattern must be direct or webhook"},
		{"user project required", []string{"user", "list"}, "--project is required"},
		{"events limit", []string{"events", "--limit", "0"}, "--limit must be a positive integer"},
		{"backup out required", []string{"backup"}, "--out is required"},
		{"bad server", []string{"project", "list", "--server", "ftp://x.example"}, "--server must be an http:// or https:// URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, env, tc.args...)
			wantFail(t, r, 2, tc.want)
			if r.Stdout != "" {
				t.Fatalf("stdout=%q, want empty", r.Stdout)
			}
			// The message names every flag with two dashes.
			if msg, _, _ := strings.Cut(r.Stderr, "\n"); singleDash.MatchString(msg) {
				t.Fatalf("the message names a flag with one dash: %q", msg)
			}
			if len(tc.args) >= 2 && !strings.Contains(r.Stderr, "Usage: latchkey "+tc.args[0]) {
				t.Fatalf("stderr has no usage:\n%s", r.Stderr)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"key", "create", "--help"}, []string{"Usage: latchkey key create [flags]", "--mode MODE", "(default test)", "--expires TIME", "--server URL", "--admin-token TOKEN", "--json"}},
		{[]string{"project", "update", "-h"}, []string{"Usage: latchkey project update ID [flags]", "--origin ORIGIN", "--deny-cidr CIDR", "--session-ttl SECONDS"}},
		{[]string{"key", "revoke", "x", "--help"}, []string{"latchkey key revoke PREFIX"}},
		{[]string{"backup", "--help"}, []string{"--out FILE", "0600"}},
		{[]string{"events", "-help"}, []string{"--failure-code CATEGORY", "--limit N"}},
		{[]string{"user", "--help"}, []string{"latchkey user list", "latchkey user disable ID", "latchkey user enable ID", "latchkey user reset-totp ID"}},
		{[]string{"method", "help"}, []string{"latchkey method create", "latchkey method disable ID"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, nil, tc.args...)
			if r.Code != 0 || r.Stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.Code, r.Stderr)
			}
			wantContains(t, r.Stdout, tc.want...)
		})
	}
	var b strings.Builder
	cli.Usage(&b)
	wantContains(t, b.String(), "latchkey serve [flags]", "latchkey version", "latchkey project create", "latchkey key revoke PREFIX", "latchkey events", "latchkey backup", "--server URL", "LATCHKEY_ADMIN_TOKEN")
}

// TestUnknownCommandUsage: an unknown command's usage lists serve,
// version and every subcommand.
func TestUnknownCommandUsage(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "frob")
	wantFail(t, r, 2, `unknown command "frob"`)
	want := []string{"latchkey serve [flags]", "latchkey version"}
	for _, name := range []string{
		"project create", "project list", "project update ID", "project delete ID",
		"key create", "key list", "key revoke PREFIX",
		"method create", "method list", "method disable ID", "method enable ID",
		"provider add", "provider list", "provider set NAME", "provider remove NAME",
		"client create", "client list", "client get ID", "client update ID", "client delete ID", "client rotate-secret ID",
		"webhook list",
		"user list", "user update ID", "user delete ID", "user disable ID", "user enable ID", "user reset-totp ID", "user reset-sms ID", "user sessions ID", "user revoke-sessions ID",
		"events", "backup",
	} {
		want = append(want, "latchkey "+name)
	}
	wantContains(t, r.Stderr, want...)
}

// TestFailureCategories: the CLI's list of categories is the server's.
func TestFailureCategories(t *testing.T) {
	t.Parallel()
	if !slices.Equal(cli.FailureCategories, auth.FailureCategories) {
		t.Fatalf("cli categories %v, want the server's %v", cli.FailureCategories, auth.FailureCategories)
	}
}

// TestDeleteCommands: project delete and user delete remove what they
// name (its tokens stop working; the project's keys are detached);
// unknown ids exit 1 with the API's code.
func TestDeleteCommands(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	shop := ts.okJSON("project", "create", "--name", "Shop")["project"].(map[string]any)["id"].(string)
	key := keyShape.FindStringSubmatch(ts.ok("key", "create", "--project", shop))[1]
	if status, _ := ts.get("/api/v1/me", key); status != 200 {
		t.Fatalf("GET /me with the new key: %d", status)
	}
	wantContains(t, ts.ok("project", "delete", shop), "Deleted project "+shop)
	if status, body := ts.get("/api/v1/me", key); status != 401 || body["code"] != "INVALID_API_KEY" {
		t.Fatalf("GET /me with a deleted project's key: %d %v", status, body)
	}
	if out := ts.ok("project", "list"); strings.Contains(out, shop) {
		t.Fatalf("project list still shows the deleted project:\n%s", out)
	}
	wantFail(t, ts.cli("project", "delete", shop), 1, "(PROJECT_NOT_FOUND)")
	if got := ts.okJSON("project", "delete", ts.okJSON("project", "create", "--name", "Tmp")["project"].(map[string]any)["id"].(string)); len(got) != 1 {
		t.Fatalf("project delete --json=%v, want {success:true}", got)
	}

	tok, uid := ts.login("gone@example.com")
	wantContains(t, ts.ok("user", "delete", uid), "Deleted user "+uid)
	if status, body := ts.get("/api/v1/session", tok); status != 401 || body["code"] != "INVALID_SESSION" {
		t.Fatalf("GET /session after user delete: %d %v", status, body)
	}
	if out := ts.ok("user", "list", "--project", ts.Project.ID); out != "No users.\n" {
		t.Fatalf("user list after delete: %q", out)
	}
	wantFail(t, ts.cli("user", "delete", uid), 1, "(USER_NOT_FOUND)")
	r := ts.cli("user", "delete", "nope", "--json")
	wantFail(t, r, 1, "(USER_NOT_FOUND)")
	wantContains(t, r.Stdout, `"code": "USER_NOT_FOUND"`)
}

// TestUserUpdate: --company-id sets the company; --no-company and
// --company-id with an empty value clear it (null).
func TestUserUpdate(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	_, uid := ts.login("ann@example.com")
	out := ts.ok("user", "update", uid, "--company-id", "acme")
	if got := tableRow(t, out, "EMAIL"); strings.Join(got, "|") != "ID|EMAIL|VERIFIED|EXTERNAL ID|COMPANY ID|GROUPS|STATUS|CREATED" {
		t.Fatalf("header=%q", got)
	}
	if row := tableRow(t, out, uid); row[1] != "ann@example.com" || row[2] != "yes" || row[4] != "acme" {
		t.Fatalf("row=%q", row)
	}
	for _, clear := range [][]string{{"--no-company"}, {"--company-id", ""}, {"--company-id="}} {
		ts.ok("user", "update", uid, "--company-id", "acme")
		u := ts.okJSON(append([]string{"user", "update", uid}, clear...)...)["user"].(map[string]any)
		if v, ok := u["companyId"]; !ok || v != nil {
			t.Fatalf("%v: companyId=%v, want null", clear, u["companyId"])
		}
	}
	users := ts.okJSON("user", "list", "--project", ts.Project.ID)["users"].([]any)
	if u := users[0].(map[string]any); u["companyId"] != nil {
		t.Fatalf("stored companyId=%v, want null", u["companyId"])
	}
	wantFail(t, ts.cli("user", "update", "nope", "--company-id", "x"), 1, "(USER_NOT_FOUND)")
	wantFail(t, ts.cli("user", "update", uid, "--company-id", strings.Repeat("x", 129)), 1, "(VALIDATION_ERROR)")
}

// TestUserUpdateGroupsMetadata: --group replaces the groups (repeated or
// with commas; an empty value clears them), --metadata the metadata (an
// empty value clears it);
// a flag not given leaves its field as it is; the table shows the
// groups and a line the metadata; the server's refusal of a group name
// is the command's failure.
func TestUserUpdateGroupsMetadata(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	_, uid := ts.login("ann@example.com")
	out := ts.ok("user", "update", uid, "--group", "staff,admins", "--group", "staff", "--metadata", `{"role": "admin"}`)
	if row := tableRow(t, out, uid); row[5] != "admins,staff" {
		t.Fatalf("row=%q", row)
	}
	wantContains(t, out, `Metadata: {"role":"admin"}`)
	u := ts.okJSON("user", "update", uid, "--company-id", "acme")["user"].(map[string]any)
	if fmt.Sprint(u["groups"]) != "[admins staff]" || fmt.Sprint(u["metadata"]) != "map[role:admin]" || u["companyId"] != "acme" {
		t.Fatalf("after --company-id alone: %v", u)
	}
	u = ts.okJSON("user", "update", uid, "--group", "")["user"].(map[string]any)
	if fmt.Sprint(u["groups"]) != "[]" || fmt.Sprint(u["metadata"]) != "map[role:admin]" {
		t.Fatalf("after --group '': %v", u)
	}
	u = ts.okJSON("user", "update", uid, "--metadata", "")["user"].(map[string]any)
	if fmt.Sprint(u["metadata"]) != "map[]" || u["companyId"] != "acme" {
		t.Fatalf("after --metadata '': %v", u)
	}
	wantContains(t, ts.ok("user", "update", uid, "--group", "ops"), "Metadata: {}")
	wantFail(t, ts.cli("user", "update", uid, "--group", "Admins"), 1, "(VALIDATION_ERROR)")
	users := ts.okJSON("user", "list", "--project", ts.Project.ID)["users"].([]any)
	if u := users[0].(map[string]any); fmt.Sprint(u["groups"]) != "[ops]" {
		t.Fatalf("stored groups=%v, want [ops]", u["groups"])
	}
}

// TestListCommands: webhook list and method list print a project's
// webhooks and methods without secrets, "No ..." when there are none,
// and the API's JSON with --json.
func TestListCommands(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	pid := ts.Project.ID
	if out := ts.ok("webhook", "list", "--project", pid); out != "No webhooks.\n" {
		t.Fatalf("out=%q", out)
	}
	if out := ts.ok("method", "list", "--project", pid); out != "No external methods.\n" {
		t.Fatalf("out=%q", out)
	}
	status, body := ts.post("/api/v1/webhooks", ts.Key, map[string]any{"url": "http://127.0.0.1:9/hook", "eventTypes": []string{"user.registered", "user.deleted"}})
	if status != 200 {
		t.Fatalf("create webhook: %d %v", status, body)
	}
	hook := body["webhook"].(map[string]any)
	ts.post("/api/v1/webhooks", ts.Key, map[string]any{"url": "http://127.0.0.1:9/all"})

	out := ts.ok("webhook", "list", "--project", pid)
	if got := tableRow(t, out, "URL"); strings.Join(got, "|") != "ID|URL|MODE|EVENTS|CREATED" {
		t.Fatalf("header=%q", got)
	}
	if row := tableRow(t, out, hook["id"].(string)); row[1] != "http://127.0.0.1:9/hook" || row[2] != "test" || row[3] != "user.deleted,user.registered" {
		t.Fatalf("row=%q", row)
	}
	if row := tableRow(t, out, "/all"); row[3] != "all" {
		t.Fatalf("row=%q", row)
	}
	hooks := ts.okJSON("webhook", "list", "--project", pid)["webhooks"].([]any)
	if len(hooks) != 2 || hooks[0].(map[string]any)["url"] != "http://127.0.0.1:9/hook" {
		t.Fatalf("webhooks=%v", hooks)
	}
	if strings.Contains(out+ts.ok("webhook", "list", "--project", pid, "--json"), hook["secret"].(string)) {
		t.Fatal("webhook list shows a secret")
	}

	reg := ts.okJSON("method", "create", "--project", pid, "--method", "bank_id", "--pattern", "direct")["registration"].(map[string]any)
	ts.ok("method", "create", "--project", pid, "--method", "card", "--pattern", "webhook")
	out = ts.ok("method", "list", "--project", pid)
	if got := tableRow(t, out, "METHOD"); strings.Join(got, "|") != "ID|PROJECT|METHOD|PATTERN|STATUS|CREATED" {
		t.Fatalf("header=%q", got)
	}
	if row := tableRow(t, out, reg["id"].(string)); row[1] != pid || row[2] != "bank_id" || row[3] != "direct" || row[4] != "active" {
		t.Fatalf("row=%q", row)
	}
	wantContains(t, out, "card", "webhook")
	regs := ts.okJSON("method", "list", "--project", pid)["registrations"].([]any)
	if len(regs) != 2 {
		t.Fatalf("registrations=%v", regs)
	}
	if strings.Contains(out+ts.ok("method", "list", "--project", pid, "--json"), reg["secret"].(string)) {
		t.Fatal("method list shows a secret")
	}
	wantFail(t, ts.cli("webhook", "list", "--project", "nope"), 1, "(PROJECT_NOT_FOUND)")
	wantFail(t, ts.cli("method", "list", "--project", "nope"), 1, "(PROJECT_NOT_FOUND)")
}

// TestEventsFailureCode: every known category is accepted and filters.
func TestEventsFailureCode(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	for _, c := range auth.FailureCategories {
		if out := ts.ok("events", "--failure-code", c); out != "No events.\n" {
			t.Fatalf("%s: out=%q", c, out)
		}
	}
}

// TestBackupOnPostgres: on PostgreSQL the backup command fails in one
// line naming pg_dump (the server answers 501 NOT_SUPPORTED).
func TestBackupOnPostgres(t *testing.T) {
	t.Parallel()
	if storetest.Backend(t) != storetest.Postgres {
		t.Skip("bbolt answers a backup (TestBackup); this test runs on the postgres pass")
	}
	ts := newTestServer(t, testAdminToken)
	wantFail(t, ts.cli("backup", "--out", filepath.Join(t.TempDir(), "b.db")), 1, "pg_dump")
}

// TestCustomHTTPClient checks Env.HTTPClient is used for every call.
func TestCustomHTTPClient(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	var n int
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		n++
		return http.DefaultTransport.RoundTrip(r)
	})}
	var stdout bytes.Buffer
	env := cli.Env{Getenv: func(k string) string {
		return map[string]string{"LATCHKEY_SERVER": ts.URL, "LATCHKEY_ADMIN_TOKEN": testAdminToken}[k]
	}, HTTPClient: hc}
	// backup streams its answer through a path of its own; PostgreSQL has
	// no backup (501), so there the second call is another list.
	second := []string{"backup", "--out", "-"}
	if storetest.Backend(t) == "postgres" {
		second = []string{"key", "list"}
	}
	for _, args := range [][]string{{"project", "list"}, second} {
		if code := cli.Run(context.Background(), args, env, &stdout, io.Discard); code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
	}
	if n != 2 {
		t.Fatalf("%d requests through the client, want 2", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestUserResetTOTP: `user reset-totp ID` lifts a TOTP lockout through
// the admin API, keeping the enrolment; --json prints {success:true}.
func TestUserResetTOTP(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	tok, uid := ts.totpUser("locked@example.com")
	for i := 0; i < 10; i++ {
		if status, _ := ts.post("/api/v1/totp/verify", tok, map[string]any{"code": "12345"}); status != 401 {
			t.Fatalf("wrong code: %d", status)
		}
	}
	if f := ts.totpFactor(uid); f.Failures != 10 || f.LockedUntil.IsZero() {
		t.Fatalf("factor=%+v, want locked", f)
	}
	wantContains(t, ts.ok("user", "reset-totp", uid), "Reset the TOTP lockout of user "+uid)
	if f := ts.totpFactor(uid); f.Failures != 0 || !f.LockedUntil.IsZero() || f.Status != "pending" {
		t.Fatalf("factor=%+v, want reset and still there", f)
	}
	if got := ts.okJSON("user", "reset-totp", uid); len(got) != 1 {
		t.Fatalf("--json=%v, want {success:true}", got)
	}
}

// TestUserResetSMS: `user reset-sms ID` lifts the enrolled phone's
// lockout through the admin API, keeping the phone; --json prints
// {success:true}. (The server has no SMS provider: the locked factor is
// written as wrong codes would leave it.)
func TestUserResetSMS(t *testing.T) {
	ts := newTestServer(t, testAdminToken)
	_, uid := ts.totpUser("smslocked@example.com")
	now := time.Now().UTC()
	err := ts.db.Update(ctx, func(tx store.Tx) error {
		return tx.PutFactor(&store.Factor{UserID: uid, ProjectID: ts.Project.ID, Kind: "sms", Status: "enrolled", Phone: "+15551230001",
			Failures: 100, LockedUntil: now.Add(time.Hour), CreatedAt: now, EnrolledAt: &now})
	})
	if err != nil {
		t.Fatal(err)
	}
	wantContains(t, ts.ok("user", "reset-sms", uid), "Reset the SMS lockout of user "+uid)
	var f *store.Factor
	ts.db.View(ctx, func(tx store.Tx) (err error) { f, err = tx.Factor(uid, "sms"); return err })
	if f == nil || f.Failures != 0 || !f.LockedUntil.IsZero() || f.Phone != "+15551230001" {
		t.Fatalf("factor=%+v, want reset and still enrolled", f)
	}
	if got := ts.okJSON("user", "reset-sms", uid); len(got) != 1 {
		t.Fatalf("--json=%v, want {success:true}", got)
	}
}

// totpUser signs addr in by email OTP and gives the user a pending TOTP
// factor, through the API; the code is read from the queued mail.
func (ts *testServer) totpUser(addr string) (token, userID string) {
	ts.t.Helper()
	if status, body := ts.post("/api/v1/otp/send", ts.Key, map[string]any{"email": addr}); status != 200 {
		ts.t.Fatalf("otp/send: %d %v", status, body)
	}
	code := ts.lastCode(addr)
	status, body := ts.post("/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code})
	if status != 200 {
		ts.t.Fatalf("otp/verify: %d %v", status, body)
	}
	token, userID = body["token"].(string), body["userId"].(string)
	if status, body := ts.post("/api/v1/totp/enroll", token, map[string]any{}); status != 200 {
		ts.t.Fatalf("totp/enroll: %d %v", status, body)
	}
	return token, userID
}

// post sends a JSON POST with a bearer token.
func (ts *testServer) post(path, token string, body any) (int, map[string]any) {
	ts.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", ts.URL+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return ts.send(req)
}

// lastCode opens the newest queued mail to addr and returns its code.
func (ts *testServer) lastCode(addr string) string {
	ts.t.Helper()
	keys, err := store.NewKeyring(testMaster)
	if err != nil {
		ts.t.Fatal(err)
	}
	code := ""
	ts.db.View(ctx, func(tx store.Tx) error {
		return tx.RecentMail(func(m *store.Mail) bool {
			if m.To != addr {
				return true
			}
			raw, err := keys.Open(m.Body, store.MailAAD)
			if err != nil {
				ts.t.Fatal(err)
			}
			var c store.MailContent
			json.Unmarshal(raw, &c)
			code = c.Code
			return false
		})
	})
	return code
}

// totpFactor returns userID's TOTP factor row.
func (ts *testServer) totpFactor(userID string) *store.Factor {
	ts.t.Helper()
	var f *store.Factor
	err := ts.db.View(ctx, func(tx store.Tx) error {
		var err error
		f, err = tx.Factor(userID, "totp")
		return err
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return f
}

// TestProviderCommands: provider add reads the secret from a file and
// never prints it; list shows the providers; set changes whether one
// links by address; remove removes one.
func TestProviderCommands(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	pid := ts.Project.ID
	if out := ts.ok("provider", "list", "--project", pid); out != "No providers.\n" {
		t.Fatalf("out=%q", out)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("gh-very-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := ts.ok("provider", "add", "--project", pid, "--type", "github", "--client-id", "gh-id", "--client-secret-file", secret)
	if row := tableRow(t, out, "gh-id"); row[0] != "github" || row[1] != "github" {
		t.Fatalf("row=%q", row)
	}
	wantFail(t, ts.cli("provider", "add", "--project", pid, "--type", "github", "--client-id", "x", "--client-secret-file", secret), 1, "(PROVIDER_EXISTS)")
	wantFail(t, ts.cli("provider", "add", "--project", pid, "--type", "github"), 2, "--client-id is required")
	list := ts.ok("provider", "list", "--project", pid)
	if strings.Contains(list+out+ts.ok("provider", "list", "--project", pid, "--json"), "gh-very-secret") {
		t.Fatal("a provider command shows the secret")
	}
	wantContains(t, list, "github", "read:user user:email", "query")

	// The response mode: Apple's default is form_post, any OpenID
	// Connect provider may be asked for it, GitHub cannot.
	out = ts.ok("provider", "add", "--project", pid, "--type", "apple", "--client-id", "com.example.web", "--client-secret-file", secret)
	if row := tableRow(t, out, "com.example.web"); row[0] != "apple" || row[len(row)-2] != "form_post" {
		t.Fatalf("apple row=%q, want response mode form_post", row)
	}
	out = ts.ok("provider", "add", "--project", pid, "--type", "oidc", "--name", "corp", "--issuer", "https://idp.example.com",
		"--client-id", "corp-id", "--client-secret-file", secret, "--response-mode", "form_post")
	if row := tableRow(t, out, "corp-id"); row[0] != "corp" || row[len(row)-2] != "form_post" || row[len(row)-3] != "no" {
		t.Fatalf("oidc row=%q, want response mode form_post and no linking by address", row)
	}
	if row := tableRow(t, ts.ok("provider", "list", "--project", pid), "gh-id"); row[len(row)-3] != "yes" {
		t.Fatalf("github row=%q, want linking by address", row)
	}
	// Linking by address: set at add, changed by set.
	out = ts.ok("provider", "set", "corp", "--project", pid, "--link-by-email", "yes")
	if row := tableRow(t, out, "corp-id"); row[len(row)-3] != "yes" {
		t.Fatalf("after set yes: row=%q", row)
	}
	out = ts.ok("provider", "add", "--project", pid, "--type", "google", "--client-id", "g-id", "--client-secret-file", secret, "--link-by-email", "NO")
	if row := tableRow(t, out, "g-id"); row[len(row)-3] != "no" {
		t.Fatalf("google added with --link-by-email NO: row=%q", row)
	}
	wantFail(t, ts.cli("provider", "set", "corp", "--project", pid, "--link-by-email", "maybe"), 2, "--link-by-email must be yes or no")
	wantFail(t, ts.cli("provider", "set", "corp", "--project", pid), 2, "--link-by-email is required")
	wantFail(t, ts.cli("provider", "set", "nope", "--project", pid, "--link-by-email", "no"), 1, "(PROVIDER_NOT_FOUND)")
	ts.ok("provider", "remove", "google", "--project", pid)
	var listed struct {
		Providers []struct {
			Name, ResponseMode string
			LinkByEmail        bool
		}
	}
	if err := json.Unmarshal([]byte(ts.ok("provider", "list", "--project", pid, "--json")), &listed); err != nil {
		t.Fatal(err)
	}
	modes := map[string]string{}
	for _, p := range listed.Providers {
		modes[p.Name] = p.ResponseMode
		if !p.LinkByEmail { // github's and apple's default, corp's by set
			t.Errorf("--json %s linkByEmail=false, want true", p.Name)
		}
	}
	if modes["github"] != "query" || modes["apple"] != "form_post" || modes["corp"] != "form_post" {
		t.Fatalf("--json response modes %v", modes)
	}
	wantFail(t, ts.cli("provider", "add", "--project", pid, "--type", "github", "--name", "gh2", "--client-id", "x", "--client-secret-file", secret, "--response-mode", "form_post"), 1, "(VALIDATION_ERROR)")
	wantFail(t, ts.cli("provider", "add", "--project", pid, "--type", "oidc", "--name", "frag", "--issuer", "https://idp.example.com", "--client-id", "x", "--client-secret-file", secret, "--response-mode", "fragment"), 1, "(VALIDATION_ERROR)")
	for _, name := range []string{"apple", "corp"} {
		ts.ok("provider", "remove", name, "--project", pid)
	}

	ts.ok("provider", "remove", "github", "--project", pid)
	if out := ts.ok("provider", "list", "--project", pid); out != "No providers.\n" {
		t.Fatalf("after remove: out=%q", out)
	}
	wantFail(t, ts.cli("provider", "remove", "github", "--project", pid), 1, "(PROVIDER_NOT_FOUND)")
}
