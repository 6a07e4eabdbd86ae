package cli_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"latchkey/internal/cli"
)

// TestServerAddress: without --server or LATCHKEY_SERVER the CLI calls
// the address the server wrote beside the data file (<data>.addr, the
// data file named by --data or LATCHKEY_DATA), and without that file
// http://127.0.0.1:8080; --server beats LATCHKEY_SERVER, which beats the
// file. A file that holds no URL is a usage error naming it, and a
// server gone from the address in it is an error naming the file.
func TestServerAddress(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, testAdminToken)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	data, stale := filepath.Join(dir, "latchkey.db"), filepath.Join(dir, "stale.db")
	for file, url := range map[string]string{cli.AddrFile(data): ts.URL + "\n", cli.AddrFile(stale): gone + "\n"} {
		if err := os.WriteFile(file, []byte(url), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if cli.AddrFile(data) != data+".addr" {
		t.Fatalf("AddrFile(%q) = %q", data, cli.AddrFile(data))
	}
	token := map[string]string{"LATCHKEY_ADMIN_TOKEN": testAdminToken}
	with := func(env map[string]string) map[string]string {
		out := map[string]string{"LATCHKEY_ADMIN_TOKEN": testAdminToken}
		for k, v := range env {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"the file beside LATCHKEY_DATA", with(map[string]string{"LATCHKEY_DATA": data}), nil},
		{"the file beside --data", token, []string{"--data", data}},
		{"LATCHKEY_SERVER beats the file", with(map[string]string{"LATCHKEY_DATA": stale, "LATCHKEY_SERVER": ts.URL}), nil},
		{"--server beats LATCHKEY_SERVER and the file", with(map[string]string{"LATCHKEY_DATA": stale, "LATCHKEY_SERVER": gone}), []string{"--server", ts.URL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, tc.env, append([]string{"project", "list"}, tc.args...)...)
			if r.Code != 0 || !strings.Contains(r.Stdout, "default") {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}

	wantFail(t, run(t, with(map[string]string{"LATCHKEY_DATA": stale}), "project", "list"), 1,
		"cannot reach "+gone+" (the address in "+cli.AddrFile(stale)+"; is the server running?)")
	bad := filepath.Join(dir, "bad.db")
	os.WriteFile(cli.AddrFile(bad), []byte("ftp://127.0.0.1:21\n"), 0o600)
	wantFail(t, run(t, with(map[string]string{"LATCHKEY_DATA": bad}), "project", "list"), 2,
		"the server address in "+cli.AddrFile(bad)+" is not an http:// or https:// URL", "pass --server")
	wantFail(t, run(t, with(map[string]string{"LATCHKEY_SERVER": "ftp://x.example"}), "project", "list"), 2,
		"LATCHKEY_SERVER must be an http:// or https:// URL")
	// A server over HTTPS whose certificate this machine does not trust
	// (self-signed): the line says what to set, not "cannot reach".
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	wantFail(t, run(t, with(map[string]string{"LATCHKEY_SERVER": tlsSrv.URL}), "project", "list"), 1,
		tlsSrv.URL+": the server's certificate is signed by an authority this machine does not trust: set SSL_CERT_FILE")

	// No flag, no variable, no file: the default address (asked of a
	// transport that answers nothing, so no real server on the port is
	// called).
	var asked string
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		asked = r.URL.Scheme + "://" + r.URL.Host
		return nil, errors.New("not sent")
	})}
	env := with(map[string]string{"LATCHKEY_DATA": filepath.Join(dir, "none.db")})
	var stdout, stderr bytes.Buffer
	code := cli.Run(context.Background(), []string{"project", "list"}, cli.Env{Getenv: func(k string) string { return env[k] }, HTTPClient: hc}, &stdout, &stderr)
	if code != 1 || asked != "http://127.0.0.1:8080" || strings.Contains(stderr.String(), "the address in") {
		t.Fatalf("without an address: exit %d, asked %q, stderr %q; want http://127.0.0.1:8080", code, asked, stderr.String())
	}
}
