package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	netmail "net/mail"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"latchkey/internal/autotls"
	"latchkey/internal/background"
)

// tlsSetup is the HTTPS configuration checkTLS derived.
type tlsSetup struct {
	// domains are --tls-domain's names (ACME), or nil.
	domains          []string
	directory, email string
	roots            *x509.CertPool // --acme-ca-file's CAs and the system's; nil: the system's
	// files is the certificate of --tls-cert and --tls-key, or nil.
	files *autotls.FileCert
	// httpAddr is the plain HTTP listener's address; empty: none.
	httpAddr string
}

// acmeObtainTimeout bounds how long a start waits for the certificates
// it has none of (Main.acmeObtain overrides it in tests).
const acmeObtainTimeout = 2 * time.Minute

// checkTLS checks the HTTPS settings; nil without HTTPS. It reads the
// certificate files and --acme-ca-file and touches nothing.
func (m *Main) checkTLS(baseURL string) (*tlsSetup, error) {
	c := m.Config
	acmeSet := func() string {
		for _, f := range []struct{ name, v string }{{"--acme-directory", c.ACMEDirectory}, {"--acme-email", c.ACMEEmail}, {"--acme-ca-file", c.ACMECAFile}} {
			if f.v != "" {
				return f.name
			}
		}
		return ""
	}()
	switch {
	case c.TLSDomain == "" && c.TLSCert == "" && c.TLSKey == "":
		if acmeSet != "" {
			return nil, fmt.Errorf("%s is set but --tls-domain is empty (it configures the certificates of --tls-domain)", acmeSet)
		}
		if c.HTTPAddr != "" {
			return nil, errors.New("--http-addr redirects to HTTPS: it needs --tls-domain or --tls-cert")
		}
		return nil, nil
	case c.TLSDomain != "" && (c.TLSCert != "" || c.TLSKey != ""):
		return nil, errors.New("--tls-domain and --tls-cert/--tls-key are two sources of certificates: set only one")
	}
	if strings.HasPrefix(baseURL, "http://") {
		return nil, fmt.Errorf("--base-url %s is http:// but latchkey serves HTTPS (--tls-domain or --tls-cert): give the https:// origin, or leave it out", baseURL)
	}
	out := &tlsSetup{httpAddr: c.HTTPAddr}
	if out.httpAddr == "off" {
		out.httpAddr = ""
	}
	if c.TLSDomain == "" {
		if acmeSet != "" {
			return nil, fmt.Errorf("%s configures the certificates of --tls-domain: it does not apply to --tls-cert", acmeSet)
		}
		if c.TLSCert == "" || c.TLSKey == "" {
			return nil, errors.New("--tls-cert and --tls-key go together: set both")
		}
		files, err := autotls.LoadFileCert(c.TLSCert, c.TLSKey, m.Now, m.Logger)
		if err != nil {
			return nil, err
		}
		out.files = files
		if leaf := files.Certificate().Leaf; m.Now().After(leaf.NotAfter) {
			m.Logger.Warn("tls: the certificate of --tls-cert has expired: clients will refuse it", "file", c.TLSCert, "not_after", leaf.NotAfter.UTC())
		}
		return out, nil
	}
	var err error
	if out.domains, err = parseDomains(c.TLSDomain); err != nil {
		return nil, err
	}
	if c.HTTPAddr == "" {
		out.httpAddr = ":80"
	}
	out.directory = c.ACMEDirectory
	if out.directory != "" {
		u, err := url.Parse(out.directory)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("--acme-directory %q must be an https:// URL, e.g. %s", out.directory, autotls.LetsEncrypt)
		}
	}
	if out.email = c.ACMEEmail; out.email != "" {
		if a, err := netmail.ParseAddress(out.email); err != nil || a.Name != "" {
			return nil, fmt.Errorf("--acme-email %q is not an email address (want name@example.com)", out.email)
		}
	}
	if c.ACMECAFile != "" {
		pem, err := os.ReadFile(c.ACMECAFile)
		if err != nil {
			return nil, fmt.Errorf("--acme-ca-file: %w", err)
		}
		if out.roots, err = x509.SystemCertPool(); err != nil || out.roots == nil {
			out.roots = x509.NewCertPool()
		}
		if !out.roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--acme-ca-file %s holds no PEM certificate", c.ACMECAFile)
		}
	}
	return out, nil
}

// parseDomains reads --tls-domain: comma-separated DNS names, lower
// case, each of two labels or more; no wildcard (ACME issues those only
// through DNS-01), address, port or URL.
func parseDomains(raw string) ([]string, error) {
	var out []string
	for _, d := range strings.Split(raw, ",") {
		d = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		if d == "" || slices.Contains(out, d) {
			continue
		}
		if err := checkDomain(d); err != nil {
			return nil, fmt.Errorf("--tls-domain %q: %v", d, err)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, errors.New("--tls-domain names no domain")
	}
	return out, nil
}

// checkDomain says why d cannot have a certificate from --tls-domain.
func checkDomain(d string) error {
	switch {
	case strings.Contains(d, "*"):
		return errors.New("wildcard certificates need the DNS-01 challenge, which latchkey does not answer: name each domain")
	case strings.ContainsAny(d, ":/"):
		return errors.New("a domain name only, without scheme, port or path (--addr sets the port)")
	case net.ParseIP(d) != nil:
		return errors.New("an IP address: ACME certificates here are for domain names")
	case !strings.Contains(d, "."):
		return errors.New("a domain name of two labels or more (auth.example.com)")
	case len(d) > 253:
		return errors.New("longer than 253 characters")
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return fmt.Errorf("label %q: labels are 1 to 63 letters, digits or hyphens, not starting or ending with one", label)
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return fmt.Errorf("label %q: only letters, digits and hyphens (an internationalized name in its xn-- form)", label)
			}
		}
	}
	return nil
}

// httpsBaseURL is the base URL without --base-url when latchkey serves
// HTTPS: https:// and the first domain (or, with certificate files, the
// certificate's first name that is not a wildcard; else the listen
// address), with the port unless it is 443.
func httpsBaseURL(t *tlsSetup, addr net.Addr) string {
	host, port, _ := net.SplitHostPort(addr.String())
	switch {
	case len(t.domains) > 0:
		host = t.domains[0]
	case t.files != nil:
		for _, n := range t.files.Certificate().Leaf.DNSNames {
			if !strings.Contains(n, "*") {
				host = n
				break
			}
		}
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	if port == "443" {
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		return "https://" + host
	}
	return "https://" + net.JoinHostPort(host, port)
}

// startTLS gives the HTTP server its certificates: the ACME manager on
// the store (m.acme), or the certificate files. It returns the
// listener's TLS configuration.
func (m *Main) startTLS(t *tlsSetup, cache *autotls.Cache) *tls.Config {
	if t.files != nil {
		return &tls.Config{GetCertificate: t.files.GetCertificate, MinVersion: tls.VersionTLS12}
	}
	m.acme = autotls.NewACME(autotls.ACMEConfig{Domains: t.domains, Directory: t.directory, Email: t.email, RootCAs: t.roots,
		Cache: cache, Logger: m.Logger, Now: m.Now, UserAgent: "latchkey/" + Version()})
	// Once a minute: a certificate past its renewal time is logged with
	// the CA's last failure (Check logs itself).
	m.tasks = append(m.tasks, &background.Task{Name: "tls", Interval: time.Minute, Logger: m.Logger,
		Quiet: func(error) bool { return true }, Run: m.acme.Check})
	return m.acme.TLSConfig()
}

// serveHTTPRedirect serves the plain HTTP listener: the ACME HTTP-01
// challenges, and a redirect to HTTPS for everything else.
func (m *Main) serveHTTPRedirect(baseURL string) {
	var h http.Handler = redirectToHTTPS(baseURL, m.acme)
	if m.acme != nil {
		h = m.acme.HTTPHandler(h)
	}
	m.redirectHTTP = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelDebug),
	}
	ln := m.httpListener
	go func() {
		if err := m.redirectHTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("http redirect server", "err", err)
		}
	}()
	m.Logger.Info("http listening: ACME challenges and a redirect to HTTPS", "addr", ln.Addr().String())
}

// redirectToHTTPS answers a GET or HEAD with a permanent redirect to
// the same path on HTTPS: on the host asked for when it is one of the
// domains (on the base URL's port), else on the base URL. Other methods
// get 400: their body already crossed the network in the clear.
func redirectToHTTPS(baseURL string, a *autotls.ACME) http.Handler {
	base, _ := url.Parse(baseURL)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "Use HTTPS: "+baseURL, http.StatusBadRequest)
			return
		}
		target := baseURL
		if a != nil {
			host := strings.ToLower(r.Host)
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if slices.Contains(a.Domains(), host) && host != base.Hostname() {
				target = "https://" + host
				if p := base.Port(); p != "" {
					target += ":" + p
				}
			}
		}
		http.Redirect(w, r, target+r.URL.RequestURI(), http.StatusMovedPermanently)
	})
}

// obtainCertificates makes sure each --tls-domain has a certificate
// before Run returns: from the store, or ordered now (the listeners
// serve the challenges). A start without one fails with the cause.
func (m *Main) obtainCertificates() error {
	if m.acme == nil {
		return nil
	}
	timeout := acmeObtainTimeout
	if m.acmeObtain > 0 {
		timeout = m.acmeObtain
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	if err := m.acme.Obtain(ctx); err != nil {
		return err
	}
	m.Logger.Info("tls: certificates ready", "domains", strings.Join(m.acme.Domains(), ","), "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// HTTPAddr returns the address of the plain HTTP listener (--http-addr),
// or "" when there is none.
func (m *Main) HTTPAddr() string {
	if m.httpListener == nil {
		return ""
	}
	return m.httpListener.Addr().String()
}

// serverErrorLog is the HTTPS server's error log: its lines at warn,
// except failed TLS handshakes (scanners and clients that refuse the
// certificate make many), at debug; a missing certificate is logged by
// the ACME manager, once a minute.
func serverErrorLog(l *slog.Logger) *log.Logger {
	return log.New(serverLogWriter{l}, "", 0)
}

// serverLogWriter sends each line of net/http's error log to slog.
type serverLogWriter struct{ l *slog.Logger }

// Write logs one line (io.Writer).
func (w serverLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		level = slog.LevelDebug
	}
	w.l.Log(context.Background(), level, msg)
	return len(p), nil
}
