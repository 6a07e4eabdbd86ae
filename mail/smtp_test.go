package mail_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"latchkey/mail"
	"latchkey/mail/mailtest"
)

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
	srv := mailtest.NewServer(t, mailtest.Options{User: "mailer", Pass: "s3cret p@ss"})
	s := mustSMTP(t, "smtp://mailer:s3cret%20p%40ss@"+srv.Addr, srv.CA)
	if err := s.Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	got := srv.Messages()
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
	srv := mailtest.NewServer(t, mailtest.Options{ImplicitTLS: true, User: "u", Pass: "p"})
	s := mustSMTP(t, "smtps://u:p@"+srv.Addr, srv.CA)
	if err := s.Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Messages(); len(got) != 1 || !got[0].TLS || got[0].Auth != "u" {
		t.Fatalf("received %+v", got)
	}
}

func TestSMTPPlainWithoutTLS(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.Options{NoTLS: true})
	s := mustSMTP(t, "smtp://"+srv.Addr, srv.CA)
	if err := s.Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Messages(); len(got) != 1 || got[0].TLS {
		t.Fatalf("received %+v", got)
	}
	// tls=required refuses a server without STARTTLS.
	s = mustSMTP(t, "smtp://"+srv.Addr+"?tls=required", srv.CA)
	if err := s.Send(context.Background(), testMessage()); err == nil || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("err = %v, want STARTTLS refusal", err)
	}
}

func TestSMTPErrors(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.Options{User: "u", Pass: "right"})
	// Wrong password: refused, and the password is not in the text.
	s := mustSMTP(t, "smtp://u:wrongpassword@"+srv.Addr, srv.CA)
	err := s.Send(context.Background(), testMessage())
	if err == nil || !strings.Contains(err.Error(), "AUTH") || strings.Contains(err.Error(), "wrongpassword") {
		t.Fatalf("err = %v, want an AUTH failure without the password", err)
	}
	if len(srv.Messages()) != 0 {
		t.Fatal("message accepted without authentication")
	}
	// 451 on RCPT is transient; 550 permanent.
	s = mustSMTP(t, "smtp://u:right@"+srv.Addr, srv.CA)
	srv.RejectRcpt(451)
	if err := s.Send(context.Background(), testMessage()); err == nil || mail.IsPermanent(err) {
		t.Fatalf("451: err = %v, want transient", err)
	}
	srv.RejectRcpt(550)
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
