package autotls

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// FileCert serves the certificate of a certificate file and a key file
// (--tls-cert, --tls-key), read again when either changes: a handshake
// looks at both files' modification times and sizes at most every
// CheckEvery, and loads the pair again when they moved. A pair that does
// not load (a file half written, a key of another certificate) leaves the
// certificate being served in place; that is logged once per change of
// the files, and the pair is tried again at their next change.
type FileCert struct {
	certFile, keyFile string
	now               func() time.Time
	log               *slog.Logger

	cert atomic.Pointer[tls.Certificate]

	mu      sync.Mutex // guards the fields below and the reloads
	checked time.Time  // when the files were last looked at
	stamps  [2]stamp   // of the pair last loaded or tried
}

// CheckEvery is how often, at most, a handshake looks whether the files
// changed.
const CheckEvery = 2 * time.Second

// stamp is what tells a file changed: its modification time and size.
type stamp struct {
	mod  time.Time
	size int64
}

// LoadFileCert reads the pair; an error names the file and the cause in
// one line. now is the clock of the checks (nil: time.Now); reloads are
// logged to log.
func LoadFileCert(certFile, keyFile string, now func() time.Time, log *slog.Logger) (*FileCert, error) {
	if now == nil {
		now = time.Now
	}
	f := &FileCert{certFile: certFile, keyFile: keyFile, now: now, log: log}
	stamps, err := f.stat()
	if err != nil {
		return nil, err
	}
	cert, err := f.load()
	if err != nil {
		return nil, err
	}
	f.cert.Store(cert)
	f.stamps, f.checked = stamps, now()
	return f, nil
}

// stat returns the files' stamps.
func (f *FileCert) stat() ([2]stamp, error) {
	var out [2]stamp
	for i, file := range []struct{ flag, name string }{{"--tls-cert", f.certFile}, {"--tls-key", f.keyFile}} {
		fi, err := os.Stat(file.name)
		if err != nil {
			return out, fmt.Errorf("%s: %w", file.flag, err)
		}
		out[i] = stamp{fi.ModTime(), fi.Size()}
	}
	return out, nil
}

// load reads and parses the pair.
func (f *FileCert) load() (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(f.certFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert: %w", err)
	}
	keyPEM, err := os.ReadFile(f.keyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s and --tls-key %s do not make a certificate: %v", f.certFile, f.keyFile, err)
	}
	return &cert, nil
}

// Certificate returns the certificate being served.
func (f *FileCert) Certificate() *tls.Certificate { return f.cert.Load() }

// GetCertificate returns the certificate to serve (tls.Config's
// GetCertificate), after loading the files again if they changed.
func (f *FileCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	f.Check()
	return f.cert.Load(), nil
}

// Check loads the pair again when the files changed since the last
// load, unless they were looked at less than CheckEvery ago. It reports
// whether it replaced the certificate.
func (f *FileCert) Check() bool {
	if !f.mu.TryLock() {
		return false // another handshake is looking: serve the current one
	}
	defer f.mu.Unlock()
	now := f.now()
	if now.Sub(f.checked) < CheckEvery && !now.Before(f.checked) {
		return false
	}
	f.checked = now
	stamps, err := f.stat()
	if err != nil || stamps == f.stamps {
		if err != nil && stamps != f.stamps {
			f.log.Warn("tls: the certificate files cannot be read; serving the certificate loaded before", "err", err)
			f.stamps = stamps
		}
		return false
	}
	f.stamps = stamps
	cert, err := f.load()
	if err != nil {
		f.log.Warn("tls: the certificate files changed but do not load; serving the certificate loaded before", "err", err)
		return false
	}
	f.cert.Store(cert)
	f.log.Info("tls: certificate files reloaded", "names", cert.Leaf.DNSNames, "not_after", cert.Leaf.NotAfter.UTC())
	return true
}
