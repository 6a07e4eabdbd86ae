package main

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log sink the server's goroutines write to while the
// test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var projectLine = regexp.MustCompile(`created project "default" \((\S+)\)`)

// TestOIDCProviderServed: the server as `latchkey serve` wires it serves
// the default project's provider (discovery with its issuer under the
// base URL, the JWKS), and what a library logs through slog's default
// logger (zitadel/oidc's op does) reaches the server's log. Not parallel:
// every start sets slog's default logger, which this test reads.
func TestOIDCProviderServed(t *testing.T) {
	var log lockedBuffer
	m, out := startMain(t, Config{}, &log)
	id := match(t, projectLine, out.String())
	c := client{t, "http://" + m.Addr()}
	st, doc := c.do("GET", "/oidc/"+id+"/.well-known/openid-configuration", "", nil)
	if iss := "http://" + m.Addr() + "/oidc/" + id; st != 200 || doc["issuer"] != iss || doc["jwks_uri"] != iss+"/keys" {
		t.Fatalf("discovery: %d %v", st, doc)
	}
	if st, keys := c.do("GET", "/oidc/"+id+"/keys", "", nil); st != 200 || len(keys["keys"].([]any)) != 2 {
		t.Fatalf("keys: %d %v", st, keys)
	}
	slog.Warn("request error", "oidc_error", "invalid_request")
	if got := log.String(); !strings.Contains(got, `level=WARN msg="request error" oidc_error=invalid_request`) {
		t.Fatalf("a line logged through slog's default logger is not in the server's log:\n%s", got)
	}
}
