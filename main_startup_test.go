package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/internal/testkit"
	"latchkey/store/bolt"
	"latchkey/store/storetest"
)

// snapshot returns the files under dir with a hash of each one's bytes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			out[rel+"/"] = "dir"
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		out[rel] = hex.EncodeToString(sum[:8])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStartupChecks runs `latchkey serve` (this binary's main) with one
// mistake each: it exits 1 with one line on stderr naming the mistake,
// prints nothing on stdout (no first-start secret), never dumps a crash,
// and leaves the data directory exactly as it was (no data file, no key
// file, no outbox; an existing file unchanged).
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: a data file and its cold start.
func TestStartupChecks(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	if testing.Short() {
		t.Skip("spawns server processes")
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	// A real data file with its key, for the truncation case.
	realDir := t.TempDir()
	realData := filepath.Join(realDir, "latchkey.db")
	m, _ := startMain(t, Config{Data: realData})
	m.Close()
	realBytes, err := os.ReadFile(realData)
	if err != nil {
		t.Fatal(err)
	}
	realKey, _ := os.ReadFile(realData + ".key")
	garbage := make([]byte, 1<<20)
	rand.Read(garbage)
	// Another program's bbolt file and a newer latchkey's: serve checks
	// only the header before its one open, which refuses both before
	// writing anything.
	other := boltFile(t, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("widgets"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	})
	newer := boltFile(t, func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket([]byte("meta")); err != nil {
			return err
		}
		b, err := tx.CreateBucket([]byte("meta"))
		if err != nil {
			return err
		}
		v := binary.BigEndian.AppendUint64(nil, bolt.SchemaVersion+1)
		return b.Put([]byte("schema_version"), v)
	}, realBytes)

	for _, tc := range []struct {
		name  string
		args  string            // after serve --data <dir>/latchkey.db
		env   []string          // extra environment
		files map[string][]byte // written into the directory first
		want  string            // in the error line
	}{
		{name: "smtp url with an http scheme", args: "--smtp-url http://x", want: "smtp url: scheme must be smtp or smtps"},
		{name: "smtp url without //", args: "--smtp-url smtp:mail.example.com", want: "smtp url"},
		{name: "smtp url with an unknown tls policy", env: []string{"LATCHKEY_SMTP_URL=smtp://u:hunter2@mail.example?tls=sometimes"}, want: "tls must be opportunistic or required"},
		{name: "smtp url naming a missing CA file", env: []string{"LATCHKEY_SMTP_URL=smtp://u:hunter2@mail.example?ca=/nonexistent/ca.pem"}, want: "/nonexistent/ca.pem"},
		{name: "missing smtp CA file", args: "--smtp-url smtp://mail.example --smtp-ca-file /nonexistent/ca.pem", want: "smtp CA file"},
		{name: "smtp CA file without an smtp url", env: []string{"LATCHKEY_SMTP_CA_FILE=/etc/ssl/ca.pem"}, want: "--smtp-ca-file is set but --smtp-url is empty"},
		{name: "base url without a scheme", args: "--base-url localhost:8080", want: "--base-url \"localhost:8080\" must start with http:// or https://"},
		{name: "base url with another scheme", args: "--base-url ftp://auth.example.com", want: "must start with http:// or https://"},
		{name: "base url without a host", args: "--base-url https://", want: "name a host"},
		{name: "base url with a path", args: "--base-url https://auth.example.com/login", want: "must be an origin"},
		{name: "mail log with an smtp url", args: "--mail-log --smtp-url smtp://u:hunter2@mail.example", want: "--mail-log logs codes and links, for development without an SMTP server: it cannot be used with --smtp-url"},
		{name: "mail log with an smtp url, from the environment", env: []string{"LATCHKEY_MAIL_LOG=yes", "LATCHKEY_SMTP_URL=smtp://u:hunter2@mail.example"}, want: "it cannot be used with --smtp-url"},
		{name: "sender that is not an address", args: "--mail-from nobody", want: "--mail-from \"nobody\" is not an email address"},
		{name: "listen address without a port", args: "--addr nonsense", want: "cannot listen on --addr nonsense"},
		{name: "listen port out of range", args: "--addr 127.0.0.1:99999", want: "cannot listen on --addr 127.0.0.1:99999"},
		{name: "listen port in use", args: "--addr " + busy.Addr().String(), want: "address already in use"},
		{name: "metrics port in use", args: "--metrics-addr " + busy.Addr().String(), want: "cannot listen on --metrics-addr " + busy.Addr().String() + ": bind: address already in use"},
		{name: "metrics address without a port", args: "--metrics-addr nonsense", want: "cannot listen on --metrics-addr nonsense"},
		{name: "master key that is not base64", env: []string{"LATCHKEY_MASTER_KEY=not-a-key"}, want: "--master-key: master key must be 32 bytes"},
		{name: "trusted proxy that is not a CIDR", args: "--trusted-proxies 10.0.0.0/33", want: "--trusted-proxies"},
		{name: "twilio without its settings", args: "--sms-provider twilio", want: "LATCHKEY_TWILIO"},
		{name: "garbage data without a key file", files: map[string][]byte{"latchkey.db": garbage}, want: "not a latchkey data file"},
		{name: "garbage data with a key file", files: map[string][]byte{"latchkey.db": garbage, "latchkey.db.key": realKey}, want: "not a latchkey data file"},
		{name: "text file as data", files: map[string][]byte{"latchkey.db": []byte("hello\n")}, want: "not a latchkey data file"},
		{name: "truncated data file", files: map[string][]byte{"latchkey.db": realBytes[:2*4096+100], "latchkey.db.key": realKey}, want: "truncated"},
		{name: "truncated data file without its key", files: map[string][]byte{"latchkey.db": realBytes[:3*4096]}, want: "truncated"},
		{name: "another program's bbolt file", files: map[string][]byte{"latchkey.db": other, "latchkey.db.key": realKey}, want: "not a latchkey data file (a bbolt file of another program)"},
		{name: "another program's bbolt file without a key file", files: map[string][]byte{"latchkey.db": other}, want: "not a latchkey data file (a bbolt file of another program)"},
		{name: "newer latchkey's data file", files: map[string][]byte{"latchkey.db": newer, "latchkey.db.key": realKey}, want: "upgrade latchkey"},
		{name: "data file is a directory", files: map[string][]byte{"latchkey.db/": nil}, want: "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				if strings.HasSuffix(name, "/") {
					os.Mkdir(filepath.Join(dir, name), 0o700)
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before := snapshot(t, dir)
			args := "serve --addr 127.0.0.1:0 --data " + filepath.Join(dir, "latchkey.db") + " " + tc.args
			code, stdout, stderr, _ := child(t, tc.env, args)
			if code != 1 {
				t.Errorf("exit %d, want 1 (stderr %q)", code, stderr)
			}
			if !strings.HasPrefix(stderr, "latchkey: ") || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q, want one line saying %q", stderr, tc.want)
			}
			for _, bad := range []string{"goroutine ", "panic", "SIGBUS", "signal", "hunter2"} {
				if strings.Contains(stderr, bad) {
					t.Errorf("stderr holds %q: %q", bad, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing (no first-start secret)", stdout)
			}
			after := snapshot(t, dir)
			if len(after) != len(before) {
				t.Errorf("files after %v, before %v", after, before)
			}
			for name, sum := range before {
				if after[name] != sum {
					t.Errorf("%s changed or vanished", name)
				}
			}
		})
	}
}

// TestCheckBaseURL: --base-url is an http(s) origin; a trailing slash is
// dropped; a password in a refused URL is not repeated.
func TestCheckBaseURL(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "checks a URL")
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"https://auth.example.com", "https://auth.example.com"},
		{"https://auth.example.com/", "https://auth.example.com"},
		{"http://localhost:8080", "http://localhost:8080"},
		{"http://[::1]:8080", "http://[::1]:8080"},
		{"HTTPS://Auth.Example.com", "HTTPS://Auth.Example.com"},
	} {
		if got, err := checkBaseURL(tc.in); err != nil || got != tc.want {
			t.Errorf("%q: got %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"localhost:8080", "auth.example.com", "ftp://auth.example.com", "https://", "http:///x",
		"https://auth.example.com/login", "https://auth.example.com?x=1", "https://auth.example.com#top",
		"https://u:hunter2@auth.example.com", "http://auth.example.com:0", "http://auth.example.com:70000", "http://auth.example.com:http"} {
		_, err := checkBaseURL(bad)
		if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: err = %v, want a one-line refusal without the password", bad, err)
		}
	}
}

// boltFile is the bytes of a bbolt file: from (a data file's bytes) or
// a new file, changed by fill in one transaction.
func boltFile(t *testing.T, fill func(*bbolt.Tx) error, from ...[]byte) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file.db")
	for _, b := range from {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fill); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSecondStartWritesNothing: a start on a data file that needs no
// change leaves the file as it was (its bytes and modification time)
// while it serves, as it does the key and admin token files; the first
// start wrote them all (bbolt only: a data file's start).
func TestSecondStartWritesNothing(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	data := filepath.Join(t.TempDir(), "latchkey.db")
	first, out := startMain(t, Config{Data: data})
	if !strings.Contains(out.String(), "admin token (shown once)") {
		t.Fatalf("first start printed %q, want the admin token", out.String())
	}
	first.Close()
	files := []string{data, data + ".key", data + ".admin-token"}
	type state struct {
		sum   string
		mtime time.Time
	}
	look := func() map[string]state {
		s := map[string]state{}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			s[f] = state{hex.EncodeToString(sum[:]), fi.ModTime()}
		}
		return s
	}
	before := look()
	second, out := startMain(t, Config{Data: data})
	if out.Len() != 0 {
		t.Errorf("second start printed %q, want nothing", out.String())
	}
	after := look()
	for _, f := range files {
		if after[f] != before[f] {
			t.Errorf("%s changed by a start that needs no change: %v -> %v", filepath.Base(f), before[f], after[f])
		}
	}
	if st, body := (client{t, "http://" + second.Addr()}).do("GET", "/api/v1/ready", "", nil); st != 200 || body["status"] != "ready" {
		t.Fatalf("ready: %d %v", st, body)
	}
}

// TestOneLine: a failure of several lines (pgx's, one per address
// tried) is printed on one.
func TestOneLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"failed to connect to `user=u`:\n\t127.0.0.1:1: refused\n\t[::1]:1: refused", "failed to connect to `user=u`: 127.0.0.1:1: refused; [::1]:1: refused"},
		{"a\n\nb\n", "a; b"},
	} {
		if got := oneLine(errors.New(tc.in)); got != tc.want {
			t.Errorf("oneLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
