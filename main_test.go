package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"flag"

	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/mail/mailtest"
	"latchkey/store"
	"latchkey/store/storetest"
)

// TestMain lets a test run this binary's main as a child process (for
// kill -9 tests): LATCHKEY_TEST_ARGS holds the arguments (it may be
// empty: `latchkey` alone). The tests run on the store backend
// LATCHKEY_TEST_STORE names (storetest).
func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv("LATCHKEY_TEST_ARGS"); ok {
		os.Exit(run(strings.Fields(args)))
	}
	os.Exit(storetest.RunMain(m))
}

// testMasterKey is the master key of servers on a database (base64 of
// 32 bytes).
var testMasterKey = base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))

// ctx is the context of the tests' store calls: never cancelled.
var ctx = context.Background()

// startMain runs the server in-process on a free port; log, when given,
// receives the server's log (else it is discarded). Without c.Data or
// c.DatabaseURL the store is the one the tests run on (storetest.New):
// a data file in t.TempDir(), or a database with a master key and the
// outbox in t.TempDir(). Tests that set c.Data need a file (its outbox,
// its key or token files, the file itself) and run on bbolt whatever
// LATCHKEY_TEST_STORE says.
func startMain(t *testing.T, c Config, log ...io.Writer) (*Main, *bytes.Buffer) {
	t.Helper()
	return startMainAt(t, c, nil, log...)
}

// startMainAt is startMain with the server's clock now (nil: time.Now).
func startMainAt(t *testing.T, c Config, now func() time.Time, log ...io.Writer) (*Main, *bytes.Buffer) {
	t.Helper()
	m := NewMain()
	if now != nil {
		m.Now = now
	}
	if c.Data == "" && c.DatabaseURL == "" {
		if dsn := storetest.New(t); store.IsURL(dsn) {
			c.DatabaseURL, c.MasterKey = dsn, testMasterKey
			m.outbox = filepath.Join(t.TempDir(), "outbox")
		} else {
			c.Data = dsn
		}
	}
	var out bytes.Buffer
	m.Stdout = &out
	if err := m.ParseFlags(nil, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if c.Addr == "" {
		c.Addr = "127.0.0.1:0"
	}
	c.LogFormat, c.SMSProvider = "text", "none"
	if c.MailFrom == "" {
		c.MailFrom = "latchkey@localhost"
	}
	m.Config = c
	m.Logger = discardLogger()
	if len(log) > 0 {
		m.Logger = slog.New(slog.NewTextHandler(log[0], &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, &out
}

var (
	keyLine   = regexp.MustCompile(`test API key \(shown once\): (\S+)`)
	adminLine = regexp.MustCompile(`admin token \(shown once\):\s+(\S+)`)
)

type client struct {
	t    *testing.T
	base string
}

func (c client) do(method, path, auth string, body any) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestFirstStartAndRestart: the first start prints a working key and the
// admin token once; a restart prints nothing secret and the same key and
// a key created before it still work; secret files are 0600; the data
// file holds none of the secrets in plain text.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the key and token files beside the data file.
func TestFirstStartAndRestart(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	data := filepath.Join(t.TempDir(), "latchkey.db")
	m, out := startMain(t, Config{Data: data})
	key := match(t, keyLine, out.String())
	admin := match(t, adminLine, out.String())
	c := client{t, "http://" + m.Addr()}
	if st, body := c.do("GET", "/api/v1/me", key, nil); st != 200 || body["success"] != true {
		t.Fatalf("/me with the printed key: %d %v", st, body)
	}
	_, projects := c.do("GET", "/api/v1/admin/projects", admin, nil)
	project := projects["projects"].([]any)[0].(map[string]any)["id"]
	st, body := c.do("POST", "/api/v1/admin/keys", admin, map[string]any{"mode": "live", "projectId": project})
	if st != 200 {
		t.Fatalf("create key: %d %v", st, body)
	}
	live := body["key"].(string)
	// A user enrolls TOTP: the secret must not be in the file either.
	c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "scan@example.com"})
	st, login := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "scan@example.com", "code": waitForCode(t, data+".outbox")})
	if st != 200 {
		t.Fatalf("otp verify: %d %v", st, login)
	}
	st, enroll := c.do("POST", "/api/v1/totp/enroll", login["token"].(string), map[string]any{})
	if st != 200 {
		t.Fatalf("totp enroll: %d %v", st, enroll)
	}
	totpSecret, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(enroll["secret"].(string))
	if err != nil {
		t.Fatal(err)
	}
	// The login's refresh token: its session id, then 32 random bytes.
	refresh := login["refreshToken"].(string)
	rawRefresh, err := base64.RawURLEncoding.DecodeString(refresh)
	if err != nil || len(rawRefresh) != 48 {
		t.Fatalf("refresh token %q: %v", refresh, err)
	}
	for _, f := range []string{data + ".key", data + ".admin-token", data} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
	tokenFile, _ := os.ReadFile(data + ".admin-token")
	if strings.TrimSpace(string(tokenFile)) != admin {
		t.Fatal("admin-token file does not hold the printed token")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	master, _ := os.ReadFile(data + ".key")
	rawMaster, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(string(master)))
	file, _ := os.ReadFile(data)
	for name, secret := range map[string][]byte{
		"test key": []byte(key), "live key": []byte(live), "admin token": []byte(admin),
		"master key (base64)": bytes.TrimSpace(master), "master key (raw)": rawMaster,
		"key secret part":      []byte(key[strings.LastIndex(key, "_")+1:]),
		"totp secret (base32)": []byte(enroll["secret"].(string)), "totp secret (raw)": totpSecret,
		"totp secret (base64, as JSON holds bytes)": []byte(strings.TrimRight(base64.StdEncoding.EncodeToString(totpSecret), "=")),
		"refresh token": []byte(refresh), "refresh token's random part (raw)": rawRefresh[16:],
		"refresh token's random part (base64)": []byte(strings.TrimRight(base64.StdEncoding.EncodeToString(rawRefresh[16:]), "=")),
	} {
		if len(secret) < 16 {
			t.Fatalf("%s too short to scan for", name)
		}
		if bytes.Contains(file, secret) {
			t.Errorf("data file contains the %s in plain text", name)
		}
	}

	m2, out2 := startMain(t, Config{Data: data})
	if s := out2.String(); strings.Contains(s, key) || strings.Contains(s, admin) || strings.Contains(s, "shown once") {
		t.Fatalf("second start printed secrets: %q", s)
	}
	c = client{t, "http://" + m2.Addr()}
	for _, k := range []string{key, live} {
		if st, body := c.do("GET", "/api/v1/me", k, nil); st != 200 {
			t.Fatalf("/me after restart: %d %v", st, body)
		}
	}
	if st, _ := c.do("GET", "/api/v1/admin/projects", admin, nil); st != 200 {
		t.Fatalf("admin token after restart: %d", st)
	}
}

// TestRestartMidOTP: a code sent while SMTP is down stays queued across a
// restart, goes out afterwards (to the outbox here), and still verifies.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: a restart on the same data file, the outbox beside it.
func TestRestartMidOTP(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	data := filepath.Join(t.TempDir(), "latchkey.db")
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	deadSMTP := "smtp://" + ln.Addr().String()
	ln.Close()
	var logs testkit.Buffer
	m, out := startMain(t, Config{Data: data, SMTPURL: deadSMTP}, &logs)
	key := match(t, keyLine, out.String())
	c := client{t, "http://" + m.Addr()}
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "restart@example.com"}); st != 200 {
		t.Fatalf("send: %d %v", st, body)
	}
	if st, body := c.do("POST", "/api/v1/magic/send", key, map[string]any{"email": "restart-link@example.com"}); st != 200 {
		t.Fatalf("magic send: %d %v", st, body)
	}
	// Stop only once a send has failed (the mail task runs on its own
	// goroutine, so a quick Close could come before its first attempt).
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), "will retry"); {
		if time.Now().After(deadline) {
			t.Fatalf("no failed send logged:\n%s", logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	m.Close()

	m2, _ := startMain(t, Config{Data: data}, &logs)
	var otpMail, linkMail []byte
	deadline := time.Now().Add(10 * time.Second)
	for (otpMail == nil || linkMail == nil) && time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(data+".outbox", "*.eml"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			switch {
			case bytes.Contains(b, []byte("To: restart@example.com")):
				otpMail = b
			case bytes.Contains(b, []byte("To: restart-link@example.com")):
				linkMail = b
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The raw .eml is greppable: the code is its first run of six digits
	// and the link stands unbroken.
	code := regexp.MustCompile(`\d{6}`).FindString(string(otpMail))
	link := regexp.MustCompile(`http://\S+/api/v1/magic/verify\?token=([A-Za-z0-9_-]{43})\r\n`).FindSubmatch(linkMail)
	if code == "" || link == nil {
		t.Fatalf("outbox messages:\n%s\n%s", otpMail, linkMail)
	}
	c = client{t, "http://" + m2.Addr()}
	st, body := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "restart@example.com", "code": code})
	if st != 200 || body["token"] == nil || body["isNewUser"] != true {
		t.Fatalf("verify after restart: %d %v", st, body)
	}
	st, body = c.do("GET", "/api/v1/magic/verify?token="+string(link[1]), "", nil)
	if st != 200 || body["token"] == nil {
		t.Fatalf("magic verify after restart: %d %v", st, body)
	}
	// The log names recipients and subjects, and the failed first
	// attempts, but never a code, link token or session token.
	l := logs.String()
	if !strings.Contains(l, "restart@example.com") || !strings.Contains(l, "will retry") {
		t.Fatalf("log lacks the mail lines:\n%s", l)
	}
	for name, secret := range map[string]string{"code": code, "link token": string(link[1]), "jwt": body["token"].(string)} {
		if strings.Contains(l, secret) {
			t.Fatalf("log contains the %s:\n%s", name, l)
		}
	}
}

// TestWebhookSurvivesKill9: an event committed before the server is
// killed with SIGKILL is delivered after the restart.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: a child process serving a data file.
func TestWebhookSurvivesKill9(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	if testing.Short() {
		t.Skip("spawns server processes")
	}
	var mu sync.Mutex
	var got []map[string]any
	block := make(chan struct{})
	blocking := true
	recv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b := blocking
		mu.Unlock()
		if b {
			<-block // hang: the first server dies mid-delivery
			w.WriteHeader(503)
			return
		}
		var ev map[string]any
		json.NewDecoder(r.Body).Decode(&ev)
		mu.Lock()
		got = append(got, ev)
		mu.Unlock()
	})}
	rl, _ := net.Listen("tcp", "127.0.0.1:0")
	go recv.Serve(rl)
	defer func() { close(block); recv.Close() }()

	data := filepath.Join(t.TempDir(), "latchkey.db")
	p := spawn(t, data)
	key := p.printed(keyLine)
	c := client{t, p.base}
	st, body := c.do("POST", "/api/v1/webhooks", key, map[string]any{"url": "http://" + rl.Addr().String() + "/hook", "eventTypes": []string{"user.registered"}})
	if st != 200 {
		t.Fatalf("create webhook: %d %v", st, body)
	}
	// A sign-up writes user.registered into the outbox in its transaction.
	c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "kill9@example.com"})
	code := waitForCode(t, data+".outbox")
	if st, body := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "kill9@example.com", "code": code}); st != 200 {
		t.Fatalf("verify: %d %v", st, body)
	}
	p.kill()

	mu.Lock()
	blocking = false
	mu.Unlock()
	p2 := spawn(t, data)
	defer p2.kill()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 {
		t.Fatal("user.registered was not delivered after kill -9 and restart")
	}
	ev := got[0]
	d, _ := ev["data"].(map[string]any)
	if ev["type"] != "user.registered" || d == nil || d["email"] != "kill9@example.com" {
		t.Fatalf("delivered %v", ev)
	}
}

type proc struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string
	mu   sync.Mutex
	out  bytes.Buffer
}

func (p *proc) stdout() string { p.mu.Lock(); defer p.mu.Unlock(); return p.out.String() }

// printed waits for re in the child's standard output and returns its
// first group. The child prints before it logs that it listens, but the
// copy of its output may still be on its way when spawn returns.
func (p *proc) printed(re *regexp.Regexp) string {
	p.t.Helper()
	return waitPrinted(p.t, re, p.stdout)
}

// waitPrinted waits up to 20 s for re in what out returns (a child's
// standard output, copied by a goroutine of its own: the log line that
// says the child listens can arrive before the lines it printed first)
// and returns re's first group.
func waitPrinted(t testing.TB, re *regexp.Regexp, out func() string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(out()); m != nil {
			return m[1]
		}
	}
	return match(t, re, out())
}

func (p *proc) kill() {
	if p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
}

// spawn runs `latchkey serve` as a child process and waits until it listens.
func spawn(t *testing.T, data string) *proc {
	t.Helper()
	return spawnAt(t, data, "127.0.0.1:0")
}

// spawnAt is spawn listening on addr (a restart on the same address
// keeps the base URL, and so the providers' issuers).
func spawnAt(t *testing.T, data, listen string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LATCHKEY_TEST_ARGS=serve --addr "+listen+" --data "+data)
	p := &proc{t: t, cmd: cmd}
	cmd.Stdout = writerFunc(func(b []byte) (int, error) { p.mu.Lock(); defer p.mu.Unlock(); return p.out.Write(b) })
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.kill)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`msg="latchkey listening" addr=(\S+)`)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		p.base = "http://" + a
	case <-time.After(20 * time.Second):
		t.Fatal("child server did not start")
	}
	return p
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func match(t testing.TB, re *regexp.Regexp, s string) string {
	t.Helper()
	m := re.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %v in %q", re, s)
	}
	return m[1]
}

// waitForFile waits for the background mail task to write a file.
func waitForFile(t *testing.T, dir, suffix string) []byte {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(dir, "*"+suffix))
		if len(files) > 0 {
			b, err := os.ReadFile(files[len(files)-1])
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s file in %s", suffix, dir)
	return nil
}

func waitForCode(t *testing.T, dir string) string {
	eml := waitForFile(t, dir, ".eml")
	code := regexp.MustCompile(`\b(\d{6})\b`).FindString(string(eml))
	if code == "" {
		t.Fatalf("no code in %s", eml)
	}
	return code
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestParseFlags: every flag (README.md, "Configuration") beats its environment
// variable, which beats the default; --help lists each flag with its
// variable and default and never prints a value from the environment.
func TestParseFlags(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "parses flags")
	type setting struct {
		flag, env, def, fromEnv, fromFlag string
		got                               func(Config) string
	}
	settings := []setting{
		{"addr", "LATCHKEY_ADDR", "127.0.0.1:8080", "127.0.0.1:9999", "127.0.0.1:7777", func(c Config) string { return c.Addr }},
		{"data", "LATCHKEY_DATA", "./latchkey.db", "/env/l.db", "/flag/l.db", func(c Config) string { return c.Data }},
		{"base-url", "LATCHKEY_BASE_URL", "", "https://env.example", "https://flag.example", func(c Config) string { return c.BaseURL }},
		{"smtp-url", "LATCHKEY_SMTP_URL", "", "smtp://user:hunter2@env.example", "smtps://user:swordfish@flag.example", func(c Config) string { return c.SMTPURL }},
		{"smtp-ca-file", "LATCHKEY_SMTP_CA_FILE", "", "/env/smtp-ca.pem", "/flag/smtp-ca.pem", func(c Config) string { return c.SMTPCAFile }},
		{"mail-from", "LATCHKEY_MAIL_FROM", "latchkey@localhost", "env@example.com", "flag@example.com", func(c Config) string { return c.MailFrom }},
		{"mail-log", "LATCHKEY_MAIL_LOG", "false", "true", "false", func(c Config) string { return strconv.FormatBool(c.MailLog) }},
		{"sms-provider", "LATCHKEY_SMS_PROVIDER", "none", "log", "twilio", func(c Config) string { return c.SMSProvider }},
		{"admin-token", "LATCHKEY_ADMIN_TOKEN", "", "adm_fromtheenvironment_0123456789", "adm_fromtheflag_012345678901234", func(c Config) string { return c.AdminToken }},
		{"master-key", "LATCHKEY_MASTER_KEY", "", "ZW52ZW52ZW52ZW52ZW52ZW52ZW52ZW52ZW52ZW52ZW4=", "ZmxhZ2ZsYWdmbGFnZmxhZ2ZsYWdmbGFnZmxhZ2ZsYWc=", func(c Config) string { return c.MasterKey }},
		{"trusted-proxies", "LATCHKEY_TRUSTED_PROXIES", "", "10.9.0.0/16", "10.8.0.0/16", func(c Config) string { return c.TrustedProxies }},
		{"webhook-allow-private", "LATCHKEY_WEBHOOK_ALLOW_PRIVATE", "false", "true", "false", func(c Config) string { return strconv.FormatBool(c.WebhookAllowPrivate) }},
		{"oauth-allow-private", "LATCHKEY_OAUTH_ALLOW_PRIVATE", "false", "true", "false", func(c Config) string { return strconv.FormatBool(c.OAuthAllowPrivate) }},
		{"log-format", "LATCHKEY_LOG_FORMAT", "text", "json", "text", func(c Config) string { return c.LogFormat }},
		{"metrics-addr", "LATCHKEY_METRICS_ADDR", "", "127.0.0.1:9100", "127.0.0.1:9101", func(c Config) string { return c.MetricsAddr }},
		{"backup-to", "LATCHKEY_BACKUP_TO", "", "s3://env-bucket/latchkey", "s3://flag-bucket/latchkey", func(c Config) string { return c.BackupTo }},
		{"backup-every", "LATCHKEY_BACKUP_EVERY", "", "12h", "6h", func(c Config) string { return c.BackupEvery }},
		{"backup-keep", "LATCHKEY_BACKUP_KEEP", "14", "30", "7", func(c Config) string { return c.BackupKeep }},
		{"tls-domain", "LATCHKEY_TLS_DOMAIN", "", "env.example.com", "flag.example.com", func(c Config) string { return c.TLSDomain }},
		{"tls-cert", "LATCHKEY_TLS_CERT", "", "/env/cert.pem", "/flag/cert.pem", func(c Config) string { return c.TLSCert }},
		{"tls-key", "LATCHKEY_TLS_KEY", "", "/env/key.pem", "/flag/key.pem", func(c Config) string { return c.TLSKey }},
		{"http-addr", "LATCHKEY_HTTP_ADDR", "", ":8080", ":8081", func(c Config) string { return c.HTTPAddr }},
		{"acme-directory", "LATCHKEY_ACME_DIRECTORY", "", "https://env.example/dir", "https://flag.example/dir", func(c Config) string { return c.ACMEDirectory }},
		{"acme-email", "LATCHKEY_ACME_EMAIL", "", "env@example.com", "flag@example.com", func(c Config) string { return c.ACMEEmail }},
		{"acme-ca-file", "LATCHKEY_ACME_CA_FILE", "", "/env/ca.pem", "/flag/ca.pem", func(c Config) string { return c.ACMECAFile }},
	}
	env := map[string]string{}
	for _, st := range settings {
		env[st.env] = st.fromEnv
	}
	parse := func(args []string, getenv func(string) string) Config {
		t.Helper()
		m := NewMain()
		if err := m.ParseFlags(args, getenv); err != nil {
			t.Fatalf("ParseFlags(%v): %v", args, err)
		}
		return m.Config
	}
	defaults := parse(nil, func(string) string { return "" })
	fromEnv := parse(nil, func(k string) string { return env[k] })
	for _, st := range settings {
		t.Run(st.flag, func(t *testing.T) {
			if got := st.got(defaults); got != st.def {
				t.Errorf("default=%q, want %q", got, st.def)
			}
			if got := st.got(fromEnv); got != st.fromEnv {
				t.Errorf("from %s=%q, want %q", st.env, got, st.fromEnv)
			}
			c := parse([]string{"--" + st.flag + "=" + st.fromFlag}, func(k string) string { return env[k] })
			if got := st.got(c); got != st.fromFlag {
				t.Errorf("--%s with %s set: got %q, want the flag's %q", st.flag, st.env, got, st.fromFlag)
			}
		})
	}

	m := NewMain()
	var help bytes.Buffer
	m.Stdout = &help
	if err := m.ParseFlags([]string{"--help"}, func(k string) string { return env[k] }); err != flag.ErrHelp {
		t.Fatalf("err = %v, want flag.ErrHelp", err)
	}
	for _, st := range settings {
		if !strings.Contains(help.String(), "--"+st.flag) || !strings.Contains(help.String(), st.env) {
			t.Errorf("help lacks --%s or %s", st.flag, st.env)
		}
		if len(st.fromEnv) > 6 && strings.Contains(help.String(), st.fromEnv) {
			t.Errorf("help shows the value of %s", st.env)
		}
	}
	for _, def := range []string{"127.0.0.1:8080", "./latchkey.db", "http://<addr>", "latchkey@localhost", "default none", "generated", "<data>.key", "default false", "default text"} {
		if !strings.Contains(help.String(), def) {
			t.Errorf("help lacks the default %q", def)
		}
	}
	for _, bad := range [][]string{{"--log-format", "xml"}, {"--sms-provider", "pigeon"}, {"--admin-token", "short"}, {"extra"}, {"--nope"}} {
		if err := NewMain().ParseFlags(bad, func(string) string { return "" }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if err := NewMain().ParseFlags(nil, func(k string) string {
		return map[string]string{"LATCHKEY_WEBHOOK_ALLOW_PRIVATE": "sometimes"}[k]
	}); err == nil {
		t.Error("LATCHKEY_WEBHOOK_ALLOW_PRIVATE=sometimes accepted")
	}
}

// TestDatabaseURL: --database-url (or LATCHKEY_DATABASE_URL) names a
// PostgreSQL database instead of --data; with --data too on the command
// line, with another kind of URL or without a master key the start is
// refused in one line before anything is touched. Named in the
// environment too, the database wins over LATCHKEY_DATA, and --data on
// the command line over LATCHKEY_DATABASE_URL. A start on a database that cannot be
// reached says so, in one line without the password.
func TestDatabaseURL(t *testing.T) {
	testkit.EngineFree(t, "parses flags")
	const url = "postgres://latchkey:secret@127.0.0.1:1/latchkey?sslmode=disable"
	parse := func(args []string, env map[string]string) (Config, error) {
		m := NewMain()
		err := m.ParseFlags(args, func(k string) string { return env[k] })
		return m.Config, err
	}
	if c, err := parse([]string{"--database-url", url}, nil); err != nil || c.DatabaseURL != url {
		t.Fatalf("--database-url: %q, %v", c.DatabaseURL, err)
	}
	if c, err := parse(nil, map[string]string{"LATCHKEY_DATABASE_URL": url}); err != nil || c.DatabaseURL != url {
		t.Fatalf("LATCHKEY_DATABASE_URL: %q, %v", c.DatabaseURL, err)
	}
	if c, err := parse([]string{"--database-url", url}, map[string]string{"LATCHKEY_DATABASE_URL": "postgresql://env/db"}); err != nil || c.DatabaseURL != url {
		t.Fatalf("the flag beats the environment: %q, %v", c.DatabaseURL, err)
	}
	// Both stores named: on the command line refused; otherwise the
	// command line beats the environment, and in the environment the
	// database beats the data file, with a note for the start-up log.
	for _, tc := range []struct {
		name               string
		args               []string
		env                map[string]string
		wantURL            bool
		wantData, wantNote string
	}{
		{"both in the environment", nil, map[string]string{"LATCHKEY_DATABASE_URL": url, "LATCHKEY_DATA": "/data/latchkey.db"},
			true, "", "LATCHKEY_DATA (/data/latchkey.db) is not used: LATCHKEY_DATABASE_URL names the store"},
		{"--database-url and LATCHKEY_DATA", []string{"--database-url", url}, map[string]string{"LATCHKEY_DATA": "/data/latchkey.db"},
			true, "", "LATCHKEY_DATA (/data/latchkey.db) is not used: --database-url names the store"},
		{"--data and LATCHKEY_DATABASE_URL", []string{"--data", "/flag/l.db"}, map[string]string{"LATCHKEY_DATABASE_URL": url},
			false, "/flag/l.db", "LATCHKEY_DATABASE_URL is not used: --data names the store"},
		{"LATCHKEY_DATABASE_URL alone", nil, map[string]string{"LATCHKEY_DATABASE_URL": url}, true, "", ""},
	} {
		m := NewMain()
		if err := m.ParseFlags(tc.args, func(k string) string { return tc.env[k] }); err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if (m.Config.DatabaseURL == url) != tc.wantURL || m.Config.Data != tc.wantData || !strings.HasPrefix(m.storeNote, tc.wantNote) || (tc.wantNote == "") != (m.storeNote == "") {
			t.Errorf("%s: database %q, data %q, note %q; want the database %v, data %q, a note starting %q",
				tc.name, m.Config.DatabaseURL, m.Config.Data, m.storeNote, tc.wantURL, tc.wantData, tc.wantNote)
		}
		if strings.Contains(m.storeNote, "secret") {
			t.Errorf("%s: the note %q holds the password", tc.name, m.storeNote)
		}
	}
	for _, bad := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--database-url", url, "--data", "x.db"}, nil, "only one"},
		{[]string{"--database-url", url, "--data", "x.db"}, map[string]string{"LATCHKEY_DATA": "y.db", "LATCHKEY_DATABASE_URL": url}, "only one"},
		{[]string{"--database-url", "mysql://host/db"}, nil, "postgres://"},
		{nil, map[string]string{"LATCHKEY_DATABASE_URL": "mysql://host/db", "LATCHKEY_DATA": "x.db"}, "postgres://"},
		{[]string{"--database-url", "/var/lib/latchkey.db"}, nil, "postgres://"},
	} {
		if _, err := parse(bad.args, bad.env); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v %v: err %v, want one saying %q", bad.args, bad.env, err, bad.want)
		}
	}

	dir := t.TempDir()
	t.Chdir(dir)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{DatabaseURL: url}, "--master-key"},
		{Config{DatabaseURL: url, MasterKey: testMasterKey}, "unreachable"},
	} {
		m := NewMain()
		m.Stdout, m.Logger = io.Discard, discardLogger()
		m.Config = c.cfg
		m.Config.Addr, m.Config.LogFormat, m.Config.SMSProvider = "127.0.0.1:0", "text", "none"
		err := m.Run(context.Background())
		m.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret") {
			t.Errorf("start on a database (master key %v): err %v, want one line saying %q without the password", c.cfg.MasterKey != "", err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused start left %d files in the working directory", len(entries))
	}
}

// TestOTPOverSMTP: sign-up and sign-in by email OTP against the real
// server, with each code read out of a real SMTP exchange (STARTTLS on a
// certificate of a private CA trusted through LATCHKEY_SMTP_CA_FILE, and
// AUTH LOGIN, the only mechanism the in-test mail server offers).
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the serve flags name a data file.
func TestOTPOverSMTP(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	srv := mailtest.NewServer(t, mailtest.Options{User: "mailer", Pass: "pw", Mechanisms: []string{mailtest.Login}})
	data := filepath.Join(t.TempDir(), "latchkey.db")
	m := NewMain()
	var out bytes.Buffer
	m.Stdout = &out
	env := map[string]string{"LATCHKEY_SMTP_CA_FILE": srv.CAFile(t)}
	if err := m.ParseFlags([]string{"--addr", "127.0.0.1:0", "--data", data, "--smtp-url", "smtp://mailer:pw@" + srv.Addr, "--mail-from", "Acme <auth@acme.example>"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	m.Logger = discardLogger()
	var offset atomic.Int64
	m.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	key := match(t, keyLine, out.String())
	c := client{t, "http://" + m.Addr()}
	codeFor := func(addr string, nth int) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			var mine []mailtest.Message
			for _, msg := range srv.Messages() {
				if msg.To == addr {
					mine = append(mine, msg)
				}
			}
			if len(mine) >= nth {
				msg := mine[nth-1]
				if !msg.TLS || msg.Auth != "mailer" || msg.Mechanism != mailtest.Login || msg.From != "auth@acme.example" {
					t.Fatalf("exchange: tls=%v auth=%q mechanism=%q from=%q", msg.TLS, msg.Auth, msg.Mechanism, msg.From)
				}
				code := regexp.MustCompile(`(?m)^\s+(\d{6})\s*$`).FindStringSubmatch(string(msg.Data))
				if code == nil {
					t.Fatalf("no code in:\n%s", msg.Data)
				}
				return code[1]
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("no message %d to %s", nth, addr)
		return ""
	}
	const addr = "smtp-user@example.com"
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": addr}); st != 200 {
		t.Fatalf("send: %d %v", st, body)
	}
	st, body := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": addr, "code": codeFor(addr, 1)})
	if st != 200 || body["isNewUser"] != true {
		t.Fatalf("sign-up: %d %v", st, body)
	}
	userID := body["userId"]
	offset.Store(int64(time.Minute)) // past the 30-second send throttle
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": addr}); st != 200 {
		t.Fatalf("second send: %d %v", st, body)
	}
	st, body = c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": addr, "code": codeFor(addr, 2)})
	if st != 200 || body["isNewUser"] != false || body["userId"] != userID {
		t.Fatalf("sign-in: %d %v", st, body)
	}
}

// TestSMTPConfigErrorKeepsMail: with a wrong SMTP password the send call
// still answers 200; the message stays queued, the failure is one error
// line naming no password and Queue.ConfigError reports it, as does
// GET /ready (503 NOT_READY naming mail, without the password); after a
// restart with the right password the same message, with its code, is
// delivered, the code signs in and /ready answers ready.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: a restart on the same data file.
func TestSMTPConfigErrorKeepsMail(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	srv := mailtest.NewServer(t, mailtest.Options{User: "mailer", Pass: "right-password"})
	ca := srv.CAFile(t)
	data := filepath.Join(t.TempDir(), "latchkey.db")
	var logs testkit.Buffer
	m, out := startMain(t, Config{Data: data, SMTPURL: "smtp://mailer:wrong-password@" + srv.Addr, SMTPCAFile: ca}, &logs)
	key := match(t, keyLine, out.String())
	c := client{t, "http://" + m.Addr()}
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "kept@example.com"}); st != 200 {
		t.Fatalf("send: %d %v", st, body)
	}
	deadline := time.Now().Add(15 * time.Second)
	for m.Mail.ConfigError() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := m.Mail.ConfigError(); err == nil || strings.Contains(err.Error(), "wrong-password") {
		t.Fatalf("ConfigError() = %v, want the refused login without the password", err)
	}
	st, body := c.do("GET", "/api/v1/ready", "", nil)
	if msg, _ := body["error"].(string); st != 503 || body["code"] != "NOT_READY" || !strings.Contains(msg, "mail: the SMTP server refuses the configuration") ||
		strings.Contains(msg, "password") || strings.Contains(msg, "store") {
		t.Fatalf("ready with a refused SMTP login: %d %v, want 503 NOT_READY naming mail only", st, body)
	}
	if st, _ := c.do("GET", "/api/v1/health", "", nil); st != 200 {
		t.Fatalf("health: %d, want 200 (liveness)", st)
	}
	var queued int
	m.DB.View(ctx, func(tx store.Tx) error {
		return tx.RecentMail(func(*store.Mail) bool { queued++; return true })
	})
	if queued != 1 || len(srv.Messages()) != 0 {
		t.Fatalf("queued %d, delivered %d: want the message kept", queued, len(srv.Messages()))
	}
	// The failure is recorded (ConfigError) just before its line is
	// written: wait for the line.
	const errLine = `level=ERROR msg="mail server configuration error`
	for !strings.Contains(logs.String(), errLine) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	l := logs.String()
	if strings.Count(l, errLine) != 1 || strings.Contains(l, "wrong-password") {
		t.Fatalf("want one configuration error line without the password:\n%s", l)
	}
	m.Close()

	// The fixed server starts a minute later (its clock): the retry is due.
	m2 := NewMain()
	m2.Stdout, m2.Logger = io.Discard, discardLogger()
	m2.Now = func() time.Time { return time.Now().Add(time.Minute) }
	m2.Config = Config{Addr: "127.0.0.1:0", Data: data, SMTPURL: "smtp://mailer:right-password@" + srv.Addr, SMTPCAFile: ca, LogFormat: "text", SMSProvider: "none"}
	if err := m2.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	msg, ok := srv.Wait("kept@example.com", 15*time.Second)
	if !ok {
		t.Fatal("the kept message was not delivered after the fix")
	}
	code := regexp.MustCompile(`(?m)^\s+(\d{6})\s*$`).FindStringSubmatch(string(msg.Data))
	if code == nil {
		t.Fatalf("no code in:\n%s", msg.Data)
	}
	st, body = (client{t, "http://" + m2.Addr()}).do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "kept@example.com", "code": code[1]})
	if st != 200 || body["isNewUser"] != true {
		t.Fatalf("verify with the delivered code: %d %v", st, body)
	}
	if st, body := (client{t, "http://" + m2.Addr()}).do("GET", "/api/v1/ready", "", nil); st != 200 || body["status"] != "ready" {
		t.Fatalf("ready after the fix: %d %v", st, body)
	}
}
