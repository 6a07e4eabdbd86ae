// Package mailtest runs a real SMTP server inside tests (github.com/emersion/go-smtp)
// and records what it receives, so tests can read codes and links out of
// real SMTP exchanges. Only test binaries import it.
package mailtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	smtpd "github.com/emersion/go-smtp"
)

// Options configures a Server.
type Options struct {
	// ImplicitTLS serves TLS from the first byte (smtps); otherwise the
	// server offers STARTTLS unless NoTLS is set.
	ImplicitTLS bool
	NoTLS       bool
	// User and Pass, when set, are required (AUTH PLAIN) before MAIL.
	User, Pass string
}

// Message is one received message.
type Message struct {
	From, To string
	Data     []byte
	// Auth is the authenticated user name; TLS tells whether the
	// exchange was encrypted.
	Auth string
	TLS  bool
}

// Server is a running SMTP server on 127.0.0.1.
type Server struct {
	// Addr is host:port.
	Addr string
	// CA trusts the server's self-signed certificate.
	CA *x509.CertPool

	opts Options
	mu   sync.Mutex
	msgs []Message
	rcpt int
	fail int
	got  chan struct{}
}

// NewServer starts a server that stops when the test ends.
func NewServer(t testing.TB, o Options) *Server {
	t.Helper()
	cert, pool := selfSigned(t)
	s := &Server{CA: pool, opts: o, got: make(chan struct{}, 1024)}
	srv := smtpd.NewServer(&backend{s: s})
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	if !o.NoTLS {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	var ln net.Listener
	var err error
	if o.ImplicitTLS {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", srv.TLSConfig)
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// Messages returns what the server has received so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Wait returns the first message to addr, waiting up to timeout for it.
func (s *Server) Wait(addr string, timeout time.Duration) (Message, bool) {
	deadline := time.After(timeout)
	for {
		for _, m := range s.Messages() {
			if m.To == addr {
				return m, true
			}
		}
		select {
		case <-s.got:
		case <-deadline:
			return Message{}, false
		}
	}
}

// RejectRcpt makes RCPT answer code (e.g. 451, 550); 0 accepts again.
func (s *Server) RejectRcpt(code int) {
	s.mu.Lock()
	s.rcpt = code
	s.mu.Unlock()
}

// FailData makes the next n DATA commands answer 451.
func (s *Server) FailData(n int) {
	s.mu.Lock()
	s.fail = n
	s.mu.Unlock()
}

type backend struct{ s *Server }

func (b *backend) NewSession(c *smtpd.Conn) (smtpd.Session, error) {
	return &session{s: b.s, conn: c}, nil
}

type session struct {
	s    *Server
	conn *smtpd.Conn
	user string
	cur  Message
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.s.opts.User || pass != s.s.opts.Pass {
			return errors.New("invalid credentials")
		}
		s.user = user
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtpd.MailOptions) error {
	if s.s.opts.User != "" && s.user == "" {
		return &smtpd.SMTPError{Code: 530, Message: "authentication required"}
	}
	s.cur.From = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtpd.RcptOptions) error {
	s.s.mu.Lock()
	code := s.s.rcpt
	s.s.mu.Unlock()
	if code != 0 {
		return &smtpd.SMTPError{Code: code, Message: "rejected"}
	}
	s.cur.To = to
	return nil
}

func (s *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	srv := s.s
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.fail > 0 {
		srv.fail--
		return &smtpd.SMTPError{Code: 451, Message: "try again later"}
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.cur.Data, s.cur.Auth, s.cur.TLS = data, s.user, isTLS
	srv.msgs = append(srv.msgs, s.cur)
	select {
	case srv.got <- struct{}{}:
	default:
	}
	return nil
}

func (s *session) Reset()        { s.cur = Message{} }
func (s *session) Logout() error { return nil }

// selfSigned returns a certificate for 127.0.0.1 and localhost and a pool
// trusting it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "latchkey test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}
