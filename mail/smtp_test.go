package mail_test

import (
	"bytes"
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"latchkey/mail"
	"latchkey/mail/mailtest"
	"latchkey/store"
)

func testMessage() *mail.Message {
	return &mail.Message{ID: "mail-1", From: "Latchkey <auth@example.com>", To: "user@example.com",
		Subject: "Your Acme sign-in code", Text: "code 123456", HTML: "<p>code 123456</p>", Date: time.Unix(1700000000, 0)}
}

// mustSMTP parses rawURL; ca, when not empty, is appended as ?ca= (or
// &ca=) so the test CA is trusted the way an operator trusts a private
// one.
func mustSMTP(t *testing.T, rawURL, ca string) *mail.SMTP {
	t.Helper()
	if ca != "" {
		sep := "?"
		if strings.Contains(rawURL, "?") {
			sep = "&"
		}
		rawURL += sep + "ca=" + url.QueryEscape(ca)
	}
	s, err := mail.NewSMTP(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	s.Timeout = 5 * time.Second
	return s
}

// TestSMTPAuthMechanisms: a message goes through STARTTLS (on a
// certificate of a CA trusted with ?ca=) and AUTH with every mechanism a
// server may offer alone, PLAIN, LOGIN (the server then answers 504 to
// PLAIN) and CRAM-MD5, chosen from what the server offers or forced with
// ?auth=.
func TestSMTPAuthMechanisms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		offered []string
		query   string
		want    string
	}{
		{"plain only", []string{mailtest.Plain}, "", mailtest.Plain},
		{"login only", []string{mailtest.Login}, "", mailtest.Login},
		{"cram-md5 only", []string{mailtest.CramMD5}, "", mailtest.CramMD5},
		{"plain and login, auto", []string{mailtest.Login, mailtest.Plain}, "", mailtest.Plain},
		{"plain and login, login forced", []string{mailtest.Plain, mailtest.Login}, "?auth=login", mailtest.Login},
		{"all three, cram-md5 forced", []string{mailtest.Plain, mailtest.Login, mailtest.CramMD5}, "?auth=CRAM-MD5", mailtest.CramMD5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mailtest.NewServer(t, mailtest.Options{User: "mailer", Pass: "s3cret p@ss", Mechanisms: tc.offered})
			s := mustSMTP(t, "smtp://mailer:s3cret%20p%40ss@"+srv.Addr+tc.query, srv.CAFile(t))
			if err := s.Send(context.Background(), testMessage()); err != nil {
				t.Fatal(err)
			}
			got := srv.Messages()
			if len(got) != 1 {
				t.Fatalf("got %d messages", len(got))
			}
			m := got[0]
			if !m.TLS || m.Auth != "mailer" || m.Mechanism != tc.want || m.From != "auth@example.com" || m.To != "user@example.com" {
				t.Fatalf("received tls=%v auth=%q mechanism=%q from=%q to=%q, want mechanism %s", m.TLS, m.Auth, m.Mechanism, m.From, m.To, tc.want)
			}
		})
	}
}

// TestSMTPSendsMessageBytesUnchanged: what the server receives is the
// message exactly as Message.Bytes renders it (and as the outbox writes
// it): the same headers and none added, 7bit parts, the code and the
// link unbroken on their own lines, so grep finds them in what was sent.
func TestSMTPSendsMessageBytesUnchanged(t *testing.T) {
	t.Parallel()
	srv := mailtest.NewServer(t, mailtest.Options{User: "u", Pass: "p"})
	link := "https://auth.example.com/api/v1/magic/verify?token=AbC-dEf_0123456789abcdefghijklmnopqrstuvwxy"
	m, err := mail.Render(mail.KindMagic, "user@example.com", "Acme <auth@example.com>", store.MailContent{Project: "Acme", Link: link, TTLSeconds: 900})
	if err != nil {
		t.Fatal(err)
	}
	m.ID, m.Date = "mail-7", time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	if err := mustSMTP(t, "smtp://u:p@"+srv.Addr, srv.CAFile(t)).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	got, ok := srv.Wait("user@example.com", 5*time.Second)
	if !ok {
		t.Fatal("no message")
	}
	dir := t.TempDir()
	if err := (&mail.Outbox{Dir: dir}).Send(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
	if len(files) != 1 {
		t.Fatalf("outbox files %v", files)
	}
	eml, _ := os.ReadFile(files[0])
	// Boundaries and Message-IDs are random per rendering: blank them,
	// then the two must be the same bytes.
	random := regexp.MustCompile(`=_[a-z]{24}|<[a-z]{24}@latchkey>`)
	sent := random.ReplaceAll(got.Data, []byte("RANDOM"))
	if want := random.ReplaceAll(eml, []byte("RANDOM")); !bytes.Equal(sent, want) {
		t.Fatalf("sent bytes differ from the outbox's:\n--- sent\n%s\n--- outbox\n%s", sent, want)
	}
	raw := string(got.Data)
	if n := strings.Count(raw, link); n != 3 || !strings.Contains(raw, "\r\n"+link+"\r\n") {
		t.Fatalf("link appears %d times unbroken (want 3, one on its own line):\n%s", n, raw)
	}
	if strings.Contains(raw, "quoted-printable") || strings.Count(raw, "Content-Transfer-Encoding: 7bit") != 2 {
		t.Fatalf("parts re-encoded:\n%s", raw)
	}
	headers := raw[:strings.Index(raw, "\r\n\r\n")]
	var names []string
	for _, line := range strings.Split(headers, "\r\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, " ") {
			names = append(names, name)
		}
	}
	if got, want := strings.Join(names, " "), "From To Subject Date Message-ID MIME-Version Auto-Submitted Content-Type"; got != want {
		t.Fatalf("headers %q, want %q", got, want)
	}
}

func TestSMTPImplicitTLS(t *testing.T) {
	t.Parallel()
	srv := mailtest.NewServer(t, mailtest.Options{ImplicitTLS: true, User: "u", Pass: "p", Mechanisms: []string{mailtest.Login}})
	s := mustSMTP(t, "smtps://u:p@"+srv.Addr, srv.CAFile(t))
	if err := s.Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Messages(); len(got) != 1 || !got[0].TLS || got[0].Auth != "u" || got[0].Mechanism != mailtest.Login {
		t.Fatalf("received %+v", got)
	}
}

// TestSMTPCertificateNotTrusted: without the CA, a certificate of a
// private CA is refused, on STARTTLS and on implicit TLS, as a
// configuration error naming the certificate; nothing is sent.
func TestSMTPCertificateNotTrusted(t *testing.T) {
	t.Parallel()
	for _, implicit := range []bool{false, true} {
		srv := mailtest.NewServer(t, mailtest.Options{ImplicitTLS: implicit, User: "u", Pass: "p"})
		scheme := "smtp"
		if implicit {
			scheme = "smtps"
		}
		err := mustSMTP(t, scheme+"://u:p@"+srv.Addr, "").Send(context.Background(), testMessage())
		if !mail.IsConfig(err) || mail.IsPermanent(err) || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("%s: err = %v, want a configuration error about the certificate", scheme, err)
		}
		if len(srv.Messages()) != 0 {
			t.Fatalf("%s: a message went to an untrusted server", scheme)
		}
	}
}

// TestSMTPWithoutTLS: a server without TLS gets mail when no credentials
// are set; tls=required refuses it (a configuration error). Passwords
// without TLS: TestSMTPPasswordInClearText.
func TestSMTPWithoutTLS(t *testing.T) {
	t.Parallel()
	srv := mailtest.NewServer(t, mailtest.Options{NoTLS: true})
	if err := mustSMTP(t, "smtp://"+srv.Addr, "").Send(context.Background(), testMessage()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Messages(); len(got) != 1 || got[0].TLS {
		t.Fatalf("received %+v", got)
	}
	err := mustSMTP(t, "smtp://"+srv.Addr+"?tls=required", "").Send(context.Background(), testMessage())
	if !mail.IsConfig(err) || !strings.Contains(err.Error(), "STARTTLS") {
		t.Fatalf("tls=required: err = %v, want a configuration error naming STARTTLS", err)
	}

}

// TestSMTPPasswordInClearText: without TLS a password goes only to a
// relay on this machine, named localhost, 127.0.0.1 or ::1 (as Go's
// net/smtp allows), by PLAIN or LOGIN, whichever it offers; to any other
// name (here 127.0.0.2, loopback too but not one of those names) it is
// refused as a configuration error that names neither the password nor
// sends it, forced mechanism or not, unless the mechanism does not
// reveal it (CRAM-MD5). Each relay requires AUTH before MAIL.
func TestSMTPPasswordInClearText(t *testing.T) {
	t.Parallel()
	const pass = "hunter2 secret"
	for _, tc := range []struct {
		name, listen, host string
		offered            []string
		query, want        string // want: the mechanism; "" for refused
	}{
		{"127.0.0.1, plain only", "127.0.0.1", "127.0.0.1", []string{mailtest.Plain}, "", mailtest.Plain},
		{"127.0.0.1, login only", "127.0.0.1", "127.0.0.1", []string{mailtest.Login}, "", mailtest.Login},
		{"127.0.0.1, login and plain", "127.0.0.1", "127.0.0.1", []string{mailtest.Login, mailtest.Plain}, "", mailtest.Plain},
		{"127.0.0.1, login forced", "127.0.0.1", "127.0.0.1", []string{mailtest.Plain, mailtest.Login}, "?auth=login", mailtest.Login},
		{"127.0.0.1, cram-md5 first", "127.0.0.1", "127.0.0.1", []string{mailtest.Plain, mailtest.CramMD5}, "", mailtest.CramMD5},
		{"localhost, login only", "127.0.0.1", "localhost", []string{mailtest.Login}, "", mailtest.Login},
		{"::1, plain only", "::1", "[::1]", []string{mailtest.Plain}, "", mailtest.Plain},
		{"::1, login only", "::1", "[::1]", []string{mailtest.Login}, "", mailtest.Login},
		{"127.0.0.2, plain and login", "127.0.0.2", "127.0.0.2", []string{mailtest.Plain, mailtest.Login}, "", ""},
		{"127.0.0.2, login forced", "127.0.0.2", "127.0.0.2", []string{mailtest.Login}, "?auth=login", ""},
		{"127.0.0.2, plain forced", "127.0.0.2", "127.0.0.2", []string{mailtest.Plain}, "?auth=plain", ""},
		{"127.0.0.2, cram-md5", "127.0.0.2", "127.0.0.2", []string{mailtest.Plain, mailtest.CramMD5}, "", mailtest.CramMD5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !mailtest.HostAvailable(tc.listen) {
				t.Skipf("this machine cannot listen on %s", tc.listen)
			}
			srv := mailtest.NewServer(t, mailtest.Options{Host: tc.listen, NoTLS: true, InsecureAuth: true, User: "u", Pass: pass, Mechanisms: tc.offered})
			_, port, _ := net.SplitHostPort(srv.Addr)
			err := mustSMTP(t, "smtp://u:"+url.PathEscape(pass)+"@"+tc.host+":"+port+tc.query, "").Send(context.Background(), testMessage())
			got := srv.Messages()
			if tc.want == "" {
				if !mail.IsConfig(err) || !strings.Contains(err.Error(), "not encrypted") || strings.Contains(err.Error(), "hunter2") || len(got) != 0 {
					t.Fatalf("err = %v, %d messages; want a configuration error saying the connection is not encrypted, without the password, and nothing sent", err, len(got))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].TLS || got[0].Auth != "u" || got[0].Mechanism != tc.want {
				t.Fatalf("received %+v, want one message authenticated by %s without TLS", got, tc.want)
			}
		})
	}
}

// TestSMTPOverIPv6: a server on ::1 gets mail over STARTTLS and over
// implicit TLS, its certificate naming ::1 (the host is joined to the
// port in brackets).
func TestSMTPOverIPv6(t *testing.T) {
	t.Parallel()
	if !mailtest.HostAvailable("::1") {
		t.Skip("this machine has no ::1")
	}
	for _, implicit := range []bool{false, true} {
		srv := mailtest.NewServer(t, mailtest.Options{Host: "::1", ImplicitTLS: implicit, User: "u", Pass: "p", Mechanisms: []string{mailtest.Login}})
		scheme := "smtp"
		if implicit {
			scheme = "smtps"
		}
		if err := mustSMTP(t, scheme+"://u:p@"+srv.Addr, srv.CAFile(t)).Send(context.Background(), testMessage()); err != nil {
			t.Fatalf("%s on %s: %v", scheme, srv.Addr, err)
		}
		if got := srv.Messages(); len(got) != 1 || !got[0].TLS || got[0].Mechanism != mailtest.Login {
			t.Fatalf("%s: received %+v", scheme, got)
		}
	}
}

// TestSMTPErrors sorts failures: credentials refused or a mechanism the
// server lacks are configuration errors (never naming the password); a
// 4xx is transient, a 5xx to RCPT permanent; nobody listening is
// transient.
func TestSMTPErrors(t *testing.T) {
	t.Parallel()
	srv := mailtest.NewServer(t, mailtest.Options{User: "u", Pass: "right", Mechanisms: []string{mailtest.Login}})
	ca := srv.CAFile(t)
	for _, rawURL := range []string{"smtp://u:wrongpassword@" + srv.Addr, "smtp://u:wrongpassword@" + srv.Addr + "?auth=plain"} {
		err := mustSMTP(t, rawURL, ca).Send(context.Background(), testMessage())
		if !mail.IsConfig(err) || mail.IsPermanent(err) || strings.Contains(err.Error(), "wrongpassword") {
			t.Fatalf("%s: err = %v, want a configuration error without the password", strings.Replace(rawURL, "wrongpassword", "xxx", 1), err)
		}
	}
	if len(srv.Messages()) != 0 {
		t.Fatal("message accepted without authentication")
	}
	// Credentials the server wants but the URL lacks: refused at MAIL.
	if err := mustSMTP(t, "smtp://"+srv.Addr, ca).Send(context.Background(), testMessage()); !mail.IsConfig(err) {
		t.Fatalf("no credentials: err = %v, want a configuration error", err)
	}
	s := mustSMTP(t, "smtp://u:right@"+srv.Addr, ca)
	srv.RejectRcpt(451)
	if err := s.Send(context.Background(), testMessage()); err == nil || mail.IsPermanent(err) || mail.IsConfig(err) {
		t.Fatalf("451: err = %v, want transient", err)
	}
	srv.RejectRcpt(550)
	if err := s.Send(context.Background(), testMessage()); err == nil || !mail.IsPermanent(err) {
		t.Fatalf("550: err = %v, want permanent", err)
	}
	srv.RejectRcpt(0)
	srv.FailData(1)
	if err := s.Send(context.Background(), testMessage()); err == nil || mail.IsPermanent(err) || mail.IsConfig(err) {
		t.Fatalf("451 to DATA: err = %v, want transient", err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if err := mustSMTP(t, "smtp://"+addr, "").Send(context.Background(), testMessage()); err == nil || mail.IsPermanent(err) || mail.IsConfig(err) {
		t.Fatalf("closed port: err = %v, want transient", err)
	}
	// smtps:// against a server that speaks plain SMTP on the port.
	plain := mailtest.NewServer(t, mailtest.Options{NoTLS: true})
	if err := mustSMTP(t, "smtps://"+plain.Addr, "").Send(context.Background(), testMessage()); !mail.IsConfig(err) {
		t.Fatalf("smtps to a plain port: err = %v, want a configuration error", err)
	}
}

func TestNewSMTP(t *testing.T) {
	t.Parallel()
	caFile := mailtest.NewServer(t, mailtest.Options{NoTLS: true}).CAFile(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	for _, tc := range []struct {
		url          string
		host         string
		port         int
		implicit     bool
		required     bool
		auth         string
		ca, wantErr  bool
		errorMention string
	}{
		{url: "smtp://mail.example.com", host: "mail.example.com", port: 587, auth: "auto"},
		{url: "smtps://u:p@mail.example.com", host: "mail.example.com", port: 465, implicit: true, auth: "auto"},
		{url: "smtp://u:p@mail.example.com:2525?tls=required&auth=LOGIN", host: "mail.example.com", port: 2525, required: true, auth: "login"},
		{url: "smtp://[::1]:25?tls=opportunistic&auth=cram-md5", host: "::1", port: 25, auth: "cram-md5"},
		{url: "smtps://u:p@mail.example.com?ca=" + url.QueryEscape(caFile), host: "mail.example.com", port: 465, implicit: true, auth: "auto", ca: true},
		{url: "http://mail.example.com", wantErr: true, errorMention: "scheme"},
		{url: "smtp:mail.example.com", wantErr: true, errorMention: "//"},
		{url: "smtp://", wantErr: true, errorMention: "host"},
		{url: "smtp://host/path", wantErr: true, errorMention: "path"},
		{url: "smtp://host:0", wantErr: true, errorMention: "port"},
		{url: "smtp://host?tls=maybe", wantErr: true, errorMention: "tls"},
		{url: "smtps://host?tls=required", wantErr: true, errorMention: "tls"},
		{url: "smtp://host?auth=xoauth2", wantErr: true, errorMention: "auth"},
		{url: "smtp://host?ca=/does/not/exist.pem", wantErr: true, errorMention: "/does/not/exist.pem"},
		{url: "smtp://host?ca=" + url.QueryEscape(notPEM), wantErr: true, errorMention: "no PEM certificate"},
		{url: "smtp://host?tsl=required", wantErr: true, errorMention: "tsl"},
		{url: "smtp://u:hunter2@host?tls=a&tls=b", wantErr: true, errorMention: "twice"},
		{url: "::not a url", wantErr: true, errorMention: "not a URL"},
	} {
		s, err := mail.NewSMTP(tc.url)
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: no error", tc.url)
			} else if !strings.Contains(err.Error(), tc.errorMention) || strings.Contains(err.Error(), tc.url) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("%s: error %q should name %q and not repeat the URL", tc.url, err, tc.errorMention)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if s.Host != tc.host || s.Port != tc.port || s.ImplicitTLS != tc.implicit || s.RequireTLS != tc.required || s.Auth != tc.auth || (s.RootCAs != nil) != tc.ca {
			t.Errorf("%s: got %+v", tc.url, s)
		}
		if strings.Contains(s.String(), ":p@") {
			t.Errorf("%s: String() shows the password: %s", tc.url, s)
		}
	}
}
