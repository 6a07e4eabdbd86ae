package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	netmail "net/mail"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"latchkey/auth"
	"latchkey/auth/sms"
	"latchkey/auth/social"
	"latchkey/httpapi"
	"latchkey/internal/autotls"
	"latchkey/internal/background"
	"latchkey/internal/offsite"
	"latchkey/mail"
	"latchkey/store"
	"latchkey/store/bolt"
	"latchkey/webhook"
)

// Main is the running server: store, service, background tasks and HTTP
// listener.
// Tests build one with a config and run it on 127.0.0.1:0.
type Main struct {
	Config Config
	// Stdout receives the first-start secrets (printed once).
	Stdout io.Writer
	// Logger is built from the config by ParseFlags, or set by tests.
	Logger *slog.Logger
	// Now is the clock (tests inject one).
	Now func() time.Time

	DB      store.DB
	Service *auth.Service
	Server  *httpapi.Server
	Mail    *mail.Queue
	Hooks   *webhook.Worker
	Metrics *httpapi.Metrics
	// Backups are the off-site backups (--backup-to); nil without them.
	Backups *offsite.Backups

	// Getenv reads the provider settings not covered by flags
	// (LATCHKEY_TWILIO_*); ParseFlags sets it.
	Getenv func(string) string

	http     *http.Server
	listener net.Listener
	// metricsHTTP serves GET /metrics without authentication on
	// --metrics-addr; nil when that is empty.
	metricsHTTP     *http.Server
	metricsListener net.Listener
	// HTTPS (--tls-domain or --tls-cert): acme is the ACME certificates
	// (nil without --tls-domain); redirectHTTP serves the challenges and
	// the redirect to HTTPS on httpListener (--http-addr); nil without.
	acme         *autotls.ACME
	redirectHTTP *http.Server
	httpListener net.Listener
	// acmeObtain bounds the wait for certificates at start (0: the
	// default, acmeObtainTimeout; tests shorten it).
	acmeObtain time.Duration
	// tasks are main's own background work (the sweeps); the mail queue
	// and the webhook worker run their own.
	tasks []*background.Task
	// leases are this replica's leases on the background tasks that run
	// on one replica at a time (sweep, mail, webhooks).
	leases *background.Leases
	// unwatch ends main's subscription to the store's changes.
	unwatch func()

	ready atomic.Bool

	// For benchmarks: a mail transport used instead of the configured
	// one, the store's ObserveBatch, and a second ObserveCommit.
	mailOverride  mail.Transport
	observeBatch  func(durable, answered time.Duration)
	observeCommit func(time.Duration)
	// For tests on a database: the outbox directory (default: see
	// outboxDir).
	outbox string
	// addrFile is the address file this server wrote (writeAddrFile),
	// removed by Close.
	addrFile string
	// backupRetries is how many times the S3 client tries a request
	// (0: its default; tests set 1).
	backupRetries int
	// storeNote is the start-up log line that says which of --data and
	// --database-url, both set, is not used (pickStore); empty when only
	// one is set.
	storeNote string
}

// defaultMailFrom is the sender address when none is configured.
const defaultMailFrom = "latchkey@localhost"

// NewMain returns a Main with defaults.
func NewMain() *Main {
	return &Main{Stdout: os.Stdout, Now: time.Now, Getenv: os.Getenv, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
}

// Run checks the configuration, listens, opens the store, creates
// first-start state, starts the background tasks and the HTTP server, and
// returns once the server is listening. Every setting is checked and the
// address is bound before the data file is created or touched, so a
// mistake leaves nothing behind: no data file, no key file, no secret
// printed. Errors are one line.
func (m *Main) Run(ctx context.Context) error {
	chk, err := m.checkConfig()
	if err != nil {
		return err
	}
	// Libraries that log through slog's default logger (zitadel/oidc's
	// op, for the OpenID providers' refused requests) log through the
	// server's, at its level and in its format.
	slog.SetDefault(m.Logger)
	if m.storeNote != "" {
		m.Logger.Info(m.storeNote)
	}
	c := m.Config
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return listenError("--addr", c.Addr, err)
	}
	m.listener = ln
	if c.MetricsAddr != "" {
		if m.metricsListener, err = net.Listen("tcp", c.MetricsAddr); err != nil {
			return listenError("--metrics-addr", c.MetricsAddr, err)
		}
	}
	if chk.tls != nil && chk.tls.httpAddr != "" {
		if m.httpListener, err = net.Listen("tcp", chk.tls.httpAddr); err != nil {
			return listenError("--http-addr", chk.tls.httpAddr, err)
		}
	}
	dsn, keyFile, fresh := c.DatabaseURL, "", false
	if dsn == "" {
		// Only the header here (a truncated file would crash bbolt): the
		// store's open checks the rest before it writes anything, so the
		// file is opened once.
		if fresh, err = bolt.CheckHeader(c.Data); err != nil {
			return err
		}
		dsn, keyFile = c.Data, c.Data+".key"
	}
	if c.MasterKey == "" && !fresh && keyFile != "" {
		// An existing data file needs the key it was written with: never
		// generate a fresh one beside it.
		if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
			// Another program's file is named as such rather than as
			// lacking a key. The lock wait is 1 s so that a second serve
			// on the same file exits well within 2 s.
			if _, err := bolt.CheckFile(c.Data, time.Second); err != nil {
				return err
			}
			return fmt.Errorf("master key file %s is missing: data file %s was written under it (restore the file or set LATCHKEY_MASTER_KEY)", keyFile, c.Data)
		}
	}
	masterKey, _, err := store.LoadMasterKey(c.MasterKey, keyFile)
	if err != nil {
		return err
	}
	keys, err := store.NewKeyring(masterKey)
	if err != nil {
		return err
	}
	m.Metrics = httpapi.NewMetrics(httpapi.MetricsOptions{Version: Version(), Now: m.Now})
	observeCommit := m.Metrics.ObserveCommit
	if m.observeCommit != nil {
		observeCommit = func(d time.Duration) { m.Metrics.ObserveCommit(d); m.observeCommit(d) }
	}
	db, _, err := store.Open(ctx, dsn, store.Options{LockTimeout: time.Second, ObserveCommit: observeCommit,
		Logger: m.Logger, Now: m.Now, ObserveBatch: m.observeBatch, FeedInterval: chk.feedInterval})
	if err != nil {
		return err
	}
	m.DB = db
	if err := store.CheckKeyring(ctx, db, keys); err != nil {
		return err
	}
	baseURL := chk.baseURL
	switch {
	case baseURL != "":
	case chk.tls != nil:
		baseURL = httpsBaseURL(chk.tls, ln.Addr())
	default:
		baseURL = "http://" + ln.Addr().String()
	}

	svc, err := auth.New(db, keys, auth.Config{
		BaseURL: baseURL, AdminToken: c.AdminToken, Now: m.Now, Logger: m.Logger, Wake: m.wake, SMS: chk.sms,
		Observer: m.Metrics, OAuth: &social.Transport{AllowPrivate: c.OAuthAllowPrivate}, BuiltInMail: httpapi.BuiltInMail,
	})
	if err != nil {
		return err
	}
	m.Service = svc
	initialized, err := svc.Initialized(ctx)
	if err != nil {
		return err
	}
	if !initialized {
		if err := m.firstStart(ctx, baseURL); err != nil {
			return err
		}
	} else if err := m.ensureAdminToken(ctx); err != nil {
		return err
	}

	var outbox httpapi.Outbox
	switch t := chk.mail.(type) {
	case *mail.SMTP:
		m.Logger.Info("mail goes through SMTP", "server", t.String(), "auth", t.Auth, "implicit_tls", t.ImplicitTLS, "require_starttls", t.RequireTLS)
		outbox.SMTP = net.JoinHostPort(t.Host, strconv.Itoa(t.Port))
	case *mail.Outbox:
		outbox.Dir, outbox.PerReplica = t.Dir, c.DatabaseURL != ""
		dir := t.Dir
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		m.Logger.Info("mail goes to the outbox: no SMTP server is configured (--smtp-url)", "dir", dir,
			"dashboard", baseURL+"/admin/outbox", "mail_log", c.MailLog)
	}
	hooks := &webhook.Service{DB: db, Keys: keys, Now: m.Now, AllowPrivate: c.WebhookAllowPrivate}
	if m.mailOverride != nil {
		chk.mail = m.mailOverride
	}
	m.Mail = &mail.Queue{DB: db, Keys: keys, Transport: chk.mail, From: c.MailFrom, Now: m.Now, Logger: m.Logger}
	// GET /ready also checks the store and the background tasks; the
	// dashboard shows the same failures, mail's in full (Detail).
	readyChecks := []httpapi.ReadyCheck{{Name: "mail", Check: m.mailReady, Detail: m.Mail.ConfigError}}
	var backupTask *background.Task
	if chk.backups != nil {
		var check httpapi.ReadyCheck
		if backupTask, check, err = m.startBackups(chk.backups); err != nil {
			return err
		}
		readyChecks = append(readyChecks, check)
	}
	m.Server = httpapi.New(svc, httpapi.Config{TrustedProxies: chk.proxies, Logger: m.Logger, Ready: m.ready.Load, Webhooks: hooks,
		Metrics: m.Metrics, Outbox: outbox, ReadyChecks: readyChecks})
	// The webhook worker yields to the API while it is saturated. It
	// also delivers the OpenID back-channel logout tokens, which the
	// service signs at each attempt.
	m.Hooks = &webhook.Worker{DB: db, Keys: keys, Now: m.Now, Logger: m.Logger, AllowPrivate: c.WebhookAllowPrivate,
		Busy: m.Server.Busy, Outcome: m.Metrics.WebhookOutcome, Backchannel: svc.BackchannelLogoutDelivery}
	// Among replicas sharing a database, the sweep of the store, mail and
	// webhook delivery each run on the replica holding their lease (on a
	// data file, this process always does); what each replica keeps in
	// memory (last-seen times, rate windows, suppressed-failure counts)
	// each flushes and forgets itself.
	sweep := &background.Task{Name: "sweep", Interval: time.Minute, Logger: m.Logger, Quiet: store.WriteFailed, Run: svc.SweepStore}
	m.leases = &background.Leases{Store: db, TTL: chk.leaseTTL, Logger: m.Logger, Quiet: quietLease}
	m.leases.Add(leaseSweep, sweep.Wake)
	m.leases.Add(leaseMail, m.Mail.Wake)
	m.leases.Add(leaseWebhooks, m.Hooks.Wake)
	sweep.Hold, m.Mail.Hold, m.Hooks.Hold = m.leases.Gate(leaseSweep), m.leases.Gate(leaseMail), m.leases.Gate(leaseWebhooks)
	m.tasks = []*background.Task{
		// A failed store write is logged by the store, once a minute
		// with the count (Quiet).
		sweep,
		{Name: "last-seen", Interval: time.Minute, Logger: m.Logger, Quiet: store.WriteFailed, Run: svc.FlushLastSeen},
		{Name: "memory", Interval: time.Minute, Logger: m.Logger, Quiet: store.WriteFailed, Run: svc.SweepMemory},
	}
	if backupTask != nil {
		m.tasks = append(m.tasks, backupTask)
	}
	var tlsConfig *tls.Config
	if chk.tls != nil {
		tlsConfig = m.startTLS(chk.tls, &autotls.Cache{DB: db, Keys: keys})
	}
	if _, ok := db.(store.Shared); ok {
		// Replicas publish and read their request counts (the rate
		// limits across replicas).
		m.tasks = append(m.tasks, &background.Task{Name: "limits", Interval: auth.SyncInterval, Logger: m.Logger, Run: svc.SyncLimits})
	}
	if err := m.leases.Start(ctx); err != nil {
		m.Logger.Warn("leases: first round failed; retried", "err", err)
	}
	// Mail queued and events written on other replicas wake this one's
	// queue and worker (when it holds their lease) through the feed.
	// Those queued here wake them directly (m.wake, after the commit):
	// while this replica holds a task's lease firmly, its transactions
	// write no wake-up rows for it.
	if sh, ok := db.(store.Shared); ok {
		sh.WakeHere(store.ChangeMail, m.leases.Firm(leaseMail))
		sh.WakeHere(store.ChangeOutbox, m.leases.Firm(leaseWebhooks))
	}
	m.unwatch = db.Watch(func(c store.Change) {
		switch c.Kind {
		case store.ChangeMail:
			m.Mail.Wake()
		case store.ChangeOutbox:
			m.Hooks.Wake()
		}
	})
	for _, t := range m.tasks {
		t.Start()
	}
	m.Mail.Start()
	m.Hooks.Start()
	m.ready.Store(true)

	m.http = &http.Server{
		Handler:           m.Server,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		// 64 KiB of request line and headers at most (431 beyond).
		MaxHeaderBytes: httpapi.MaxHeaderBytes,
		ErrorLog:       serverErrorLog(m.Logger),
		TLSConfig:      tlsConfig,
	}
	go func() {
		var err error
		if tlsConfig != nil {
			err = m.http.ServeTLS(ln, "", "")
		} else {
			err = m.http.Serve(ln)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("http server", "err", err)
		}
	}()
	where := []any{"data", c.Data}
	if c.DatabaseURL != "" {
		where = []any{"database", redactURL(c.DatabaseURL)}
	}
	switch {
	case m.acme != nil:
		where = append(where, "tls", "acme", "domains", strings.Join(m.acme.Domains(), ","))
	case chk.tls != nil:
		where = append(where, "tls", "files")
	}
	m.Logger.Info("latchkey listening", append([]any{"addr", ln.Addr().String(), "base_url", baseURL}, where...)...)
	if c.DatabaseURL == "" {
		if chk.tls != nil {
			m.writeAddrURL(baseURL)
		} else {
			m.writeAddrFile(ln.Addr())
		}
	}
	if m.metricsListener != nil {
		m.serveMetrics()
	}
	if m.httpListener != nil {
		m.serveHTTPRedirect(baseURL)
	}
	return m.obtainCertificates()
}

// mailReady is the readiness check of mail: not ready while the SMTP
// server refuses the configuration (mail.Queue.ConfigError). /ready is
// unauthenticated, so it says which kind of failure, not the server's
// words; the log has those.
func (m *Main) mailReady() error {
	if m.Mail.ConfigError() != nil {
		return errors.New("the SMTP server refuses the configuration (credentials or certificate; the log has the details)")
	}
	return nil
}

// serveMetrics serves GET /metrics, open, on the --metrics-addr listener
// (and nothing else: 404).
func (m *Main) serveMetrics() {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Metrics.Handler())
	m.metricsHTTP = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
	}
	ln := m.metricsListener
	go func() {
		if err := m.metricsHTTP.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("metrics server", "err", err)
		}
	}()
	m.Logger.Info("metrics listening", "addr", ln.Addr().String())
}

// MetricsAddr returns the address of the --metrics-addr listener, or ""
// when there is none.
func (m *Main) MetricsAddr() string {
	if m.metricsListener == nil {
		return ""
	}
	return m.metricsListener.Addr().String()
}

// checked is the configuration checkConfig derived.
type checked struct {
	baseURL string // without a trailing slash; empty: http://<listen address>
	proxies []netip.Prefix
	sms     auth.SMSSender
	mail    mail.Transport
	// leaseTTL and feedInterval: 0 for the defaults.
	leaseTTL, feedInterval time.Duration
	// backups: nil without --backup-to.
	backups *backupConfig
	// tls: nil without HTTPS.
	tls *tlsSetup
}

// checkConfig checks every setting that ParseFlags does not, touching no
// file: the base URL, the SMTP URL and CA files, the sender address, the
// SMS provider's settings, the trusted proxies, the master key's form
// and the off-site backups' settings.
func (m *Main) checkConfig() (*checked, error) {
	if m.Config.MailFrom == "" {
		m.Config.MailFrom = defaultMailFrom
	}
	c := m.Config
	var out checked
	var err error
	if c.Data == "" && c.DatabaseURL == "" {
		return nil, errors.New("--data must name the data file")
	}
	if c.DatabaseURL != "" && c.MasterKey == "" {
		// Every replica must use the same key: none is generated into a
		// file beside a database.
		return nil, errors.New("--database-url needs --master-key (LATCHKEY_MASTER_KEY), the same on every replica: make one with `openssl rand -base64 32`")
	}
	if out.baseURL, err = checkBaseURL(c.BaseURL); err != nil {
		return nil, err
	}
	if out.tls, err = m.checkTLS(out.baseURL); err != nil {
		return nil, err
	}
	if out.proxies, err = parsePrefixes(c.TrustedProxies); err != nil {
		return nil, err
	}
	if _, err := netmail.ParseAddress(c.MailFrom); err != nil {
		return nil, fmt.Errorf("--mail-from %q is not an email address (want name@example.com or \"Name <name@example.com>\")", c.MailFrom)
	}
	if out.sms, err = m.smsSender(); err != nil {
		return nil, err
	}
	if c.MailLog && c.SMTPURL != "" {
		return nil, errors.New("--mail-log logs codes and links, for development without an SMTP server: it cannot be used with --smtp-url (LATCHKEY_SMTP_URL)")
	}
	if out.mail, err = m.mailTransport(); err != nil {
		return nil, err
	}
	if c.MasterKey != "" {
		if _, _, err := store.LoadMasterKey(c.MasterKey, ""); err != nil {
			return nil, fmt.Errorf("--master-key: %w", err)
		}
	}
	if out.leaseTTL, err = positiveDuration("--lease-ttl", c.LeaseTTL, 10*time.Millisecond, "15s"); err != nil {
		return nil, err
	}
	if out.feedInterval, err = positiveDuration("--feed-interval", c.FeedInterval, time.Millisecond, "250ms"); err != nil {
		return nil, err
	}
	if out.backups, err = m.checkBackups(); err != nil {
		return nil, err
	}
	return &out, nil
}

// checkBaseURL checks --base-url: http or https, a host, nothing but an
// origin (a trailing slash is dropped). Empty stays empty.
func checkBaseURL(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.Hostname() == "" {
		return "", fmt.Errorf("--base-url %q must start with http:// or https:// and name a host, e.g. https://auth.example.com", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || (u.Path != "" && u.Path != "/") {
		return "", fmt.Errorf("--base-url %q must be an origin: scheme://host[:port], with no path, query or user", u.Redacted())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("--base-url %q: the port must be 1 to 65535", raw)
		}
	}
	return strings.TrimSuffix(raw, "/"), nil
}

// listenError says why a listen address (flag --addr or --metrics-addr)
// cannot be used, in one line.
func listenError(name, addr string, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	return fmt.Errorf("cannot listen on %s %s: %v", name, addr, err)
}

// smsSender picks the SMS provider; nil is "none".
func (m *Main) smsSender() (auth.SMSSender, error) {
	switch m.Config.SMSProvider {
	case "log":
		return &sms.Log{Logger: m.Logger, Dir: m.outboxDir()}, nil
	case "twilio":
		g := m.Getenv
		return sms.NewTwilio(g("LATCHKEY_TWILIO_ACCOUNT_SID"), g("LATCHKEY_TWILIO_AUTH_TOKEN"), g("LATCHKEY_TWILIO_FROM"), g("LATCHKEY_TWILIO_BASE_URL"))
	}
	return nil, nil
}

// mailTransport is SMTP when --smtp-url is set (with the CA of
// --smtp-ca-file trusted too), else the .eml outbox beside the data file.
// It reads the CA files and touches nothing.
func (m *Main) mailTransport() (mail.Transport, error) {
	if m.Config.SMTPURL == "" {
		if m.Config.SMTPCAFile != "" {
			return nil, errors.New("--smtp-ca-file is set but --smtp-url is empty (mail would go to the outbox)")
		}
		o := &mail.Outbox{Dir: m.outboxDir()}
		if m.Config.MailLog {
			o.Log = m.Logger
		}
		return o, nil
	}
	t, err := mail.NewSMTP(m.Config.SMTPURL)
	if err != nil {
		return nil, err
	}
	if m.Config.SMTPCAFile != "" {
		if err := t.AddCAFile(m.Config.SMTPCAFile); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// outboxDir is where mail and logged text messages are written without
// a provider: <data>.outbox, or ./latchkey.outbox with a database URL.
func (m *Main) outboxDir() string {
	if m.outbox != "" {
		return m.outbox
	}
	if m.Config.DatabaseURL != "" {
		return "latchkey.outbox"
	}
	return m.Config.Data + ".outbox"
}

// The leases of the background tasks that run on one replica at a time.
const (
	leaseSweep    = "sweep"
	leaseMail     = "mail"
	leaseWebhooks = "webhooks"
)

// quietLease tells the lease errors not to log on every renewal: the
// database unreachable, which the store's own calls report.
func quietLease(err error) bool { return errors.Is(err, store.ErrUnavailable) }

// redactURL returns a database URL without its password, for logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// Addr returns the address the server listens on.
func (m *Main) Addr() string { return m.listener.Addr().String() }

// Close stops accepting requests, lets in-flight ones finish (10 s at
// most), stops the background tasks (a mail send or webhook delivery in
// flight is cancelled and stays queued), writes the sessions' last-seen
// times and closes the store.
func (m *Main) Close() error {
	var errs []error
	if m.addrFile != "" {
		// From now on the CLI finds no server here rather than a dying
		// one.
		os.Remove(m.addrFile)
		m.addrFile = ""
	}
	if sh, ok := m.DB.(store.Shared); ok && m.leases != nil {
		// The leases go below: from now on this replica's transactions
		// write their wake-ups for whichever replica takes them.
		sh.WakeHere(store.ChangeMail, nil)
		sh.WakeHere(store.ChangeOutbox, nil)
	}
	if m.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, m.http.Shutdown(ctx))
		cancel()
	} else if m.listener != nil {
		m.listener.Close()
	}
	if m.metricsHTTP != nil {
		m.metricsHTTP.Close()
	} else if m.metricsListener != nil {
		m.metricsListener.Close()
	}
	if m.redirectHTTP != nil {
		m.redirectHTTP.Close()
	} else if m.httpListener != nil {
		m.httpListener.Close()
	}
	if m.unwatch != nil {
		m.unwatch()
	}
	for _, t := range m.tasks {
		t.Close()
	}
	if m.Mail != nil {
		m.Mail.Close()
	}
	if m.Hooks != nil {
		m.Hooks.Close()
	}
	if m.leases != nil {
		// The tasks have stopped: another replica may take them now.
		m.leases.Close()
	}
	if m.Service != nil && m.DB != nil {
		// Requests have stopped: write the last-seen times noted since
		// the last minute's flush, and the suppressed-failure counts.
		errs = append(errs, m.Service.Close())
	}
	if m.DB != nil {
		errs = append(errs, m.DB.Close())
	}
	return errors.Join(errs...)
}

// wake nudges the mail queue and the webhook worker after a commit that
// queued mail or outbox events (auth's Wake). It never blocks. Commits
// made before they exist (first-start state) need none: both run at
// start.
func (m *Main) wake() {
	if m.Mail != nil {
		m.Mail.Wake()
	}
	if m.Hooks != nil {
		m.Hooks.Wake()
	}
}
