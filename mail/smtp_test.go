package mail_test

import (
	"bytes"
	"context"
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	smtpd "github.com/emersion/go-smtp"

	"latchkey/mail"
)

// smtpServer is a real SMTP server in the test (go-smtp) that records
// what it receives.
type smtpServer struct {
	Addr string
	CA   *x509.CertPool

	mu       sync.Mutex
	msgs     []received
	authUser string
	// RejectRcpt answers RCPT with this code when set (e.g. 550, 451).
	RejectRcpt int
	fails      int // remaining DATA commands to fail with 451
}

type received struct {
	From, To string
	Data     []byte
	Auth     string
	TLS      bool
}

type smtpOpts struct {
	implicitTLS bool
	noTLS       bool
	user, pass  string
}

func newSMTPServer(t *testing.T, o smtpOpts) *smtpServer {
	t.Helper()
	cert, pool := selfSigned(t)
	s := &smtpServer{CA: pool}
	srv := smtpd.NewServer(&backend{s: s, o: o})
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = false
	if !o.noTLS {
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	var ln net.Listener
	var err error
	if o.implicitTLS {
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

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

type backend struct {
	s *smtpServer
	o smtpOpts
}

func (b *backend) NewSession(c *smtpd.Conn) (smtpd.Session, error) {
	return &session{b: b, conn: c}, nil
}

type session struct {
	b    *backend
	conn *smtpd.Conn
	user string
	cur  received
}

func (s *session) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *session) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if username != s.b.o.user || password != s.b.o.pass {
			return errors.New("invalid credentials")
		}
		s.user = username
		return nil
	}), nil
}

func (s *session) Mail(from string, _ *smtpd.MailOptions) error {
	if s.b.o.user != "" && s.user == "" {
		return &smtpd.SMTPError{Code: 530, Message: "authentication required"}
	}
	s.cur.From = from
	return nil
}

func (s *session) Rcpt(to string, _ *smtpd.RcptOptions) error {
	s.b.s.mu.Lock()
	code := s.b.s.RejectRcpt
	s.b.s.mu.Unlock()
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
	srv := s.b.s
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.fails > 0 {
		srv.fails--
		return &smtpd.SMTPError{Code: 451, Message: "try again later"}
	}
	_, isTLS := s.conn.TLSConnectionState()
	s.cur.Data, s.cur.Auth, s.cur.TLS = data, s.user, isTLS
	srv.msgs = append(srv.msgs, s.cur)
	return nil
}

func (s *session) Reset()        { s.cur = received{} }
func (s *session) Logout() error { return nil }

// selfSigned returns a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
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

func testMessage() *mail.Message {
	return &mail.Message{ID: "mail-1", From: "Latchkey <auth@example.com>", To: "user@example.com",
		Subject: "Your Acme sign-in code", Text: "code 123456", HTML: "<p>code 123456</p>", Date: time.Unix(1700000000, 0)}
}

func mustSMTP(t *testing.T, rawURL string, pool *x509.CertPool) *mail.SMTP {
	t.Helper()
	s, err := mail.NewSMTP(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	s.TLSConfig = &tls.Config{RootCAs: pool}
	s.Timeout = 5 * time.Second
	return s
}

func TestSMTPStartTLSAndAuth(t *testing.T) {
	srv := newSMTPServer(t, smtpOpts{user: "mailer", pass: "s3cret p@ss"})
	s := mustSMTP(t, "smtp://mailer:s3cret%20p%40ss@"+srv.Addr, srv.CA)
	if err := s.Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	got := srv.messages()
	if len(got) != 1 {
		t.Fatalf("got %d messages", len(got))
	}
	m := got[0]
	if !m.TLS || m.Auth != "mailer" || m.From != "auth@example.com" || m.To != "user@example.com" {
		t.Fatalf("received %+v", m)
	}
	if !bytes.Contains(m.Data, []byte("Subject: Your Acme sign-in code")) {
		t.Fatalf("data:\n%s", m.Data)
	}
}

func TestSMTPImplicitTLS(t *testing.T) {
	srv := newSMTPServer(t, smtpOpts{implicitTLS: true, user: "u", pass: "p"})
	s := mustSMTP(t, "smtps://u:p@"+srv.Addr, srv.CA)
	if err := s.Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	if got := srv.messages(); len(got) != 1 || !got[0].TLS || got[0].Auth != "u" {
		t.Fatalf("received %+v", got)
	}
}

func TestSMTPPlainWithoutTLS(t *testing.T) {
	srv := newSMTPServer(t, smtpOpts{noTLS: true})
	s := mustSMTP(t, "smtp://"+srv.Addr, srv.CA)
	if err := s.Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	if got := srv.messages(); len(got) != 1 || got[0].TLS {
		t.Fatalf("received %+v", got)
	}
	// tls=required refuses a server without STARTTLS.
	s = mustSMTP(t, "smtp://"+srv.Addr+"?tls=required", srv.CA)
	if err := s.Send(context.Background(), testMessage()); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("err = %v, want STARTTLS refusal", err)
	}
}

func TestSMTPErrors(t *testing.T) {
	srv := newSMTPServer(t, smtpOpts{user: "u", pass: "right"})
	// Wrong password: refused, and the password is not in the text.
	s := mustSMTP(t, "smtp://u:wrongpassword@"+srv.Addr, srv.CA)
	err := s.Send(context.Background(), testMessage())
	if err == nil || !strings.Contains(err.Error(), "AUTH") || strings.Contains(err.Error(), "wrongpassword") {
		t.Fatalf("err = %v, want an AUTH failure without the password", err)
	}
	if len(srv.messages()) != 0 {
		t.Fatal("message accepted without authentication")
	}
	// 451 on RCPT is transient; 550 permanent.
	s = mustSMTP(t, "smtp://u:right@"+srv.Addr, srv.CA)
	srv.mu.Lock()
	srv.RejectRcpt = 451
	srv.mu.Unlock()
	if err := s.Send(context.Background(), testMessage()); err == nil || mail.IsPermanent(err) {
		t.Fatalf("451: err = %v, want transient", err)
	}
	srv.mu.Lock()
	srv.RejectRcpt = 550
	srv.mu.Unlock()
	if err := s.Send(context.Background(), testMessage()); err == nil || !mail.IsPermanent(err) {
		t.Fatalf("550: err = %v, want permanent", err)
	}
	// Nobody listening: transient.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	s = mustSMTP(t, "smtp://"+addr, srv.CA)
	if err := s.Send(context.Background(), testMessage()); err == nil || mail.IsPermanent(err) {
		t.Fatalf("closed port: err = %v, want transient", err)
	}
}

func TestNewSMTP(t *testing.T) {
	for _, tc := range []struct {
		url, addr string
		implicit  bool
		wantErr   bool
	}{
		{"smtp://mail.example.com", "mail.example.com:587", false, false},
		{"smtps://u:p@mail.example.com", "mail.example.com:465", true, false},
		{"smtp://u:p@mail.example.com:2525", "mail.example.com:2525", false, false},
		{"http://mail.example.com", "", false, true},
		{"smtp://", "", false, true},
		{"smtp://host/path", "", false, true},
		{"smtp://host?tls=maybe", "", false, true},
		{"::not a url", "", false, true},
	} {
		s, err := mail.NewSMTP(tc.url)
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: no error", tc.url)
			} else if strings.Contains(err.Error(), tc.url) && tc.url != "" {
				t.Errorf("%s: error repeats the URL: %v", tc.url, err)
			}
			continue
		}
		if err != nil || s.Addr != tc.addr || s.ImplicitTLS != tc.implicit {
			t.Errorf("%s: got %+v, %v", tc.url, s, err)
		}
	}
}
