package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latchkey/internal/cli"
	"latchkey/internal/testkit"
	"latchkey/store/storetest"
)

// TestCLIFindsServer: `latchkey serve` on a port of its own (127.0.0.1:0)
// writes its address beside the data file (mode 0600), and a CLI command
// on the same machine, run with no --server nor LATCHKEY_SERVER, reaches
// it through that file; a clean stop removes the file.
//
// bbolt only, whatever LATCHKEY_TEST_STORE says: the file goes beside
// the data file.
func TestCLIFindsServer(t *testing.T) {
	t.Parallel()
	storetest.BoltOnly(t)
	data := filepath.Join(t.TempDir(), "latchkey.db")
	m, _ := startMain(t, Config{Data: data})
	file := cli.AddrFile(data)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "http://" + m.Addr() + "\n"; string(raw) != want {
		t.Fatalf("%s holds %q, want %q", file, raw, want)
	}
	if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %v, want 0600", file, fi.Mode().Perm())
	}
	// The real binary, as an operator runs it: the data file names both
	// the admin token file and the address file.
	code, stdout, stderr, _ := child(t, []string{"LATCHKEY_DATA=" + data, "LATCHKEY_SERVER=", "LATCHKEY_ADMIN_TOKEN="}, "project list")
	if code != 0 || !strings.Contains(stdout, "default") {
		t.Fatalf("latchkey project list without --server: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("after a clean stop %s: %v, want it removed", file, err)
	}
}

// TestAddrFileLoopback: a server listening on every address writes the
// loopback address the CLI reaches it on.
func TestAddrFileLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ip   net.IP
		want string
	}{
		{net.IPv4zero, "http://127.0.0.1:8123\n"},
		{net.IPv6unspecified, "http://127.0.0.1:8123\n"},
		{net.IPv4(127, 0, 0, 1), "http://127.0.0.1:8123\n"},
		{net.IPv6loopback, "http://[::1]:8123\n"},
		{net.IPv4(192, 0, 2, 7), "http://192.0.2.7:8123\n"},
	} {
		m := NewMain()
		m.Logger, m.Config.Data = discardLogger(), filepath.Join(t.TempDir(), "latchkey.db")
		m.writeAddrFile(&net.TCPAddr{IP: tc.ip, Port: 8123})
		if got, _ := os.ReadFile(cli.AddrFile(m.Config.Data)); string(got) != tc.want {
			t.Errorf("listening on %v: the file holds %q, want %q", tc.ip, got, tc.want)
		}
	}
}

// TestFlagMessagesDoubleDash: the subcommands main parses itself (serve,
// compact, migrate, copy) word package flag's errors with two dashes,
// as the admin subcommands do.
func TestFlagMessagesDoubleDash(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "refuses flags before any store is opened")
	for _, tc := range []struct{ args, want string }{
		{"serve --nope", "latchkey serve: unknown flag --nope\n"},
		{"serve --addr", "latchkey serve: --addr needs a value\n"},
		{"serve --webhook-allow-private=sometimes", `latchkey serve: invalid value "sometimes" for --webhook-allow-private: "sometimes" is not a boolean`},
		{"compact -nope", "latchkey compact: unknown flag --nope\n"},
		{"migrate --database-url", "latchkey migrate: --database-url needs a value\n"},
		{"copy --from", "latchkey copy: --from needs a value\n"},
		{"key list --bogus", "latchkey key list: unknown flag --bogus\n"},
	} {
		code, _, stderr, _ := child(t, []string{"LATCHKEY_DATA=", "LATCHKEY_DATABASE_URL="}, tc.args)
		if code != 2 || !strings.HasPrefix(stderr, tc.want) {
			t.Errorf("latchkey %s: exit %d, stderr %q; want 2 starting %q", tc.args, code, stderr, tc.want)
		}
	}
}
