package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	netmail "net/mail"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
	gosmtp "github.com/wneessen/go-mail/smtp"
)

// SMTP sends through an SMTP server with github.com/wneessen/go-mail,
// which brings the connection, the TLS policies and the authentication
// mechanisms. The message goes out as Message.Bytes renders it, byte for
// byte: the library writes it through its DATA writer and re-encodes
// nothing, so what the server receives is what the outbox would hold.
//
// An SMTP is safe for concurrent use: each Send opens its own connection.
type SMTP struct {
	// Host and Port name the server.
	Host string
	Port int
	// Username and Password, when Username is set, authenticate with
	// Auth's mechanism.
	Username string
	Password string
	// Auth is the SASL mechanism: AuthAuto (the strongest the server
	// offers, in the order SCRAM, NTLM, CRAM-MD5, PLAIN, LOGIN; PLAIN
	// and LOGIN only over TLS or to a relay on this machine, see
	// localRelay), AuthPlain, AuthLogin or AuthCramMD5.
	Auth string
	// ImplicitTLS speaks TLS from the first byte (smtps, port 465);
	// otherwise STARTTLS is used when the server offers it, and
	// RequireTLS refuses a server that does not.
	ImplicitTLS bool
	RequireTLS  bool
	// RootCAs verifies the server's certificate; nil is the system's
	// trusted CAs.
	RootCAs *x509.CertPool
	// Timeout bounds each step of a send (default 15 s).
	Timeout time.Duration
}

// Authentication mechanisms (the ?auth= values of the SMTP URL).
const (
	AuthAuto    = "auto"
	AuthPlain   = "plain"
	AuthLogin   = "login"
	AuthCramMD5 = "cram-md5"
)

// authMechanisms maps the ?auth= values to the SASL mechanism each
// forces ("" for auto).
var authMechanisms = map[string]string{
	AuthAuto:    "",
	AuthPlain:   "PLAIN",
	AuthLogin:   "LOGIN",
	AuthCramMD5: "CRAM-MD5",
}

// The mechanisms AuthAuto picks from, strongest first: over TLS, and
// over a connection that is not encrypted (no channel binding, and
// PLAIN and LOGIN only to a local relay).
var (
	autoOverTLS   = []string{"SCRAM-SHA-256-PLUS", "SCRAM-SHA-256", "SCRAM-SHA-1-PLUS", "SCRAM-SHA-1", "NTLM", "CRAM-MD5", "PLAIN", "LOGIN"}
	autoCleartext = []string{"SCRAM-SHA-256", "SCRAM-SHA-1", "NTLM", "CRAM-MD5"}
)

var _ Transport = (*SMTP)(nil)

// NewSMTP parses the SMTP URL (LATCHKEY_SMTP_URL):
//
//	smtp://[user:pass@]host[:port][?tls=opportunistic|required][&auth=...][&ca=FILE]
//	smtps://[user:pass@]host[:port][?auth=...][&ca=FILE]
//
// smtp is port 587 with STARTTLS when offered (tls=required: refuse a
// server without it); smtps is implicit TLS on port 465. auth is auto
// (default), plain, login or cram-md5. ca names a PEM file of CA
// certificates trusted besides the system's, read here. Errors never
// repeat the URL, which may hold a password.
func NewSMTP(rawURL string) (*SMTP, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("smtp url: not a URL (want smtp://user:pass@host:port or smtps://...)")
	}
	s := &SMTP{Auth: AuthAuto}
	switch u.Scheme {
	case "smtp":
		s.Port = 587
	case "smtps":
		s.Port = 465
		s.ImplicitTLS = true
	default:
		return nil, errors.New("smtp url: scheme must be smtp or smtps")
	}
	if u.Opaque != "" {
		return nil, errors.New("smtp url: want smtp://host or smtps://host (the // is missing)")
	}
	if s.Host = u.Hostname(); s.Host == "" {
		return nil, errors.New("smtp url: host is missing")
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, errors.New("smtp url: port must be 1 to 65535")
		}
		s.Port = n
	}
	if u.Path != "" && u.Path != "/" {
		return nil, errors.New("smtp url: must not have a path")
	}
	if u.Fragment != "" {
		return nil, errors.New("smtp url: must not have a fragment")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, errors.New("smtp url: the query is malformed")
	}
	for k, v := range q {
		if len(v) > 1 {
			return nil, fmt.Errorf("smtp url: %s is given twice", k)
		}
		switch k {
		case "tls":
			switch v[0] {
			case "", "opportunistic":
			case "required":
				if s.ImplicitTLS {
					return nil, errors.New("smtp url: tls= applies to smtp:// (STARTTLS); smtps:// is always TLS")
				}
				s.RequireTLS = true
			default:
				return nil, errors.New("smtp url: tls must be opportunistic or required")
			}
		case "auth":
			a := strings.ToLower(v[0])
			if _, ok := authMechanisms[a]; !ok {
				return nil, errors.New("smtp url: auth must be auto, plain, login or cram-md5")
			}
			s.Auth = a
		case "ca":
			if err := s.AddCAFile(v[0]); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("smtp url: unknown parameter %q (known: tls, auth, ca)", k)
		}
	}
	if u.User != nil {
		s.Username = u.User.Username()
		s.Password, _ = u.User.Password()
	}
	return s, nil
}

// AddCAFile trusts the CA certificates in the PEM file at path, besides
// the system's (LATCHKEY_SMTP_CA_FILE and the URL's ?ca=). The error
// names the file and what is wrong with it.
func (s *SMTP) AddCAFile(path string) error {
	if path == "" {
		return errors.New("smtp CA file: the path is empty")
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("smtp CA file: %w", err)
	}
	if s.RootCAs == nil {
		if s.RootCAs, err = x509.SystemCertPool(); err != nil || s.RootCAs == nil {
			s.RootCAs = x509.NewCertPool()
		}
	}
	if !s.RootCAs.AppendCertsFromPEM(pem) {
		return fmt.Errorf("smtp CA file %s: no PEM certificate in it", path)
	}
	return nil
}

// String describes the server for logs: scheme, user, host and port,
// never the password.
func (s *SMTP) String() string {
	u := url.URL{Scheme: "smtp", Host: net.JoinHostPort(s.Host, strconv.Itoa(s.Port))}
	if s.ImplicitTLS {
		u.Scheme = "smtps"
	}
	if s.Username != "" {
		u.User = url.User(s.Username)
	}
	return u.String()
}

// Send implements Transport. It returns a *ConfigError when the settings
// are at fault (credentials refused, certificate not trusted, TLS
// required but not offered, sender refused), a *PermanentError when the
// server refuses this message for good (a 5xx answer to RCPT or DATA),
// and any other error for a failure worth retrying.
func (s *SMTP) Send(ctx context.Context, m *Message) error {
	from, err := netmail.ParseAddress(m.From)
	if err != nil {
		return &ConfigError{Err: fmt.Errorf("smtp: the sender address is not valid: %w", err)}
	}
	c, err := gomail.NewClient(s.Host, s.options()...)
	if err != nil {
		return &ConfigError{Err: fmt.Errorf("smtp: %w", err)}
	}
	client, err := c.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return classifyConnect(err)
	}
	defer client.Close()
	if err := s.authenticate(client); err != nil {
		return classifyConnect(err)
	}
	// The envelope addresses go in angle brackets, without names.
	if err := client.Mail((&netmail.Address{Address: from.Address}).String()); err != nil {
		return classifyReply("MAIL FROM", err, true)
	}
	if err := client.Rcpt((&netmail.Address{Address: m.To}).String()); err != nil {
		return classifyReply("RCPT TO", err, false)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := client.UpdateDeadline(s.timeout()); err != nil {
		return fmt.Errorf("smtp: %w", err)
	}
	w, err := client.Data()
	if err != nil {
		return classifyReply("DATA", err, false)
	}
	if _, err := w.Write(m.Bytes()); err != nil {
		return classifyReply("DATA", err, false)
	}
	if err := w.Close(); err != nil {
		return classifyReply("DATA", err, false)
	}
	client.Quit() // the message is accepted; a failed QUIT changes nothing
	return nil
}

func (s *SMTP) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return 15 * time.Second
}

// options turns s into go-mail's client options: the connection and
// TLS, not the authentication (authenticate).
func (s *SMTP) options() []gomail.Option {
	tlsConfig := &tls.Config{ServerName: s.Host, RootCAs: s.RootCAs, MinVersion: tls.VersionTLS12}
	// The dialer is ours: go-mail joins host and port with a bare colon,
	// which an IPv6 address (::1) does not survive. It speaks TLS from
	// the first byte for smtps; WithSSL then keeps go-mail from trying
	// STARTTLS on top.
	addr := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		d := &net.Dialer{}
		if s.ImplicitTLS {
			return (&tls.Dialer{NetDialer: d, Config: tlsConfig}).DialContext(ctx, network, addr)
		}
		return d.DialContext(ctx, network, addr)
	}
	opts := []gomail.Option{
		gomail.WithPort(s.Port),
		gomail.WithTimeout(s.timeout()),
		gomail.WithTLSConfig(tlsConfig),
		gomail.WithDialContextFunc(dial),
	}
	switch {
	case s.ImplicitTLS:
		opts = append(opts, gomail.WithSSL())
	case s.RequireTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	default:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	return opts
}

// localRelay reports whether host names this machine the way Go's
// net/smtp trusts with a password in clear text: localhost, 127.0.0.1 or
// ::1. Nothing between latchkey and such a relay can read the
// connection; anywhere else a password goes over TLS only (or by
// CRAM-MD5, which never sends it).
func localRelay(host string) bool {
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// authenticate logs in with the URL's credentials, if any, by the
// mechanism ?auth= forces or, for auto, the strongest the server offers
// that may go over this connection (autoOverTLS, autoCleartext, and
// PLAIN and LOGIN to a local relay). The library's PLAIN and LOGIN
// refuse, themselves, to send a password in clear text to any other
// host (gosmtp.ErrUnencrypted).
func (s *SMTP) authenticate(c *gosmtp.Client) error {
	if s.Username == "" {
		return nil
	}
	ok, list := c.Extension("AUTH")
	if !ok {
		return errors.New("the server offers no AUTH, but the SMTP URL has a user name (remove it, or check the port)")
	}
	offered := strings.Fields(strings.ToUpper(list))
	state, encrypted := c.TLSConnectionState()
	mech := authMechanisms[s.Auth]
	if mech == "" {
		prefs := autoOverTLS
		if !encrypted {
			prefs = autoCleartext
			if localRelay(s.Host) {
				prefs = append(slices.Clip(prefs), "PLAIN", "LOGIN")
			}
		}
		for _, m := range prefs {
			if slices.Contains(offered, m) {
				mech = m
				break
			}
		}
		if mech == "" {
			if !encrypted && (slices.Contains(offered, "PLAIN") || slices.Contains(offered, "LOGIN")) {
				return gosmtp.ErrUnencrypted
			}
			return fmt.Errorf("the server offers no AUTH mechanism latchkey speaks (it offers %s)", strings.Join(offered, " "))
		}
	} else if !slices.Contains(offered, mech) {
		return fmt.Errorf("the server does not offer AUTH %s, which ?auth= asks for (it offers %s)", mech, strings.Join(offered, " "))
	}
	var a gosmtp.Auth
	switch mech {
	case "SCRAM-SHA-256-PLUS":
		a = gosmtp.ScramSHA256PlusAuth(s.Username, s.Password, &state)
	case "SCRAM-SHA-256":
		a = gosmtp.ScramSHA256Auth(s.Username, s.Password)
	case "SCRAM-SHA-1-PLUS":
		a = gosmtp.ScramSHA1PlusAuth(s.Username, s.Password, &state)
	case "SCRAM-SHA-1":
		a = gosmtp.ScramSHA1Auth(s.Username, s.Password)
	case "NTLM":
		a = gosmtp.NTLMAuth(s.Username, s.Password, "")
	case "CRAM-MD5":
		a = gosmtp.CRAMMD5Auth(s.Username, s.Password)
	case "PLAIN":
		a = gosmtp.PlainAuth("", s.Username, s.Password, s.Host, false)
	case "LOGIN":
		a = gosmtp.LoginAuth(s.Username, s.Password, s.Host, false)
	}
	if err := c.Auth(a); err != nil {
		return fmt.Errorf("AUTH %s: %w", mech, err)
	}
	return nil
}

// ConfigError marks a failure that the mail settings cause, not the
// message: the server refused the credentials or offers no mechanism
// they may go by, its certificate is not trusted, TLS was required and
// not offered, or the server refused the sender. Every message would
// fail the same way until the settings change, so the queue keeps the
// message, retries it on its usual schedule and reports the error
// (Queue.ConfigError) instead of dropping it.
type ConfigError struct{ Err error }

// Error is the underlying failure's text.
func (e *ConfigError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying failure.
func (e *ConfigError) Unwrap() error { return e.Err }

// IsConfig reports whether err is a ConfigError.
func IsConfig(err error) bool {
	var c *ConfigError
	return errors.As(err, &c)
}

// classifyConnect sorts a failure while connecting, greeting, starting
// TLS or authenticating: a certificate the CAs do not trust, a 5xx reply
// (AUTH refused), or a refusal by the library (no mechanism in common,
// TLS required but not offered, credentials that would go in clear text)
// is a ConfigError; a network failure or a 4xx reply is transient.
func classifyConnect(err error) error {
	var (
		reply   *textproto.Error
		certErr *tls.CertificateVerificationError
		netErr  net.Error
	)
	switch {
	case errors.As(err, &certErr):
		return &ConfigError{Err: fmt.Errorf("smtp: the server's certificate is not trusted (set ?ca= on the SMTP URL or LATCHKEY_SMTP_CA_FILE for a private CA): %w", certErr.Err)}
	case errors.As(err, &reply):
		if reply.Code >= 500 {
			return &ConfigError{Err: fmt.Errorf("smtp: the server refused the login or the connection (check the SMTP user, password and ?auth=): %w", err)}
		}
		return fmt.Errorf("smtp: %w", err)
	case errors.As(err, &netErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("smtp: %w", err)
	case errors.Is(err, gosmtp.ErrUnencrypted):
		return &ConfigError{Err: errors.New("smtp: the connection is not encrypted, so the password is not sent (use TLS or ?auth=cram-md5; only a relay named localhost, 127.0.0.1 or ::1 gets it in clear text)")}
	}
	var tlsRecord tls.RecordHeaderError
	if errors.As(err, &tlsRecord) {
		return &ConfigError{Err: errors.New("smtp: the server does not speak TLS on this port (smtps:// is implicit TLS, usually port 465; smtp:// uses STARTTLS)")}
	}
	return &ConfigError{Err: fmt.Errorf("smtp: %w", err)}
}

// classifyReply sorts a failed MAIL, RCPT or DATA: a 5xx reply is
// permanent for the message, except at MAIL FROM, where it refuses the
// configured sender or asks for authentication (a ConfigError when
// senderStep); anything else is transient.
func classifyReply(step string, err error, senderStep bool) error {
	var reply *textproto.Error
	if errors.As(err, &reply) && reply.Code >= 500 {
		if senderStep {
			return &ConfigError{Err: fmt.Errorf("smtp %s: the server refused the sender or wants authentication: %w", step, err)}
		}
		return &PermanentError{Err: fmt.Errorf("smtp %s: %w", step, err)}
	}
	return fmt.Errorf("smtp %s: %w", step, err)
}
