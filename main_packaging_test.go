package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/store/storetest"
)

// TestRestoreFromBackup performs the restore procedure docs/operations.md gives:
// a running server with a user who signed in and a live key is backed up
// with `latchkey backup --out` while it runs; it is stopped; the backup
// goes into a new location as the data file with the same master key
// file beside it; the new server starts on it (no first start) and the
// same user signs in with the same key (isNewUser false, the same id);
// the live key and the admin token still work, and a user made after the
// backup is not there.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: a backup is a data file.
func TestRestoreFromBackup(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	if testing.Short() {
		t.Skip("spawns server processes")
	}
	oldDir, newDir := t.TempDir(), t.TempDir()
	oldData := filepath.Join(oldDir, "latchkey.db")
	p := spawn(t, oldData)
	key := p.printed(keyLine)
	admin := p.printed(adminLine)
	c := client{t, p.base}

	// mailed waits for a new message to email in outbox and returns the
	// first match of re in it.
	mailed := func(outbox, email string, before int, re *regexp.Regexp) string {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			files, _ := filepath.Glob(filepath.Join(outbox, "*.eml"))
			if len(files) > before {
				b, _ := os.ReadFile(files[len(files)-1])
				if m := re.FindStringSubmatch(string(b)); m != nil && strings.Contains(string(b), "To: "+email) {
					return m[len(m)-1]
				}
			}
		}
		t.Fatalf("nothing mailed to %s", email)
		return ""
	}
	count := func(outbox string) int { files, _ := filepath.Glob(filepath.Join(outbox, "*.eml")); return len(files) }
	// signIn signs email in by OTP; signInByLink by magic link (the
	// restored file keeps the OTP send throttle of the first sign-in).
	signIn := func(c client, outbox, email string) map[string]any {
		t.Helper()
		n := count(outbox)
		if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": email}); st != 200 {
			t.Fatalf("otp/send: %d %v", st, body)
		}
		code := mailed(outbox, email, n, regexp.MustCompile(`\b\d{6}\b`))
		st, body := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": email, "code": code})
		if st != 200 {
			t.Fatalf("otp/verify: %d %v", st, body)
		}
		return body
	}
	signInByLink := func(c client, outbox, email string) map[string]any {
		t.Helper()
		n := count(outbox)
		if st, body := c.do("POST", "/api/v1/magic/send", key, map[string]any{"email": email}); st != 200 {
			t.Fatalf("magic/send: %d %v", st, body)
		}
		token := mailed(outbox, email, n, regexp.MustCompile(`/api/v1/magic/verify\?token=([A-Za-z0-9_-]{43})`))
		st, body := c.do("GET", "/api/v1/magic/verify?token="+token, "", nil)
		if st != 200 {
			t.Fatalf("magic/verify: %d %v", st, body)
		}
		return body
	}
	first := signIn(c, oldData+".outbox", "kept@example.com")
	if first["isNewUser"] != true {
		t.Fatalf("first sign-in: %v", first)
	}
	_, projects := c.do("GET", "/api/v1/admin/projects", admin, nil)
	projectID := projects["projects"].([]any)[0].(map[string]any)["id"]
	st, created := c.do("POST", "/api/v1/admin/keys", admin, map[string]any{"projectId": projectID, "mode": "live"})
	if st != 200 {
		t.Fatalf("create key: %d %v", st, created)
	}
	liveKey := created["key"].(string)

	// The backup, taken by the CLI while the server runs.
	backup := filepath.Join(t.TempDir(), "backup.db")
	code, out, errOut, _ := child(t, nil, "backup --out "+backup+" --server "+p.base+" --data "+oldData)
	if code != 0 || !strings.Contains(out, "Wrote a backup of") {
		t.Fatalf("latchkey backup: exit %d\n%s%s", code, out, errOut)
	}
	signIn(c, oldData+".outbox", "after-backup@example.com")

	// Stop the server.
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("server after SIGTERM: %v", err)
	}
	p.cmd.Process = nil

	// Restore into a new location: the backup as the data file, the same
	// master key file beside it.
	newData := filepath.Join(newDir, "latchkey.db")
	copyFile(t, backup, newData)
	copyFile(t, oldData+".key", newData+".key")
	p2 := spawn(t, newData)
	c2 := client{t, p2.base}
	again := signInByLink(c2, newData+".outbox", "kept@example.com")
	if again["isNewUser"] != false || again["userId"] != first["userId"] {
		t.Fatalf("sign-in after the restore: %v, want isNewUser false for user %v", again, first["userId"])
	}
	if st, body := c2.do("GET", "/api/v1/me", liveKey, nil); st != 200 {
		t.Fatalf("live key after the restore: %d %v", st, body)
	}
	st, users := c2.do("GET", fmt.Sprintf("/api/v1/admin/users?projectId=%v", projectID), admin, nil)
	if st != 200 {
		t.Fatalf("admin token after the restore: %d %v", st, users)
	}
	var emails []string
	for _, u := range users["users"].([]any) {
		emails = append(emails, u.(map[string]any)["email"].(string))
	}
	if strings.Join(emails, ",") != "kept@example.com" {
		t.Fatalf("users after the restore %v, want only the one from before the backup", emails)
	}
	// The restored file was no first start: one project, the old one.
	_, projects = c2.do("GET", "/api/v1/admin/projects", admin, nil)
	if ps := projects["projects"].([]any); len(ps) != 1 || ps[0].(map[string]any)["id"] != projectID {
		t.Fatalf("projects after the restore: %v", projects)
	}
	if s := p2.stdout(); strings.Contains(s, "shown once") {
		t.Fatalf("the restored server printed first-start secrets:\n%s", s)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// dockerfile returns the Dockerfile's instructions, one per element,
// continuation lines joined and comments dropped.
func dockerfile(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	cur := ""
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || (line == "" && cur == "") {
			continue
		}
		if more, ok := strings.CutSuffix(line, "\\"); ok {
			cur += more + " "
			continue
		}
		if cur += line; strings.TrimSpace(cur) != "" {
			out = append(out, strings.Join(strings.Fields(cur), " "))
		}
		cur = ""
	}
	return out
}

// TestDockerfile reads the Dockerfile: the build stage uses the Go of
// go.mod and copies go.mod and go.sum (and downloads modules) before the
// source; the binary is static; the image runs it as a non-root user on
// distroless, listening on 0.0.0.0:8080 with its data in the /data
// volume; the build context leaves out the repository and data files.
func TestDockerfile(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads the Dockerfile")
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if goVersion == nil {
		t.Fatal("no go directive in go.mod")
	}
	ins := dockerfile(t)
	index := func(prefix string) int {
		for i, in := range ins {
			if strings.HasPrefix(in, prefix) {
				return i
			}
		}
		return -1
	}
	want := []string{
		"FROM golang:" + string(goVersion[1]) + " AS build",
		"COPY go.mod go.sum ./",
		"RUN go mod download",
		"COPY . .",
		"RUN CGO_ENABLED=0 go build",
		"FROM gcr.io/distroless/static",
		"ENV LATCHKEY_ADDR=0.0.0.0:8080 LATCHKEY_DATA=/data/latchkey.db",
		"VOLUME /data",
		"EXPOSE 8080",
		"USER 65532:65532",
		`ENTRYPOINT ["/usr/local/bin/latchkey"]`,
		`CMD ["serve"]`,
	}
	last := -1
	for _, w := range want {
		i := index(w)
		if i < 0 {
			t.Fatalf("Dockerfile lacks %q:\n%s", w, strings.Join(ins, "\n"))
		}
		if i < last {
			t.Fatalf("%q comes before %q", w, ins[last])
		}
		last = i
	}
	if strings.Count(strings.Join(ins, "\n"), "\nFROM ") != 1 || index("HEALTHCHECK") >= 0 {
		t.Fatalf("want two stages and no HEALTHCHECK (distroless has no shell):\n%s", strings.Join(ins, "\n"))
	}
	ignore, err := os.ReadFile(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, pattern := range []string{".git", "*.db", "*.db.*"} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(pattern) + `$`).Match(ignore) {
			t.Errorf(".dockerignore lacks %s", pattern)
		}
	}
}

// TestDockerImage builds the image and runs it, when a container engine
// is usable here: the container starts, answers GET /api/v1/health and
// prints the first-start key.
func TestDockerImage(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "builds the container image")
	if testing.Short() {
		t.Skip("builds a container image")
	}
	engine := ""
	for _, name := range []string{"docker", "podman"} {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := exec.CommandContext(ctx, name, "info").Run()
		cancel()
		if err == nil {
			engine = name
			break
		}
	}
	if engine == "" {
		t.Skip("no usable container engine (`docker info` and `podman info` fail): the Dockerfile is checked by reading only (TestDockerfile)")
	}
	run := func(timeout time.Duration, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, engine, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", engine, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	tag := fmt.Sprintf("latchkey-test:%d", os.Getpid())
	run(15*time.Minute, "build", "-t", tag, ".")
	t.Cleanup(func() { exec.Command(engine, "rmi", "-f", tag).Run() })
	id := run(time.Minute, "run", "-d", "-p", "127.0.0.1::8080", tag)
	t.Cleanup(func() { exec.Command(engine, "rm", "-f", id).Run() })
	hostPort := run(time.Minute, "port", id, "8080/tcp")
	hostPort = strings.TrimSpace(strings.Split(hostPort, "\n")[0])
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + hostPort + "/api/v1/health")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && strings.Contains(string(body), `"ok"`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container did not answer /api/v1/health: %v\n%s", err, run(time.Minute, "logs", id))
		}
		time.Sleep(200 * time.Millisecond)
	}
	logs := run(time.Minute, "logs", id)
	sc := bufio.NewScanner(strings.NewReader(logs))
	found := false
	for sc.Scan() {
		found = found || keyLine.MatchString(sc.Text())
	}
	if !found {
		t.Fatalf("no first-start key in the container's output:\n%s", logs)
	}
}

// TestSystemdUnit reads docs/latchkey.service: it runs `latchkey serve`
// as a dynamic user with its data in its state directory and the
// hardening options; systemd-analyze, where installed, finds no error in
// it.
func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "reads the systemd unit")
	raw, err := os.ReadFile("docs/latchkey.service")
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string][]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			settings[k] = append(settings[k], v)
		}
	}
	for k, v := range map[string]string{
		"ExecStart": "/usr/local/bin/latchkey serve", "DynamicUser": "yes", "StateDirectory": "latchkey",
		"StateDirectoryMode": "0700", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"NoNewPrivileges": "yes", "CapabilityBoundingSet": "", "UMask": "0077", "KillSignal": "SIGTERM",
	} {
		if got := settings[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	env := strings.Join(settings["Environment"], " ")
	if !strings.Contains(env, "LATCHKEY_DATA=/var/lib/latchkey/latchkey.db") {
		t.Errorf("Environment %q: the data file must be in the state directory", env)
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Log("systemd-analyze is not installed: the unit is checked by reading only")
		return
	}
	// Verify a copy whose ExecStart names a binary that exists here.
	exe, _ := os.Executable()
	unit := filepath.Join(t.TempDir(), "latchkey.service")
	os.WriteFile(unit, []byte(strings.ReplaceAll(string(raw), "/usr/local/bin/latchkey", exe)), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "systemd-analyze", "verify", unit).CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}
