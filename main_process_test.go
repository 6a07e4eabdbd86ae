package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/store"
	"latchkey/store/storetest"
)

// child runs this binary's main with args (space-separated, as
// LATCHKEY_TEST_ARGS takes them) and extra environment, and returns its
// exit code and output.
func child(t *testing.T, env []string, args string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "LATCHKEY_TEST_ARGS="+args), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	took = time.Since(start)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String(), took
}

// TestUsage: `latchkey` alone prints the usage, naming serve and every
// CLI subcommand group; `latchkey serve --help` lists every flag.
func TestUsage(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "prints the usage")
	code, out, _, _ := child(t, nil, "")
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	for _, want := range []string{"Usage:", "latchkey serve", "latchkey version", "latchkey project create", "latchkey key revoke", "latchkey method create", "latchkey webhook list", "latchkey user list", "latchkey events", "latchkey backup", "latchkey restore"} {
		if !strings.Contains(out, want) {
			t.Errorf("usage lacks %q:\n%s", want, out)
		}
	}
	code, out, _, _ = child(t, []string{"LATCHKEY_SMTP_URL=smtp://u:hunter2@mail.example"}, "serve --help")
	if code != 0 {
		t.Errorf("serve --help: exit %d, want 0", code)
	}
	for _, f := range []string{"--addr", "--data", "--database-url", "--base-url", "--smtp-url", "--smtp-ca-file", "--mail-from", "--mail-log", "--sms-provider", "--admin-token", "--master-key", "--trusted-proxies", "--webhook-allow-private", "--oauth-allow-private", "--log-format", "--metrics-addr", "--backup-to", "--backup-every", "--backup-keep"} {
		if !strings.Contains(out, f) {
			t.Errorf("serve --help lacks %s:\n%s", f, out)
		}
	}
	if strings.Contains(out, "hunter2") {
		t.Error("serve --help shows a secret from the environment")
	}
}

// TestSignalAndLock: SIGTERM stops the server with exit code 0; a second
// serve on a data file in use exits within 2 s with a clear message.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the data file's lock.
func TestSignalAndLock(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	if testing.Short() {
		t.Skip("spawns server processes")
	}
	data := filepath.Join(t.TempDir(), "latchkey.db")
	p := spawn(t, data)

	code, _, stderr, took := child(t, nil, "serve --addr 127.0.0.1:0 --data "+data)
	if code == 0 || !strings.Contains(stderr, "data file is in use by another process") {
		t.Fatalf("second serve: exit %d stderr %q", code, stderr)
	}
	if took >= 2*time.Second {
		t.Fatalf("second serve took %v, want under 2 s", took)
	}

	if st, _ := (client{t, p.base}).do("GET", "/api/v1/health", "", nil); st != 200 {
		t.Fatalf("health %d", st)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit within 15 s of SIGTERM")
	}
	p.cmd.Process = nil // waited: nothing left for the cleanup to kill
}

// TestConfiguredAdminToken: with LATCHKEY_ADMIN_TOKEN set, the first
// start neither prints the admin token nor writes a file, and the token
// works.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the token file beside the data file.
func TestConfiguredAdminToken(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	const token = "adm_configuredconfiguredconfigured"
	data := filepath.Join(t.TempDir(), "latchkey.db")
	m, out := startMain(t, Config{Data: data, AdminToken: token})
	if strings.Contains(out.String(), token) || strings.Contains(out.String(), "admin token") {
		t.Fatalf("first start printed the admin token:\n%s", out)
	}
	match(t, keyLine, out.String())
	if _, err := os.Stat(data + ".admin-token"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("admin token file: %v, want none", err)
	}
	if st, _ := (client{t, "http://" + m.Addr()}).do("GET", "/api/v1/admin/projects", token, nil); st != 200 {
		t.Fatalf("configured token: %d", st)
	}
}

// TestAdminTokenAfterConfiguredStart: when the first start had the admin
// token configured (nothing stored) and a later start has none, that
// start generates one, prints it once and writes <data>.admin-token
// (0600), as a first start does; the start after it prints nothing and
// the generated token keeps working.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the token file beside the data file.
func TestAdminTokenAfterConfiguredStart(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	const configured = "adm_configuredconfiguredconfigured"
	data := filepath.Join(t.TempDir(), "latchkey.db")
	m, _ := startMain(t, Config{Data: data, AdminToken: configured})
	m.Close()

	m, out := startMain(t, Config{Data: data})
	admin := match(t, adminLine, out.String())
	if strings.Contains(out.String(), "test API key") {
		t.Fatalf("a later start made first-start state:\n%s", out)
	}
	file, err := os.ReadFile(data + ".admin-token")
	if err != nil || strings.TrimSpace(string(file)) != admin {
		t.Fatalf("admin token file holds %q (%v), want the printed token", file, err)
	}
	if fi, _ := os.Stat(data + ".admin-token"); fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file mode %v, want 0600", fi.Mode().Perm())
	}
	c := client{t, "http://" + m.Addr()}
	if st, body := c.do("GET", "/api/v1/admin/projects", admin, nil); st != 200 {
		t.Fatalf("generated token: %d %v", st, body)
	}
	if st, body := c.do("GET", "/api/v1/admin/projects", configured, nil); st != 401 || body["code"] != "UNAUTHORIZED" {
		t.Fatalf("the no longer configured token: %d %v, want 401 UNAUTHORIZED", st, body)
	}
	m.Close()

	m, out = startMain(t, Config{Data: data})
	if s := out.String(); strings.Contains(s, "admin token") || strings.Contains(s, admin) {
		t.Fatalf("the start after printed an admin token again:\n%s", s)
	}
	if st, _ := (client{t, "http://" + m.Addr()}).do("GET", "/api/v1/admin/projects", admin, nil); st != 200 {
		t.Fatalf("generated token after restart: %d", st)
	}
}

// TestFirstStartEdgeCases: an empty pre-existing data file gets the
// first start; a stale admin-token file is replaced; an existing data
// file without its key file, or with another master key, refuses to
// start instead of minting a key that matches nothing.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the files beside the data file.
func TestFirstStartEdgeCases(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "latchkey.db")
	if err := os.WriteFile(data, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data+".admin-token", []byte("adm_stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, out := startMain(t, Config{Data: data})
	admin := match(t, adminLine, out.String())
	if !strings.Contains(out.String(), "http://localhost:3000") {
		t.Errorf("first start does not name the allowed origin:\n%s", out)
	}
	file, err := os.ReadFile(data + ".admin-token")
	if err != nil || strings.TrimSpace(string(file)) != admin {
		t.Fatalf("admin token file holds %q (%v), want the new token", file, err)
	}
	if fi, _ := os.Stat(data + ".admin-token"); fi.Mode().Perm() != 0o600 {
		t.Fatalf("admin token file mode %v, want 0600", fi.Mode().Perm())
	}
	m.Close()

	wrong := NewMain()
	wrong.Config = Config{Addr: "127.0.0.1:0", Data: data, MasterKey: "d3Jvbmd3cm9uZ3dyb25nd3Jvbmd3cm9uZ3dyb25nd3I=", LogFormat: "text", SMSProvider: "none"}
	wrong.Logger = discardLogger()
	if err := wrong.Run(context.Background()); !errors.Is(err, store.ErrWrongMasterKey) {
		t.Fatalf("another master key: %v, want ErrWrongMasterKey", err)
	}
	wrong.Close()

	os.Rename(data+".key", data+".key.moved")
	lost := NewMain()
	lost.Config = Config{Addr: "127.0.0.1:0", Data: data, LogFormat: "text", SMSProvider: "none"}
	lost.Logger = discardLogger()
	if err := lost.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "master key file") {
		t.Fatalf("missing key file: %v, want a refusal", err)
	}
	lost.Close()
	if _, err := os.Stat(data + ".key"); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a fresh key file was written beside the data file")
	}
}
