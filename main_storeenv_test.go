package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestStoreNamedTwice runs `latchkey serve` as a process, as the
// container image and the systemd unit do: LATCHKEY_DATA set by them,
// the store chosen by the operator on top.
//
//   - PostgreSQL pass: LATCHKEY_DATABASE_URL added to LATCHKEY_DATA (docker
//     run -e LATCHKEY_DATABASE_URL=... on the image) serves from the
//     database, says once in its log that the data file is not used, and
//     creates no file there.
//   - bolt pass: --data on the command line serves the data file although
//     LATCHKEY_DATABASE_URL is set, saying so; both flags on the command
//     line exit 2.
func TestStoreNamedTwice(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns server processes")
	}
	dsn := storetest.New(t)
	dir := t.TempDir()
	imageData := filepath.Join(dir, "data", "latchkey.db")
	if err := os.MkdirAll(filepath.Dir(imageData), 0o700); err != nil {
		t.Fatal(err)
	}
	if store.IsURL(dsn) {
		r := spawnReplica(t, "image", dir, []string{"LATCHKEY_DATA=" + imageData, "LATCHKEY_DATABASE_URL=" + dsn,
			"LATCHKEY_MASTER_KEY=" + testMasterKey, "LATCHKEY_LOG_FORMAT=text"})
		key := waitPrinted(t, keyLine, r.stdout)
		if st, body := r.call("POST", "/api/v1/otp/send", key, map[string]any{"email": "image@example.com"}); st != 200 {
			t.Fatalf("otp/send on the database: %d %v", st, body)
		}
		logs := r.logs()
		if n := strings.Count(logs, "LATCHKEY_DATA ("+imageData+") is not used: LATCHKEY_DATABASE_URL names the store"); n != 1 {
			t.Fatalf("%d log lines say the data file is not used, want 1:\n%s", n, logs)
		}
		if !strings.Contains(logs, `database="postgres://`) {
			t.Fatalf("the listening line does not name the database:\n%s", logs)
		}
		if entries, _ := os.ReadDir(filepath.Dir(imageData)); len(entries) != 0 {
			t.Fatalf("serving from the database wrote %d files beside LATCHKEY_DATA", len(entries))
		}
		return
	}

	const unreachable = "postgres://latchkey:secret@127.0.0.1:1/latchkey?sslmode=disable"
	r := spawnReplica(t, "flag", dir, []string{"LATCHKEY_TEST_ARGS=serve --addr 127.0.0.1:0 --data " + dsn,
		"LATCHKEY_DATABASE_URL=" + unreachable, "LATCHKEY_DATA=" + imageData, "LATCHKEY_LOG_FORMAT=text"})
	if st, body := r.call("GET", "/api/v1/health", "", nil); st != 200 {
		t.Fatalf("health: %d %v", st, body)
	}
	if logs := r.logs(); !strings.Contains(logs, "LATCHKEY_DATABASE_URL is not used: --data names the store") || strings.Contains(logs, "secret") {
		t.Fatalf("the log does not say the database URL is not used (or shows its password):\n%s", logs)
	}
	if _, err := os.Stat(dsn); err != nil {
		t.Fatalf("--data's file: %v", err)
	}
	code, _, errOut, _ := child(t, nil, "serve --addr 127.0.0.1:0 --data "+filepath.Join(dir, "x.db")+" --database-url "+unreachable)
	if code != 2 || !strings.Contains(errOut, "--database-url and --data name two stores") {
		t.Fatalf("both on the command line: exit %d, %q; want 2 naming both", code, errOut)
	}
}
