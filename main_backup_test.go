package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/internal/background"
	"latchkey/internal/offsite"
	"latchkey/internal/offsite/offsitetest"
	"latchkey/internal/testkit"
	"latchkey/store/bolt"
	"latchkey/store/storetest"
)

// startBackupMain runs a server on a new data file (or c.Data) with the
// S3 test server's credentials in its environment, the clock now, and
// no retries of the S3 client's requests. Backups are of a data file:
// bbolt only, whatever LATCHKEY_TEST_STORE says.
func startBackupMain(t *testing.T, c Config, now func() time.Time) (*Main, *bytes.Buffer) {
	t.Helper()
	storetest.BoltOnly(t)
	m := NewMain()
	if now != nil {
		m.Now = now
	}
	var out bytes.Buffer
	m.Stdout = &out
	if err := m.ParseFlags(nil, offsitetest.Env); err != nil {
		t.Fatal(err)
	}
	if c.Data == "" {
		c.Data = filepath.Join(t.TempDir(), "latchkey.db")
	}
	c.Addr, c.LogFormat, c.SMSProvider, c.MailFrom = "127.0.0.1:0", "text", "none", "latchkey@localhost"
	m.Config = c
	m.Logger = discardLogger()
	m.backupRetries = 1
	if err := m.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, &out
}

// metricsText fetches /metrics with the admin token.
func metricsText(t *testing.T, m *Main, admin string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+m.Addr()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		t.Fatalf("/metrics: %d %s", res.StatusCode, b)
	}
	return string(b)
}

// wantMetrics checks lines of /metrics (whole lines, values included).
func wantMetrics(t *testing.T, text string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !slices.Contains(strings.Split(text, "\n"), l) {
			t.Errorf("/metrics lacks %q", l)
		}
	}
}

// promValue writes n as the Prometheus text format does.
func promValue(n int64) string { return strconv.FormatFloat(float64(n), 'g', -1, 64) }

// signInOTP signs addr in by email code and returns the login result.
func signInOTP(t *testing.T, c client, key, outbox, addr string) map[string]any {
	t.Helper()
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": addr}); st != 200 {
		t.Fatalf("otp/send: %d %v", st, body)
	}
	st, body := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": addr, "code": codeTo(t, outbox, addr)})
	if st != 200 {
		t.Fatalf("otp/verify: %d %v", st, body)
	}
	return body
}

// TestBackupScheduled: with --backup-to, --backup-every 6h and
// --backup-keep 2 the server runs a "backup" task every minute; its first
// round (the task woken; later rounds are RunOnce, driven with the
// server's clock) uploads a
// copy of the data file at once (the bucket holds none), named by the
// clock, which opens as the data file; rounds within six hours upload
// nothing; after more than two, the two newest remain. /metrics shows
// the newest backup's time and size and the counts; /ready stays ready.
func TestBackupScheduled(t *testing.T) {
	t.Parallel()
	s3 := offsitetest.Start(t, "latchkey")
	clock := testkit.NewClock(time.Now().UTC().Truncate(time.Second))
	m, out := startBackupMain(t, Config{BackupTo: s3.URL("latchkey", "prod/auth"), BackupEvery: "6h", BackupKeep: "2"}, clock.Now)
	key, admin := match(t, keyLine, out.String()), match(t, adminLine, out.String())
	c := client{t, "http://" + m.Addr()}
	var task *background.Task
	for _, tk := range m.tasks {
		if tk.Name == "backup" {
			task = tk
		}
	}
	if task == nil || task.Interval != time.Minute || m.Backups == nil {
		t.Fatalf("backup task %+v, want one every minute", task)
	}
	if text := metricsText(t, m, admin); !strings.Contains(text, "latchkey_backup_last_success_timestamp_seconds 0\n") {
		t.Fatalf("before the first round: %s", text)
	}
	signInOTP(t, c, key, m.outboxDir(), "ada@example.com")

	// The first round, by the task itself (woken rather than waiting a
	// minute for its tick).
	task.Wake()
	for deadline := time.Now().Add(15 * time.Second); m.Backups.Status().Uploads == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the woken task uploaded nothing: %+v", m.Backups.Status())
		}
	}
	first := "prod/auth/" + offsite.ObjectName(clock.Now())
	if keys := s3.Keys(t, "latchkey", ""); !slices.Equal(keys, []string{first}) {
		t.Fatalf("objects %v, want %s", keys, first)
	}
	// The copy is a latchkey data file holding the user signed in.
	copied := filepath.Join(t.TempDir(), "copy.db")
	body := s3.Object(t, "latchkey", first)
	if err := os.WriteFile(copied, body, 0o600); err != nil {
		t.Fatal(err)
	}
	if fresh, err := bolt.CheckFile(copied, time.Second); fresh || err != nil {
		t.Fatalf("the uploaded copy: fresh %v, %v", fresh, err)
	}
	st := m.Backups.Status()
	if st.LastName != offsite.ObjectName(clock.Now()) || st.LastSize != int64(len(body)) || st.Uploads != 1 {
		t.Fatalf("status %+v after one upload of %d bytes", st, len(body))
	}
	wantMetrics(t, metricsText(t, m, admin),
		"latchkey_backup_last_success_timestamp_seconds "+promValue(clock.Now().Unix()),
		"latchkey_backup_last_size_bytes "+promValue(int64(len(body))),
		"latchkey_backup_consecutive_failures 0",
		`latchkey_backup_uploads_total{result="succeeded"} 1`,
		`latchkey_backup_uploads_total{result="failed"} 0`)

	clock.Advance(5 * time.Hour)
	if err := m.Backups.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(s3.Keys(t, "latchkey", "")); n != 1 {
		t.Fatalf("%d backups five hours after the first, want 1", n)
	}
	var names []string
	for range 3 {
		clock.Advance(time.Hour)
		if err := m.Backups.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		names = append(names, "prod/auth/"+offsite.ObjectName(clock.Now()))
		clock.Advance(5 * time.Hour)
	}
	if keys := s3.Keys(t, "latchkey", ""); !slices.Equal(keys, names[1:]) {
		t.Fatalf("objects %v, want the newest two %v", keys, names[1:])
	}
	if st, body := c.do("GET", "/api/v1/ready", "", nil); st != 200 || body["status"] != "ready" {
		t.Fatalf("ready: %d %v", st, body)
	}
}

// TestBackupUnreachable: a bucket that cannot be reached fails the
// round: GET /ready stays 200 but "degraded", naming the backup and how
// many attempts failed; /metrics counts them; the server goes on serving
// and writing its data file; each next tick tries again, and the first
// that reaches the bucket uploads at once, a copy holding what was
// written meanwhile, with the older backups still there. Then /ready is
// ready again.
func TestBackupUnreachable(t *testing.T) {
	t.Parallel()
	s3 := offsitetest.Start(t, "latchkey")
	clock := testkit.NewClock(time.Now().UTC().Truncate(time.Second))
	m, out := startBackupMain(t, Config{BackupTo: s3.URL("latchkey", ""), BackupEvery: "6h"}, clock.Now)
	key, admin := match(t, keyLine, out.String()), match(t, adminLine, out.String())
	c := client{t, "http://" + m.Addr()}
	if err := m.Backups.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	older := s3.Keys(t, "latchkey", "")

	s3.SetDown(true)
	clock.Advance(6 * time.Hour)
	for i := 1; i <= 2; i++ {
		if err := m.Backups.RunOnce(ctx); err == nil {
			t.Fatal("a round succeeded with the bucket down")
		}
		clock.Advance(time.Minute)
	}
	st, body := c.do("GET", "/api/v1/ready", "", nil)
	degraded, _ := body["degraded"].([]any)
	want := "backup: the last 2 attempts failed and the newest backup is from " + clock.Now().Add(-6*time.Hour-2*time.Minute).Format(time.RFC3339) +
		" (the log has the details; tried again every minute)"
	if st != 200 || body["status"] != "degraded" || len(degraded) != 1 || degraded[0] != want {
		t.Fatalf("ready: %d %v, want 200 degraded with %q", st, body, want)
	}
	wantMetrics(t, metricsText(t, m, admin),
		"latchkey_backup_consecutive_failures 2",
		`latchkey_backup_uploads_total{result="failed"} 2`,
		`latchkey_backup_uploads_total{result="succeeded"} 1`)

	// The server serves and writes meanwhile.
	signInOTP(t, c, key, m.outboxDir(), "during-outage@example.com")

	s3.SetDown(false)
	if err := m.Backups.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	keys := s3.Keys(t, "latchkey", "")
	newest := offsite.ObjectName(clock.Now())
	if len(keys) != 2 || keys[0] != older[0] || keys[1] != newest {
		t.Fatalf("objects %v, want %v and %s", keys, older, newest)
	}
	if st, body := c.do("GET", "/api/v1/ready", "", nil); st != 200 || body["status"] != "ready" || body["degraded"] != nil {
		t.Fatalf("ready after the retry: %d %v", st, body)
	}
	wantMetrics(t, metricsText(t, m, admin), "latchkey_backup_consecutive_failures 0", `latchkey_backup_uploads_total{result="succeeded"} 2`)

	// The copy taken after the outage holds the user signed up during it.
	restored := filepath.Join(t.TempDir(), "restored.db")
	masterKey := readKey(t, m.Config.Data)
	var stdout, stderr bytes.Buffer
	if code := runRestore(ctx, []string{"--from", s3.URL("latchkey", ""), "--data", restored, "--master-key", masterKey}, offsitetest.Env, &stdout, &stderr); code != 0 {
		t.Fatalf("restore: exit %d %s", code, stderr.String())
	}
	m.Close()
	clock.Advance(10 * time.Minute) // past the address's send interval, which the file keeps
	m2, _ := startBackupMain(t, Config{Data: restored, MasterKey: masterKey}, clock.Now)
	c2 := client{t, "http://" + m2.Addr()}
	if login := signInOTP(t, c2, key, m2.outboxDir(), "during-outage@example.com"); login["isNewUser"] != false {
		t.Fatalf("the user signed up during the outage is not in the backup: %v", login)
	}
}

// readKey returns the base64 master key in data's key file.
func readKey(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(data + ".key")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// TestRestoreSignsInAgain: `latchkey restore` fetches the newest backup
// into a new data file (with the master key given, or the key file put
// beside it beforehand); a server started on it signs the same user in
// again (same user id, not a new user), with the same API key, and a
// session made before the backup still works. --list lists the backups
// newest first; --name fetches an older one.
func TestRestoreSignsInAgain(t *testing.T) {
	t.Parallel()
	s3 := offsitetest.Start(t, "latchkey")
	url := s3.URL("latchkey", "auth")
	clock := testkit.NewClock(time.Now().UTC().Truncate(time.Second))
	// Both servers have the same public origin (the tokens' issuer), as
	// a restored server keeps it.
	const origin = "http://localhost:8080"
	m, out := startBackupMain(t, Config{BackupTo: url, BackupEvery: "1m", BaseURL: origin}, clock.Now)
	key := match(t, keyLine, out.String())
	c := client{t, "http://" + m.Addr()}
	if err := m.Backups.RunOnce(ctx); err != nil { // before anyone signs up
		t.Fatal(err)
	}
	oldest := m.Backups.Status().LastName
	login := signInOTP(t, c, key, m.outboxDir(), "grace@example.com")
	user := login["user"].(map[string]any)["id"]
	token := login["token"].(string)
	clock.Advance(time.Minute)
	if err := m.Backups.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	masterKey := readKey(t, m.Config.Data)
	m.Close()

	var stdout, stderr bytes.Buffer
	if code := runRestore(ctx, []string{"--from", url, "--list"}, offsitetest.Env, &stdout, &stderr); code != 0 {
		t.Fatalf("--list: exit %d %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[2], oldest) {
		t.Fatalf("--list printed\n%s", stdout.String())
	}

	// The newest, with the key file put beside the new file.
	dir := t.TempDir()
	restored := filepath.Join(dir, "restored.db")
	if err := os.WriteFile(restored+".key", []byte(masterKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code := runRestore(ctx, []string{"--from", url, "--data", restored}, offsitetest.Env, &stdout, &stderr); code != 0 {
		t.Fatalf("restore: exit %d %s", code, stderr.String())
	}
	if !regexp.MustCompile(`^Restored s3://latchkey/auth/latchkey-\d{8}T\d{6}Z\.db \([^,]+, taken [^)]+\) into ` + regexp.QuoteMeta(restored)).MatchString(stdout.String()) {
		t.Fatalf("restore printed %q", stdout.String())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("%d files in the directory, want the data file and its key: %v", len(entries), entries)
	}
	if fi, err := os.Stat(restored); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("restored file: %v %v, want mode 0600", fi, err)
	}
	clock.Advance(time.Minute) // past the address's send interval, which the file keeps
	m2, _ := startBackupMain(t, Config{Data: restored, BaseURL: origin}, clock.Now)
	c2 := client{t, "http://" + m2.Addr()}
	if st, body := c2.do("GET", "/api/v1/session", token, nil); st != 200 {
		t.Fatalf("the session made before the backup: %d %v", st, body)
	}
	again := signInOTP(t, c2, key, m2.outboxDir(), "grace@example.com")
	if again["isNewUser"] != false || again["user"].(map[string]any)["id"] != user {
		t.Fatalf("sign-in on the restored file: %v, want user %v again", again, user)
	}

	// The oldest, by name, with the key given: it predates the user.
	older := filepath.Join(t.TempDir(), "older.db")
	if code := runRestore(ctx, []string{"--from", url, "--name", oldest, "--data", older, "--master-key", masterKey}, offsitetest.Env, &stdout, &stderr); code != 0 {
		t.Fatalf("restore --name: exit %d %s", code, stderr.String())
	}
	m3, _ := startBackupMain(t, Config{Data: older, MasterKey: masterKey}, nil)
	if login := signInOTP(t, client{t, "http://" + m3.Addr()}, key, m3.outboxDir(), "grace@example.com"); login["isNewUser"] != true {
		t.Fatalf("the oldest backup knows the user: %v", login)
	}
}

// TestRestoreRefusals: a backup that is not a latchkey data file (not
// bbolt, a bbolt file of no one, cut short), one written under another
// master key, a target that exists, no master key, a name the bucket
// lacks, and an unreachable bucket are each refused with one line and
// exit code 1, leaving the directory as it was.
func TestRestoreRefusals(t *testing.T) {
	t.Parallel()
	s3 := offsitetest.Start(t, "latchkey")
	url := s3.URL("latchkey", "")
	m, _ := startBackupMain(t, Config{BackupTo: url, BackupEvery: "1h"}, nil)
	if err := m.Backups.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	good := m.Backups.Status().LastName
	masterKey := readKey(t, m.Config.Data)
	m.Close()
	real := s3.Object(t, "latchkey", good)

	emptyBolt := filepath.Join(t.TempDir(), "empty.db")
	db, err := bbolt.Open(emptyBolt, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	blank, _ := os.ReadFile(emptyBolt)
	s3.Put(t, "latchkey", "latchkey-20200101T000000Z.db", []byte("hello, not a data file"))
	s3.Put(t, "latchkey", "latchkey-20200101T000001Z.db", blank)
	s3.Put(t, "latchkey", "latchkey-20200101T000002Z.db", real[:len(real)/2])
	s3.Put(t, "latchkey", "latchkey-20200101T000003Z.db", nil)
	otherKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))

	dir := t.TempDir()
	exists := filepath.Join(dir, "exists.db")
	os.WriteFile(exists, []byte("mine"), 0o600)
	downURL := "s3://latchkey?endpoint=http://127.0.0.1:1&region=us-east-1"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not bbolt", []string{"--name", "latchkey-20200101T000000Z.db"}, "s3://latchkey/latchkey-20200101T000000Z.db is not a latchkey data file: nothing restored"},
		{"bbolt of no one", []string{"--name", "latchkey-20200101T000001Z.db"}, "s3://latchkey/latchkey-20200101T000001Z.db is not a latchkey data file (it holds no latchkey data): nothing restored"},
		{"cut short", []string{"--name", "latchkey-20200101T000002Z.db"}, "s3://latchkey/latchkey-20200101T000002Z.db: the backup is truncated: "},
		{"empty", []string{"--name", "latchkey-20200101T000003Z.db"}, "s3://latchkey/latchkey-20200101T000003Z.db is not a latchkey data file (it is empty): nothing restored"},
		{"wrong master key", []string{"--name", good, "--master-key", otherKey}, "s3://latchkey/" + good + " was written under another master key than --master-key's: nothing restored"},
		{"no such backup", []string{"--name", "latchkey-20990101T000000Z.db"}, "no backup named latchkey-20990101T000000Z.db under s3://latchkey/ (--list lists them)"},
		{"not a backup's name", []string{"--name", "../etc/passwd"}, `--name "../etc/passwd" is not a backup's name (latchkey-YYYYMMDDTHHMMSSZ.db; --list lists them)`},
		{"a long name", []string{"--name", strings.Repeat("a", 100)}, `--name "` + strings.Repeat("a", 64) + `"… is not a backup's name`},
		{"target exists", []string{"--data", exists}, exists + " exists: restore into a new file (restore never overwrites one)"},
		{"no master key", []string{"--master-key", ""}, "the master key the server used is needed to check the backup"},
		{"unreachable", []string{"--from", downURL}, "s3://latchkey/: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--from", url, "--data", filepath.Join(dir, "new.db"), "--master-key", masterKey}
			for i := 0; i < len(tc.args); i += 2 {
				j := slices.Index(args, tc.args[i])
				if j >= 0 {
					args[j+1] = tc.args[i+1]
				} else {
					args = append(args, tc.args[i], tc.args[i+1])
				}
			}
			var stdout, stderr bytes.Buffer
			code := runRestore(ctx, args, offsitetest.Env, &stdout, &stderr)
			msg := stderr.String()
			if code != 1 || !strings.HasPrefix(msg, "latchkey restore: ") || !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") != 1 || stdout.Len() != 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and one line containing %q", code, stdout.String(), msg, tc.want)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 || entries[0].Name() != "exists.db" {
				t.Fatalf("left behind: %v", entries)
			}
		})
	}
	if b, _ := os.ReadFile(exists); string(b) != "mine" {
		t.Fatal("the existing file changed")
	}
	// A wrong key from the environment is named as the environment's.
	env := func(k string) string {
		if k == "LATCHKEY_MASTER_KEY" {
			return otherKey
		}
		return offsitetest.Env(k)
	}
	var stdout, stderr bytes.Buffer
	if code := runRestore(ctx, []string{"--from", url, "--name", good, "--data", filepath.Join(dir, "new.db")}, env, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "another master key than LATCHKEY_MASTER_KEY's") {
		t.Fatalf("wrong key from the environment: exit %d, %q", code, stderr.String())
	}
	// A key file beside the target that holds another key than the one
	// given is refused, and left as it was.
	keyBeside := filepath.Join(dir, "keyed.db.key")
	os.WriteFile(keyBeside, []byte(otherKey+"\n"), 0o600)
	stdout.Reset()
	stderr.Reset()
	if code := runRestore(ctx, []string{"--from", url, "--name", good, "--data", filepath.Join(dir, "keyed.db"), "--master-key", masterKey}, offsitetest.Env, &stdout, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), "key file "+keyBeside+" holds another master key than the one given: remove that file, or choose another target file") {
		t.Fatalf("a key file of another key beside the target: exit %d, %q", code, stderr.String())
	}
	if b, _ := os.ReadFile(keyBeside); string(b) != otherKey+"\n" {
		t.Fatal("the key file beside the target changed")
	}
	os.Remove(keyBeside)
	// Usage errors: exit 2.
	for _, args := range [][]string{{"--data", "x.db"}, {"--from", url}, {"--from", url, "--list", "--data", "x.db"}, {"--from", url, "--data", "x.db", "extra"}} {
		var stdout, stderr bytes.Buffer
		if code := runRestore(ctx, args, func(string) string { return "" }, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestBackupSettingsRefused: --backup-to on PostgreSQL, and settings
// that do not make sense, refuse the start with one line before
// anything is touched (no data file, no connection: the database URL
// names a port nothing listens on, which would fail otherwise).
func TestBackupSettingsRefused(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "the settings are refused before any store is opened")
	const db = "postgres://latchkey:pw@127.0.0.1:1/latchkey?sslmode=disable"
	good := "s3://backups/latchkey?endpoint=http://127.0.0.1:9&region=us-east-1"
	for _, tc := range []struct {
		name string
		args []string
		env  func(string) string
		want string
	}{
		{"postgres", []string{"--database-url", db, "--master-key", testMasterKey, "--backup-to", good, "--backup-every", "6h"}, offsitetest.Env,
			"--backup-to backs up a data file (--data), not a PostgreSQL database: back the database up with its own tools (pg_dump, or your provider's backups)"},
		{"every without to", []string{"--backup-every", "6h"}, offsitetest.Env, "--backup-every needs --backup-to s3://bucket/prefix (where to upload)"},
		{"to without every", []string{"--backup-to", good}, offsitetest.Env, "--backup-to needs --backup-every (how often to upload, e.g. 6h)"},
		{"every too short", []string{"--backup-to", good, "--backup-every", "30s"}, offsitetest.Env, `--backup-every "30s" must be a duration of at least 1m0s, e.g. 6h`},
		{"keep not a number", []string{"--backup-to", good, "--backup-every", "6h", "--backup-keep", "-1"}, offsitetest.Env, `--backup-keep "-1" must be a whole number, 0 or more`},
		{"bad URL", []string{"--backup-to", "s3://Backups", "--backup-every", "6h"}, offsitetest.Env, `--backup-to: s3:// URL: "Backups" is not a bucket name`},
		{"no credentials", []string{"--backup-to", good, "--backup-every", "6h"}, func(string) string { return "" }, "--backup-to: the bucket's credentials are missing: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := NewMain()
			m.Stdout = io.Discard
			args := []string{"--addr", "127.0.0.1:0"}
			if !slices.Contains(tc.args, "--database-url") {
				args = append(args, "--data", filepath.Join(dir, "latchkey.db"))
			}
			args = append(args, tc.args...)
			if err := m.ParseFlags(args, tc.env); err != nil {
				t.Fatal(err)
			}
			m.Logger = discardLogger()
			err := m.Run(ctx)
			m.Close()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want one line containing %q", err, tc.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Fatalf("left behind: %v", entries)
			}
		})
	}
}
