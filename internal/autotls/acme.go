package autotls

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// LetsEncrypt is the ACME directory used when none is configured.
const LetsEncrypt = autocert.DefaultACMEDirectory

// ACMEConfig configures the certificates of an ACME CA.
type ACMEConfig struct {
	// Domains are the names served (lower case, each with a dot); the
	// first is the one served to a client that names none.
	Domains []string
	// Directory is the CA's ACME directory URL; empty: LetsEncrypt.
	Directory string
	// Email is the contact address of the account; may be empty.
	Email string
	// RootCAs are trusted for the directory's HTTPS besides nothing
	// else; nil: the system's.
	RootCAs *x509.CertPool
	// Cache keeps the certificates (Cache in the store).
	Cache autocert.Cache
	// Logger receives the failures, each kind at most once a minute.
	Logger *slog.Logger
	// Now is the clock of the once-a-minute logs and of Check (nil:
	// time.Now).
	Now func() time.Time
	// UserAgent names this program to the CA.
	UserAgent string
}

// ACME serves certificates from an ACME CA through autocert: a
// certificate is read from the cache, or ordered on the first handshake
// that names its domain (Obtain orders them at start), and renewed in the
// background at two thirds of its lifetime (or 30 days before it
// expires, when that is earlier); a renewal that fails is tried again
// within the hour and the certificate served stays in place until it
// expires. The challenges are TLS-ALPN-01 on the HTTPS listener and
// HTTP-01 on the HTTP one (HTTPHandler).
type ACME struct {
	cfg ACMEConfig
	m   *autocert.Manager
	// caFailed logs the CA's refusals and unreachability; handshake the
	// handshakes that found no certificate.
	caFailed, handshake *quietLog
	// lastCA is the last failure of a request to the CA (for Check's
	// line), nil after a success.
	lastCA errHolder
}

// NewACME returns the ACME certificates of cfg.
func NewACME(cfg ACMEConfig) *ACME {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Directory == "" {
		cfg.Directory = LetsEncrypt
	}
	a := &ACME{cfg: cfg}
	a.caFailed = &quietLog{log: cfg.Logger, now: cfg.Now, msg: "tls: a request to the ACME CA failed; certificates in hand are served and the request is tried again"}
	a.handshake = &quietLog{log: cfg.Logger, now: cfg.Now, msg: "tls: no certificate for a handshake"}
	base := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.RootCAs != nil {
		base.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	}
	a.m = &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		Cache:      cfg.Cache,
		HostPolicy: autocert.HostWhitelist(cfg.Domains...),
		Email:      cfg.Email,
		Client: &acme.Client{DirectoryURL: cfg.Directory, UserAgent: cfg.UserAgent,
			HTTPClient: &http.Client{Transport: &watchedTransport{base: base, a: a}, Timeout: time.Minute}},
	}
	return a
}

// Domains returns the names served.
func (a *ACME) Domains() []string { return a.cfg.Domains }

// TLSConfig returns the HTTPS listener's configuration: certificates
// from GetCertificate, HTTP/2 and HTTP/1.1, and the TLS-ALPN-01
// challenge's protocol.
func (a *ACME) TLSConfig() *tls.Config {
	return &tls.Config{GetCertificate: a.GetCertificate, NextProtos: []string{"h2", "http/1.1", acme.ALPNProto},
		MinVersion: tls.VersionTLS12}
}

// GetCertificate returns the certificate of the name the client asks
// for (tls.Config's GetCertificate), or the first domain's when it names
// none (a client that connects by address: its check of the name fails,
// but an operator's curl -k works). A name that is not served is refused
// quietly; other failures are logged at most once a minute.
func (a *ACME) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	if hello.ServerName == "" {
		h := *hello
		h.ServerName = a.cfg.Domains[0]
		hello = &h
	}
	cert, err := a.m.GetCertificate(hello)
	if err != nil && a.serves(hello.ServerName) && !isChallenge(hello) {
		a.handshake.warn("server_name", hello.ServerName, "err", oneLine(err))
	}
	return cert, err
}

// serves reports whether name is one of the domains.
func (a *ACME) serves(name string) bool {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for _, d := range a.cfg.Domains {
		if d == name {
			return true
		}
	}
	return false
}

// isChallenge reports whether hello is a CA's TLS-ALPN-01 validation.
func isChallenge(hello *tls.ClientHelloInfo) bool {
	return len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acme.ALPNProto
}

// HTTPHandler answers the HTTP-01 challenges under
// /.well-known/acme-challenge/ and hands every other request to
// fallback (the redirect to HTTPS). The Host's port is dropped before
// the domain is checked (a CA on a test port sends one).
func (a *ACME) HTTPHandler(fallback http.Handler) http.Handler {
	h := a.m.HTTPHandler(fallback)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, _, err := net.SplitHostPort(r.Host); err == nil && strings.HasPrefix(r.URL.Path, "/.well-known/acme-challenge/") {
			r2 := *r
			r2.Host = host
			r = &r2
		}
		h.ServeHTTP(w, r)
	})
}

// Obtain makes sure every domain has a certificate: read from the cache,
// or ordered from the CA now (the listeners must be serving, for the
// challenges). It returns, in one line, the first domain that has none
// by the end of ctx and why.
func (a *ACME) Obtain(ctx context.Context) error {
	for _, d := range a.cfg.Domains {
		done := make(chan error, 1)
		go func() {
			// A client that offers ECDSA, as browsers do: the certificate
			// is ECDSA P-256 (an RSA one is ordered for a client that
			// needs it, at its first handshake).
			_, err := a.m.GetCertificate(&tls.ClientHelloInfo{ServerName: d,
				SignatureSchemes: []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256}, SupportedCurves: []tls.CurveID{tls.CurveP256},
				CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}})
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		if last := a.lastCA.get(); err != nil && last != nil && !strings.Contains(err.Error(), last.Error()) {
			err = fmt.Errorf("%w; the CA's last failure: %v", err, last)
		}
		if err != nil {
			return fmt.Errorf("--tls-domain %s: no certificate in the store and none from the CA at %s: %s", d, a.cfg.Directory, oneLine(err))
		}
	}
	return nil
}

// Check logs, at most once a minute (it is run every minute), each
// domain whose certificate is past its renewal time and was not renewed,
// with the CA's last failure: the certificate is still served until it
// expires. It reports what it found, nil when all is well.
func (a *ACME) Check(ctx context.Context) error {
	now := a.cfg.Now()
	var errs []error
	for _, d := range a.cfg.Domains {
		leaf, err := a.CachedLeaf(ctx, d)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", d, err))
			continue
		}
		life := leaf.NotAfter.Sub(leaf.NotBefore)
		threshold := min(life/3, 30*24*time.Hour)
		// autocert renews at most threshold/10 (an hour at most) after the
		// renewal time; a minute more for the order itself (less for a
		// certificate of a few seconds).
		overdue := leaf.NotAfter.Add(-threshold).Add(min(threshold/10, time.Hour) + min(threshold/4, time.Minute))
		if now.Before(overdue) {
			continue
		}
		args := []any{"domain", d, "not_after", leaf.NotAfter.UTC()}
		if last := a.lastCA.get(); last != nil {
			args = append(args, "err", oneLine(last))
		}
		if now.After(leaf.NotAfter) {
			a.cfg.Logger.Error("tls: the certificate expired and was not renewed", args...)
			errs = append(errs, fmt.Errorf("%s: the certificate expired at %s", d, leaf.NotAfter.UTC().Format(time.RFC3339)))
			continue
		}
		a.cfg.Logger.Warn("tls: the certificate is due for renewal and was not renewed; it is served until it expires", args...)
		errs = append(errs, fmt.Errorf("%s: the certificate is due for renewal", d))
	}
	return errors.Join(errs...)
}

// CachedLeaf returns the leaf certificate of domain's ECDSA entry in the
// cache.
func (a *ACME) CachedLeaf(ctx context.Context, domain string) (*x509.Certificate, error) {
	data, err := a.cfg.Cache.Get(ctx, domain)
	if err != nil {
		return nil, err
	}
	// The entry is the private key's PEM block, then the chain's.
	block, _ := nextPEM(data, "CERTIFICATE")
	if block == nil {
		return nil, errors.New("the cached entry holds no certificate")
	}
	return x509.ParseCertificate(block)
}

// watchedTransport is the ACME client's transport: it notes each failed
// request to the CA (unreachable, or a refusal other than a stale nonce,
// which the client retries at once) for the log and for Check.
type watchedTransport struct {
	base http.RoundTripper
	a    *ACME
}

// RoundTrip sends req and notes how it went (http.RoundTripper).
func (t *watchedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		t.a.failed(req, err)
		return resp, err
	}
	if resp.StatusCode < 400 {
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			return resp, nil
		}
		// An authorization the CA marked invalid: its challenge failed
		// (the client then tries the next type, or gives up).
		body := peek(resp)
		var authz struct {
			Status     string
			Identifier struct{ Value string }
			Challenges []struct {
				Type  string
				Error *struct{ Type, Detail string }
			}
		}
		if json.Unmarshal(body, &authz) == nil && authz.Status == "invalid" && authz.Identifier.Value != "" {
			var why []string
			for _, c := range authz.Challenges {
				if c.Error != nil {
					why = append(why, c.Type+": "+c.Error.Detail)
				}
			}
			t.a.failed(req, fmt.Errorf("the CA could not validate %s (%s)", authz.Identifier.Value, strings.Join(why, "; ")))
		}
		return resp, nil
	}
	body := peek(resp)
	var problem struct{ Type, Detail string }
	json.Unmarshal(body, &problem)
	if strings.HasSuffix(problem.Type, ":badNonce") {
		return resp, nil
	}
	t.a.failed(req, fmt.Errorf("%s %s: %s", resp.Status, problem.Type, problem.Detail))
	return resp, nil
}

// peek reads resp's body (64 KiB at most) and puts it back.
func peek(resp *http.Response) []byte {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return body
}

// failed notes a failed request to the CA.
func (a *ACME) failed(req *http.Request, err error) {
	a.lastCA.set(err)
	a.caFailed.warn("request", req.Method+" "+req.URL.Redacted(), "err", oneLine(err))
}

// oneLine joins the lines of err's text.
func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}
