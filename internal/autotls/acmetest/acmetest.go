// Package acmetest starts a real ACME CA for tests: Pebble's own packages
// (its CA, validation authority and web front end) in this process,
// behind an httptest.Server over HTTPS, with a DNS server that answers
// 127.0.0.1 for every name, so the CA validates TLS-ALPN-01 and HTTP-01
// challenges against the server under test on loopback ports. Nothing is
// faked: the ACME exchange, the validations and the issued chains are
// Pebble's.
package acmetest

import (
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"
	"github.com/miekg/dns"
)

// Options configure a CA.
type Options struct {
	// HTTPPort and TLSPort are the loopback ports the CA validates
	// HTTP-01 and TLS-ALPN-01 challenges on (a port where nothing
	// listens makes that challenge fail).
	HTTPPort, TLSPort int
	// Validity is the issued certificates' lifetime, whole seconds
	// (0: Pebble's default, 90 days).
	Validity time.Duration
}

// CA is a running ACME CA.
type CA struct {
	// Directory is the ACME directory URL (https://127.0.0.1:port/dir).
	Directory string
	// CAFile is a PEM file of the certificate the directory is served
	// with, to trust it (--acme-ca-file).
	CAFile string
	// Roots holds the root of the certificates the CA issues.
	Roots *x509.CertPool
	// Requests counts the requests to the ACME API.
	Requests atomic.Int64

	srv  *httptest.Server
	dns  *dns.Server
	log  *lockedBuffer
	once sync.Once
}

// Start starts a CA; it is taken down when t ends. It sets Pebble's
// environment (no random sleep before a validation, no nonce rejected at
// random) for the test, so the test must not be parallel.
func Start(t testing.TB, o Options) *CA {
	t.Helper()
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	t.Setenv("PEBBLE_AUTHZREUSE", "0")
	c := &CA{log: &lockedBuffer{}}
	logger := log.New(c.log, "pebble ", log.Lmicroseconds)

	// DNS: every name is 127.0.0.1 (the VA asks over TCP).
	dl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.dns = &dns.Server{Listener: dl, Handler: dns.HandlerFunc(answerLoopback)}
	go c.dns.ActivateAndServe()

	store := db.NewMemoryStore()
	profiles := map[string]ca.Profile{"default": {Description: "the test's", ValidityPeriod: uint64(o.Validity / time.Second)}}
	authority := ca.New(logger, store, "", "ecdsa", 0, 1, profiles)
	validator := va.New(logger, o.HTTPPort, o.TLSPort, false, dl.Addr().String(), store)
	front := wfe.New(logger, store, validator, authority, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	api := front.Handler()
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.Requests.Add(1)
		api.ServeHTTP(w, r)
	}))
	c.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	c.srv.StartTLS()
	c.Directory = c.srv.URL + wfe.DirectoryPath

	c.CAFile = filepath.Join(t.TempDir(), "pebble-directory-ca.pem")
	if err := os.WriteFile(c.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Roots = x509.NewCertPool()
	c.Roots.AddCert(authority.GetRootCert(0).Cert)
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			t.Logf("Pebble's log:\n%s", c.log.String())
		}
	})
	return c
}

// Close takes the CA down: from then on its address refuses connections.
func (c *CA) Close() {
	c.once.Do(func() {
		c.srv.CloseClientConnections()
		c.srv.Close()
		c.dns.Shutdown()
	})
}

// Log returns what Pebble logged so far.
func (c *CA) Log() string { return c.log.String() }

// answerLoopback answers every A question with 127.0.0.1 and every
// other one with no record.
func answerLoopback(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	for _, q := range r.Question {
		if q.Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET},
				A: net.IPv4(127, 0, 0, 1)})
		}
	}
	w.WriteMsg(m)
}

// lockedBuffer is Pebble's log, written from its goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// FreePorts returns n loopback ports that were free a moment ago (for
// the CA's validation ports, which must be known before the server under
// test listens on them).
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	var out []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}
