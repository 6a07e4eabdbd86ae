package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/smtp"
	"net/textproto"
	"net/url"
	"time"
)

// SMTP sends through an SMTP server. With ImplicitTLS it speaks TLS from
// the first byte (smtps, port 465); otherwise it upgrades with STARTTLS
// whenever the server offers it, and refuses to send credentials over a
// connection that is not encrypted (except to localhost, as net/smtp does).
type SMTP struct {
	// Addr is host:port.
	Addr        string
	Username    string
	Password    string
	ImplicitTLS bool
	// RequireTLS fails a send when the server does not offer STARTTLS.
	RequireTLS bool
	// TLSConfig overrides the TLS settings (tests trust their own CA).
	TLSConfig *tls.Config
	// Timeout bounds one whole send (default 30 s).
	Timeout time.Duration
	// HelloName is the name given in EHLO (default "localhost").
	HelloName string
}

// NewSMTP parses LATCHKEY_SMTP_URL: smtp://[user:pass@]host[:port] (port
// 587 by default; ?tls=required refuses servers without STARTTLS) or
// smtps://[user:pass@]host[:port] (implicit TLS, port 465). Errors never
// repeat the URL, which may hold a password.
func NewSMTP(rawURL string) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("smtp url: not a URL (want smtp://user:pass@host:port or smtps://...)")
	}
	s := &SMTP{}
	port := ""
	switch u.Scheme {
	case "smtp":
		port = "587"
	case "smtps":
		port = "465"
		s.ImplicitTLS = true
	default:
		return nil, errors.New("smtp url: scheme must be smtp or smtps")
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("smtp url: host is missing")
	}
	if u.Port() != "" {
		port = u.Port()
	}
	if u.Path != "" && u.Path != "/" {
		return nil, errors.New("smtp url: must not have a path")
	}
	switch v := u.Query().Get("tls"); v {
	case "", "opportunistic":
	case "required":
		s.RequireTLS = true
	default:
		return nil, errors.New("smtp url: tls must be required or opportunistic")
	}
	s.Addr = net.JoinHostPort(host, port)
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	return s, nil
}

// Send implements Transport. An SMTP 5xx reply is a PermanentError.
func (s *SMTP) Send(ctx context.Context, m *Message) error {
	timeout := s.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return err
	}
	cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	if s.TLSConfig != nil {
		cfg = s.TLSConfig.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName = host
		}
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("smtp: dial %s: %w", s.Addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	// Closing the connection unblocks any read when ctx is cancelled.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if s.ImplicitTLS {
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("smtp: tls: %w", err)
		}
		conn = tc
	}
	c, err := smtp.NewClient(conn, host)
	if err != nil {
		return classify("greeting", err)
	}
	defer c.Close()
	hello := s.HelloName
	if hello == "" {
		hello = "localhost"
	}
	if err := c.Hello(hello); err != nil {
		return classify("EHLO", err)
	}
	if !s.ImplicitTLS {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(cfg); err != nil {
				return classify("STARTTLS", err)
			}
		} else if s.RequireTLS {
			return errors.New("smtp: server does not offer STARTTLS and tls=required")
		}
	}
	if s.Username != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return errors.New("smtp: server does not offer AUTH but credentials are configured")
		}
		if err := c.Auth(smtp.PlainAuth("", s.Username, s.Password, host)); err != nil {
			return classify("AUTH", err)
		}
	}
	if err := c.Mail(bareAddr(m.From)); err != nil {
		return classify("MAIL FROM", err)
	}
	if err := c.Rcpt(m.To); err != nil {
		return classify("RCPT TO", err)
	}
	w, err := c.Data()
	if err != nil {
		return classify("DATA", err)
	}
	if _, err := w.Write(m.Bytes()); err != nil {
		return classify("DATA", err)
	}
	if err := w.Close(); err != nil {
		return classify("DATA", err)
	}
	c.Quit()
	return nil
}

// classify wraps an SMTP error with the step that failed; 5xx replies
// are permanent.
func classify(step string, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) && te.Code >= 500 {
		return &PermanentError{Err: fmt.Errorf("smtp %s: %w", step, err)}
	}
	return fmt.Errorf("smtp %s: %w", step, err)
}

// bareAddr returns the address inside "Name <addr>", or s itself.
func bareAddr(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '<' {
			if j := len(s) - 1; s[j] == '>' {
				return s[i+1 : j]
			}
		}
	}
	return s
}
