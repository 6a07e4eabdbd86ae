// Package mailtest runs a real SMTP server inside tests (github.com/emersion/go-smtp)
// and records what it receives, so tests can read codes and links out of
// real SMTP exchanges. Only test binaries import it.
package mailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	smtpd "github.com/emersion/go-smtp"
)

// SASL mechanisms the server can offer.
const (
	Plain   = sasl.Plain
	Login   = sasl.Login
	CramMD5 = "CRAM-MD5"
)

// Options configures a Server.
type Options struct {
	// ImplicitTLS serves TLS from the first byte (smtps); otherwise the
	// server offers STARTTLS unless NoTLS is set.
	ImplicitTLS bool
	NoTLS       bool
	// User and Pass, when set, are required before MAIL.
	User, Pass string
	// Mechanisms are the AUTH mechanisms offered, in order (default
	// PLAIN only). Any other mechanism is answered 504, as real servers
	// do.
	Mechanisms []string
	// InsecureAuth offers AUTH on a connection that is not encrypted.
	InsecureAuth bool
	// Host is the loopback address listened on: 127.0.0.1 (default),
	// ::1, or another of 127.0.0.0/8 (a name latchkey does not treat as
	// this machine's: 127.0.0.2). HostAvailable tells whether the
	// machine has it.
	Host string
}

// Message is one received message.
type Message struct {
	From, To string
	// Data is the message as received, after the DATA dot-unstuffing.
	Data []byte
	// Auth is the authenticated user name and Mechanism the SASL
	// mechanism used; TLS tells whether the exchange was encrypted.
	Auth      string
	Mechanism string
	TLS       bool
}

// Server is a running SMTP server on a loopback address (Options.Host).
// Its certificate (for 127.0.0.1, ::1 and localhost) is issued by a CA
// made for this server alone.
type Server struct {
	// Addr is host:port.
	Addr string
	// CA trusts the server's certificate; CAPEM is the same CA
	// certificate in PEM form.
	CA    *x509.CertPool
	CAPEM []byte

	opts  Options
	mu    sync.Mutex
	msgs  []Message
	first map[string]int // recipient → index in msgs of its first message
	rcpt  int
	fail  int
	got   chan struct{} // closed (and replaced) when a message arrives
}

// NewServer starts a server that stops when the test ends.
func NewServer(t testing.TB, o Options) *Server {
	t.Helper()
	if len(o.Mechanisms) == 0 {
		o.Mechanisms = []string{Plain}
	}
	cert, caPEM := issue(t)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	s := &Server{CA: pool, CAPEM: caPEM, opts: o, first: map[string]int{}, got: make(chan struct{})}
	srv := smtpd.NewServer(&backend{s: s})
	srv.Domain = "localhost"
	srv.ReadTimeout, srv.WriteTimeout = 10*time.Second, 10*time.Second
	srv.AllowInsecureAuth = o.InsecureAuth
	srv.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are what some tests want
	if !o.NoTLS {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	if o.Host == "" {
		o.Host = "127.0.0.1"
	}
	at := net.JoinHostPort(o.Host, "0")
	var ln net.Listener
	var err error
	if o.ImplicitTLS {
		ln, err = tls.Listen("tcp", at, srv.TLSConfig)
	} else {
		ln, err = net.Listen("tcp", at)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = ln.Addr().String()
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// HostAvailable reports whether a server can listen on host (a loopback
// address this machine may lack, such as ::1 in a container without
// IPv6).
func HostAvailable(host string) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// CAFile writes the CA certificate to a PEM file in a directory of the
// test's and returns its path.
func (s *Server) CAFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "smtp-ca.pem")
	if err := os.WriteFile(path, s.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Messages returns what the server has received so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Wait returns the first message to addr, waiting up to timeout for it.
// Any number of goroutines may wait at once: each arrival wakes them all.
func (s *Server) Wait(addr string, timeout time.Duration) (Message, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		i, ok := s.first[addr]
		got := s.got
		var m Message
		if ok {
			m = s.msgs[i]
		}
		s.mu.Unlock()
		if ok {
			return m, true
		}
		select {
		case <-got:
		case <-deadline.C:
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
	mech string
	cur  Message
}

func (s *session) AuthMechanisms() []string { return s.s.opts.Mechanisms }

// errBadCredentials is what real servers answer to a wrong password.
var errBadCredentials = &smtpd.SMTPError{Code: 535, EnhancedCode: smtpd.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}

func (s *session) Auth(mech string) (sasl.Server, error) {
	offered := false
	for _, m := range s.s.opts.Mechanisms {
		offered = offered || m == mech
	}
	if !offered {
		return nil, smtpd.ErrAuthUnknownMechanism // 504
	}
	check := func(user, pass string) error {
		if user != s.s.opts.User || pass != s.s.opts.Pass {
			return errBadCredentials
		}
		s.user, s.mech = user, mech
		return nil
	}
	switch mech {
	case Plain:
		return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
	case Login:
		return &loginServer{check: check}, nil
	case CramMD5:
		return &cramServer{secret: s.s.opts.Pass, done: func(user string, ok bool) error {
			if !ok || user != s.s.opts.User {
				return errBadCredentials
			}
			s.user, s.mech = user, mech
			return nil
		}}, nil
	}
	return nil, smtpd.ErrAuthUnknownMechanism
}

// loginServer is the server side of AUTH LOGIN (draft-murchison-sasl-login):
// it asks for the user name, then the password.
type loginServer struct {
	step  int
	user  string
	check func(user, pass string) error
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch l.step {
	case 0:
		l.step++
		if len(response) == 0 {
			return []byte("Username:"), false, nil
		}
		l.user, l.step = string(response), 2 // initial response holds the user name
		return []byte("Password:"), false, nil
	case 1:
		l.user, l.step = string(response), 2
		return []byte("Password:"), false, nil
	case 2:
		l.step++
		return nil, true, l.check(l.user, string(response))
	}
	return nil, false, errors.New("unexpected response")
}

// cramServer is the server side of AUTH CRAM-MD5 (RFC 2195): a challenge,
// then "user hex(HMAC-MD5(password, challenge))".
type cramServer struct {
	secret    string
	challenge []byte
	done      func(user string, ok bool) error
}

func (c *cramServer) Next(response []byte) ([]byte, bool, error) {
	if c.challenge == nil {
		c.challenge = []byte("<" + rand.Text() + "@localhost>")
		return c.challenge, false, nil
	}
	user, digest, found := bytes.Cut(response, []byte(" "))
	if !found {
		return nil, true, c.done("", false)
	}
	m := hmac.New(md5.New, []byte(c.secret))
	m.Write(c.challenge)
	want := hex.EncodeToString(m.Sum(nil))
	return nil, true, c.done(string(user), hmac.Equal(digest, []byte(want)))
}

func (s *session) Mail(from string, _ *smtpd.MailOptions) error {
	if s.s.opts.User != "" && s.user == "" {
		return &smtpd.SMTPError{Code: 530, EnhancedCode: smtpd.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
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
	s.cur.Data, s.cur.Auth, s.cur.Mechanism, s.cur.TLS = data, s.user, s.mech, isTLS
	if _, seen := srv.first[s.cur.To]; !seen {
		srv.first[s.cur.To] = len(srv.msgs)
	}
	srv.msgs = append(srv.msgs, s.cur)
	close(srv.got)
	srv.got = make(chan struct{})
	return nil
}

func (s *session) Reset()        { s.cur = Message{} }
func (s *session) Logout() error { return nil }

// issue makes a CA and a server certificate for 127.0.0.1, ::1 and localhost
// signed by it; it returns the server certificate and the CA in PEM.
func issue(t testing.TB) (tls.Certificate, []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "latchkey test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, caPEM
}
