package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"latchkey/internal/autotls/acmetest"
	"latchkey/internal/testkit"
	"latchkey/store"
	"latchkey/store/storetest"
)

// tlsStore is the store of an HTTPS test, kept across restarts: a data
// file, or a database with the test master key and an outbox directory.
type tlsStore struct{ data, dsn, outbox string }

func newTLSStore(t *testing.T) tlsStore {
	dsn := storetest.New(t)
	if store.IsURL(dsn) {
		return tlsStore{dsn: dsn, outbox: filepath.Join(t.TempDir(), "outbox")}
	}
	return tlsStore{data: dsn}
}

// start runs a server on s with c (its store fields set here), the
// clock now (nil: time.Now) and its log to log (nil: discarded); it
// returns Run's error, and closes the server when t ends.
func (s tlsStore) start(t *testing.T, c Config, now func() time.Time, log io.Writer) (*Main, error) {
	t.Helper()
	m := NewMain()
	if err := m.ParseFlags(nil, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	c.Data, c.DatabaseURL, c.LogFormat, c.SMSProvider, c.MailFrom = s.data, s.dsn, "text", "none", "latchkey@localhost"
	if s.dsn != "" {
		c.MasterKey = testMasterKey
	}
	m.Config, m.Stdout, m.outbox, m.Logger = c, io.Discard, s.outbox, discardLogger()
	if now != nil {
		m.Now = now
	}
	if log != nil {
		m.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	err := m.Run(context.Background())
	t.Cleanup(func() { m.Close() })
	return m, err
}

// loopback returns 127.0.0.1:port.
func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// servedCert shakes hands with the server at addr for name, trusting
// roots (nil: trusting anything), and returns the leaf it served.
func servedCert(t *testing.T, addr, name string, roots *x509.CertPool) (*x509.Certificate, error) {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{ServerName: name, RootCAs: roots, InsecureSkipVerify: roots == nil})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

// httpsClient returns a client that reaches addr whatever the URL's host
// says, trusting roots, and does not follow redirects.
func httpsClient(addr string, roots *x509.CertPool) *http.Client {
	return &http.Client{Timeout: 10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// TestHTTPSFromACME: with --tls-domain, the start orders the certificate
// from a real ACME CA (Pebble) through TLS-ALPN-01 on --addr and serves
// HTTPS with it (the CA validates HTTP-01 on a port where nothing
// listens, so only TLS-ALPN-01 can succeed); the base URL is the domain's https:// origin; the HTTP
// listener redirects to it. The certificate and its key are in the store,
// sealed; a restart with the CA down serves the same certificate from the
// store without a request to the CA.
func TestHTTPSFromACME(t *testing.T) {
	const domain = "auth.latchkey.test"
	ports := acmetest.FreePorts(t, 3) // HTTPS, HTTP, and a port where nothing listens
	httpsAddr, httpAddr := loopback(ports[0]), loopback(ports[1])
	ca := acmetest.Start(t, acmetest.Options{TLSPort: ports[0], HTTPPort: ports[2]})
	st := newTLSStore(t)
	c := Config{Addr: httpsAddr, HTTPAddr: httpAddr, TLSDomain: "Auth.Latchkey.Test.", ACMEDirectory: ca.Directory,
		ACMECAFile: ca.CAFile, ACMEEmail: "ops@latchkey.test"}
	var log testkit.Buffer
	m, err := st.start(t, c, nil, &log)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "tls: certificates ready") {
		t.Errorf("no ready line in the log:\n%s", log.String())
	}
	base := "https://" + domain + ":" + strconv.Itoa(ports[0])
	if got := m.Service.BaseURL(); got != base {
		t.Errorf("base URL %q, want %q", got, base)
	}
	leaf, err := servedCert(t, httpsAddr, domain, ca.Roots)
	if err != nil {
		t.Fatalf("handshake trusting only the CA's root: %v", err)
	}
	if len(leaf.DNSNames) != 1 || leaf.DNSNames[0] != domain {
		t.Errorf("certificate names %v, want [%s]", leaf.DNSNames, domain)
	}
	if _, ok := leaf.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("certificate key %T, want ECDSA", leaf.PublicKey)
	}
	// A client that names no server gets the first domain's certificate.
	if anon, err := servedCert(t, httpsAddr, "", nil); err != nil || anon.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
		t.Errorf("a handshake without a name: %v, %v", anon, err)
	}
	hc := httpsClient(httpsAddr, ca.Roots)
	resp, err := hc.Get(base + "/api/v1/health")
	if err != nil || resp.StatusCode != 200 || resp.TLS == nil {
		t.Fatalf("GET /health over HTTPS: %v %v", resp, err)
	}
	resp.Body.Close()

	// Plain HTTP: a redirect to the HTTPS origin, the path and query
	// kept; a POST is refused.
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", "http://"+httpAddr+"/api/v1/health?x=1", nil)
	req.Host = domain
	resp, err = plain.Do(req)
	if err != nil || resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != base+"/api/v1/health?x=1" {
		t.Errorf("GET over HTTP: %v %v, Location %q", resp, err, resp.Header.Get("Location"))
	}
	resp, err = plain.Post("http://"+httpAddr+"/api/v1/otp/send", "application/json", strings.NewReader("{}"))
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("POST over HTTP: %v %v", resp, err)
	}

	// The store holds the certificate and its key, sealed.
	if err := m.DB.View(ctx, func(tx store.Tx) error {
		e, err := tx.TLSCacheEntry(domain)
		if err != nil {
			return err
		}
		if strings.Contains(string(e.Data), "PRIVATE KEY") || strings.Contains(string(e.Data), "CERTIFICATE") {
			return errors.New("the cached certificate and key are stored in the clear")
		}
		_, err = tx.TLSCacheEntry("acme_account+key")
		return err
	}); err != nil {
		t.Fatal(err)
	}

	// A restart with the CA down: the certificate comes from the store.
	m.Close()
	ca.Close()
	asked := ca.Requests.Load()
	log.Reset()
	m2, err := st.start(t, c, nil, &log)
	if err != nil {
		t.Fatalf("restart with the CA down: %v\n%s", err, log.String())
	}
	again, err := servedCert(t, httpsAddr, domain, ca.Roots)
	if err != nil || again.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
		t.Fatalf("after the restart: %v, %v; want the certificate %x", again, err, leaf.SerialNumber)
	}
	if n := ca.Requests.Load(); n != asked {
		t.Errorf("the restart asked the CA %d times", n-asked)
	}
	if strings.Contains(log.String(), "ACME CA failed") {
		t.Errorf("the restart logged a failure of the CA:\n%s", log.String())
	}
	if got := m2.Service.BaseURL(); got != base {
		t.Errorf("base URL after the restart %q", got)
	}
}

// TestHTTPSFromACMEHTTP01: when the CA cannot reach the HTTPS listener
// (TLS-ALPN-01 fails), the certificate is obtained through HTTP-01 on the
// HTTP listener.
func TestHTTPSFromACMEHTTP01(t *testing.T) {
	const domain = "http01.latchkey.test"
	ports := acmetest.FreePorts(t, 3) // HTTPS, HTTP, and a port where nothing listens
	ca := acmetest.Start(t, acmetest.Options{TLSPort: ports[2], HTTPPort: ports[1]})
	var log testkit.Buffer
	_, err := newTLSStore(t).start(t, Config{Addr: loopback(ports[0]), HTTPAddr: loopback(ports[1]), TLSDomain: domain,
		ACMEDirectory: ca.Directory, ACMECAFile: ca.CAFile}, nil, &log)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, log.String())
	}
	if !strings.Contains(ca.Log(), "Attempting to validate w/ HTTP: http://"+domain) {
		t.Errorf("Pebble did not validate over HTTP:\n%s", ca.Log())
	}
	if _, err := servedCert(t, loopback(ports[0]), domain, ca.Roots); err != nil {
		t.Fatalf("handshake: %v", err)
	}
}

// TestHTTPSRenewal: a certificate is renewed before it expires (Pebble
// issues 5-second certificates here: renewed at two thirds of their
// life), and the renewed one is served and stored. When the CA is down at
// the next renewal, the server goes on serving the certificate it has
// and logs the failure once; the once-a-minute check names the domain
// due for renewal with the CA's failure.
func TestHTTPSRenewal(t *testing.T) {
	const domain = "renew.latchkey.test"
	ports := acmetest.FreePorts(t, 1)
	ca := acmetest.Start(t, acmetest.Options{TLSPort: ports[0], HTTPPort: 1, Validity: 5 * time.Second})
	clock := testkit.NewClock(time.Now())
	var log testkit.Buffer
	m, err := newTLSStore(t).start(t, Config{Addr: loopback(ports[0]), HTTPAddr: "off", TLSDomain: domain,
		ACMEDirectory: ca.Directory, ACMECAFile: ca.CAFile}, clock.Now, &log)
	if err != nil {
		t.Fatalf("start: %v\n%s", err, log.String())
	}
	if m.HTTPAddr() != "" {
		t.Errorf("--http-addr off: an HTTP listener on %s", m.HTTPAddr())
	}
	first, err := servedCert(t, loopback(ports[0]), domain, ca.Roots)
	if err != nil {
		t.Fatal(err)
	}
	var renewed *x509.Certificate
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if c, err := servedCert(t, loopback(ports[0]), domain, ca.Roots); err == nil && c.SerialNumber.Cmp(first.SerialNumber) != 0 {
			renewed = c
			break
		}
	}
	if renewed == nil {
		t.Fatalf("the certificate (until %s) was not renewed\n%s", first.NotAfter, log.String())
	}
	if renewed.NotBefore.After(first.NotAfter) {
		t.Errorf("renewed at %s, after the first certificate expired (%s)", renewed.NotBefore, first.NotAfter)
	}
	if leaf, err := m.acme.CachedLeaf(ctx, domain); err != nil || leaf.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Errorf("the store holds %v (%v), not a renewed certificate", leaf, err)
	}

	// The CA goes down: the next renewal fails; the server serves what it
	// has, and the failure is logged once (the clock stands still).
	ca.Close()
	held, err := servedCert(t, loopback(ports[0]), domain, nil)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !strings.Contains(log.String(), "ACME CA failed"); {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	if n := strings.Count(log.String(), "ACME CA failed"); n != 1 || !strings.Contains(log.String(), "connection refused") {
		t.Fatalf("%d lines about the CA's failure, want 1 naming the refused connection:\n%s", n, log.String())
	}
	if c, err := servedCert(t, loopback(ports[0]), domain, nil); err != nil || c.SerialNumber.Cmp(held.SerialNumber) < 0 {
		t.Errorf("after the failed renewal: %v, %v", c, err)
	}
	stored, err := m.acme.CachedLeaf(ctx, domain)
	if err != nil {
		t.Fatal(err)
	}
	clock.Set(stored.NotAfter.Add(-100 * time.Millisecond))
	log.Reset()
	if err := m.acme.Check(ctx); err == nil || !strings.Contains(log.String(), "due for renewal") ||
		!strings.Contains(log.String(), domain) || !strings.Contains(log.String(), "connection refused") {
		t.Errorf("Check: %v\n%s", err, log.String())
	}
}

// TestHTTPSStartWithoutCertificate: a --tls-domain start that has no
// certificate in the store and gets none from the CA fails in one line
// naming the domain and the cause: the CA unreachable, or the challenges
// refused (nothing answers them where the CA looks).
func TestHTTPSStartWithoutCertificate(t *testing.T) {
	ports := acmetest.FreePorts(t, 4)
	ca := acmetest.Start(t, acmetest.Options{TLSPort: ports[2], HTTPPort: ports[3]})
	for _, tc := range []struct {
		name, directory string
		want            []string
	}{
		{"CA unreachable", "https://" + loopback(ports[3]) + "/dir", []string{"connection refused"}},
		// The CA's last failure is whichever challenge it tried last:
		// nothing answers either.
		{"challenges refused", ca.Directory, []string{"the CA could not validate down.latchkey.test", "http-01|tls-alpn-01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := newTLSStore(t).start(t, Config{Addr: loopback(ports[0]), HTTPAddr: loopback(ports[1]),
				TLSDomain: "down.latchkey.test", ACMEDirectory: tc.directory, ACMECAFile: ca.CAFile}, nil, nil)
			if err == nil {
				t.Fatal("the start succeeded")
			}
			m.Close()
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "--tls-domain down.latchkey.test: no certificate") {
				t.Errorf("error %q: want one line naming the domain", msg)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(strings.Split(w, "|"), func(alt string) bool { return strings.Contains(msg, alt) }) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
}

// certFiles writes a self-signed certificate for names, valid from now
// for a day, and its key to dir; it returns the files and the
// certificate.
func certFiles(t *testing.T, dir string, names ...string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]},
		DNSNames: names, NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour)},
		&x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]}}, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	// Written beside and renamed over, as certificate tools do.
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(file+".new", pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".new", file); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile, cert
}

// TestHTTPSCertificateFiles: --tls-cert and --tls-key serve HTTPS with
// the base URL on the certificate's name; new files are served within
// a few seconds (checked at a handshake at most every CheckEvery), and a
// pair that does not load leaves the served certificate in place, logged.
func TestHTTPSCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, first := certFiles(t, dir, "files.latchkey.test", "*.latchkey.test")
	clock := testkit.NewClock(time.Now())
	var log testkit.Buffer
	m, err := newTLSStore(t).start(t, Config{Addr: "127.0.0.1:0", TLSCert: certFile, TLSKey: keyFile}, clock.Now, &log)
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://files.latchkey.test:" + strconv.Itoa(portOfAddr(m.Addr())); m.Service.BaseURL() != want {
		t.Errorf("base URL %q, want %q", m.Service.BaseURL(), want)
	}
	if m.HTTPAddr() != "" {
		t.Errorf("an HTTP listener without --http-addr: %s", m.HTTPAddr())
	}
	serial := func() *big.Int {
		t.Helper()
		c, err := servedCert(t, m.Addr(), "files.latchkey.test", nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.SerialNumber
	}
	if serial().Cmp(first.SerialNumber) != 0 {
		t.Fatal("not the certificate of the files")
	}
	_, _, second := certFiles(t, dir, "files.latchkey.test")
	clock.Advance(time.Second)
	if serial().Cmp(first.SerialNumber) != 0 {
		t.Error("the files were read again within CheckEvery")
	}
	clock.Advance(2 * time.Second)
	if serial().Cmp(second.SerialNumber) != 0 {
		t.Error("the new files are not served")
	}
	if !strings.Contains(log.String(), "tls: certificate files reloaded") {
		t.Errorf("no reload line:\n%s", log.String())
	}
	// A key of another certificate: the served one stays, logged once.
	other := t.TempDir()
	_, otherKey, _ := certFiles(t, other, "other.latchkey.test")
	b, _ := os.ReadFile(otherKey)
	if err := os.WriteFile(keyFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		clock.Advance(3 * time.Second)
		if serial().Cmp(second.SerialNumber) != 0 {
			t.Error("a mismatched pair replaced the served certificate")
		}
	}
	if n := strings.Count(log.String(), "do not load"); n != 1 {
		t.Errorf("%d lines about the pair that does not load, want 1:\n%s", n, log.String())
	}
}

// portOfAddr returns the port of host:port.
func portOfAddr(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// TestHTTPSSettingsRefused: HTTPS settings that cannot work are refused
// at start in one line naming the setting, before the data file is
// created.
func TestHTTPSSettingsRefused(t *testing.T) {
	testkit.EngineFree(t, "refuses HTTPS settings before any store is opened")
	dir := t.TempDir()
	certFile, keyFile, _ := certFiles(t, dir, "files.latchkey.test")
	_, otherKey, _ := certFiles(t, t.TempDir(), "other.latchkey.test")
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("not a certificate\n"), 0o600)
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"both sources", Config{TLSDomain: "a.example.com", TLSCert: certFile, TLSKey: keyFile}, "two sources of certificates"},
		{"cert without key", Config{TLSCert: certFile}, "--tls-cert and --tls-key go together"},
		{"missing cert file", Config{TLSCert: filepath.Join(dir, "nope.pem"), TLSKey: keyFile}, "--tls-cert: stat " + filepath.Join(dir, "nope.pem") + ": no such file"},
		{"key of another certificate", Config{TLSCert: certFile, TLSKey: otherKey}, "do not make a certificate: tls: private key does not match public key"},
		{"not PEM", Config{TLSCert: garbage, TLSKey: keyFile}, "do not make a certificate: tls: failed to find any PEM data in certificate input"},
		{"acme setting without a domain", Config{ACMEEmail: "ops@example.com"}, "--acme-email is set but --tls-domain is empty"},
		{"acme setting with files", Config{TLSCert: certFile, TLSKey: keyFile, ACMEDirectory: "https://ca.example.com/dir"}, "does not apply to --tls-cert"},
		{"http-addr without HTTPS", Config{HTTPAddr: ":8081"}, "--http-addr redirects to HTTPS"},
		{"wildcard", Config{TLSDomain: "*.example.com"}, "DNS-01"},
		{"address", Config{TLSDomain: "192.0.2.7"}, "an IP address"},
		{"port", Config{TLSDomain: "auth.example.com:8443"}, "without scheme, port or path"},
		{"one label", Config{TLSDomain: "localhost"}, "two labels or more"},
		{"bad label", Config{TLSDomain: "a.b_c.example.com"}, `label "b_c"`},
		{"no domain", Config{TLSDomain: " , "}, "names no domain"},
		{"plain directory", Config{TLSDomain: "a.example.com", ACMEDirectory: "http://ca.example.com/dir"}, "must be an https:// URL"},
		{"bad email", Config{TLSDomain: "a.example.com", ACMEEmail: "ops"}, "--acme-email \"ops\" is not an email address"},
		{"missing CA file", Config{TLSDomain: "a.example.com", ACMECAFile: filepath.Join(dir, "nope.pem")}, "--acme-ca-file: open"},
		{"CA file not PEM", Config{TLSDomain: "a.example.com", ACMECAFile: garbage}, "holds no PEM certificate"},
		{"http base URL", Config{TLSDomain: "a.example.com", BaseURL: "http://a.example.com"}, "is http:// but latchkey serves HTTPS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "latchkey.db")
			m := NewMain()
			m.Config, m.Logger, m.Stdout = tc.c, discardLogger(), io.Discard
			m.Config.Data = data
			if m.Config.Addr == "" {
				m.Config.Addr = "127.0.0.1:0"
			}
			err := m.Run(context.Background())
			m.Close()
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("Run: %v; want one line with %q", err, tc.want)
			}
			if _, err := os.Stat(data); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the data file was created: %v", err)
			}
		})
	}
}

// TestHTTPSDefaultAddr: with --tls-domain or --tls-cert and no --addr,
// the listen address is :443; LATCHKEY_ADDR or --addr still win.
func TestHTTPSDefaultAddr(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "parses flags")
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "127.0.0.1:8080"},
		{[]string{"--tls-domain", "auth.example.com"}, nil, ":443"},
		{nil, map[string]string{"LATCHKEY_TLS_CERT": "c.pem"}, ":443"},
		{[]string{"--tls-domain", "auth.example.com"}, map[string]string{"LATCHKEY_ADDR": ":8443"}, ":8443"},
		{[]string{"--tls-domain", "auth.example.com", "--addr", "127.0.0.1:9443"}, nil, "127.0.0.1:9443"},
	} {
		m := NewMain()
		if err := m.ParseFlags(tc.args, func(k string) string { return tc.env[k] }); err != nil {
			t.Fatal(err)
		}
		if m.Config.Addr != tc.want {
			t.Errorf("%v %v: addr %q, want %q", tc.args, tc.env, m.Config.Addr, tc.want)
		}
	}
}
