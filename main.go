// Command latchkey is a self-hosted authentication service in one binary:
// `latchkey serve` runs it; the other subcommands administer a running
// server through its admin API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	netmail "net/mail"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"latchkey/auth"
	"latchkey/auth/sms"
	"latchkey/auth/social"
	"latchkey/httpapi"
	"latchkey/httpapi/cli"
	"latchkey/internal/background"
	"latchkey/mail"
	"latchkey/store"
	_ "latchkey/store/postgres" // registers the "postgres" driver (--database-url)
	"latchkey/webhook"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(os.Stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	switch args[0] {
	case "version", "--version", "-version":
		printVersion(os.Stdout)
		return 0
	case "compact":
		return runCompact(args[1:], os.Stdout, os.Stderr)
	case "migrate", "copy":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if args[0] == "migrate" {
			return runMigrate(ctx, args[1:], os.Getenv, os.Stdout, os.Stderr)
		}
		return runCopy(ctx, args[1:], os.Getenv, os.Stdout, os.Stderr)
	}
	if args[0] != "serve" {
		env := cli.Env{Getenv: os.Getenv}
		return cli.Run(context.Background(), args, env, os.Stdout, os.Stderr)
	}
	m := NewMain()
	if err := m.ParseFlags(args[1:], os.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(os.Stderr, "latchkey serve: %v\n(latchkey serve --help lists the flags)\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "latchkey:", err)
		m.Close()
		return 1
	}
	<-ctx.Done()
	m.Logger.Info("shutting down")
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "latchkey:", err)
		return 1
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, "latchkey: self-hosted authentication in one binary\n\nUsage:\n")
	cli.Usage(w)
}

// runCompact is `latchkey compact --data FILE --out FILE`: it writes a
// compacted copy of the data file of a stopped server (store.Compact)
// and prints both sizes. Exit codes: 0 done, 1 refused or failed, 2 bad
// usage.
func runCompact(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("latchkey compact", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	data := fs.String("data", os.Getenv("LATCHKEY_DATA"), "")
	out := fs.String("out", "", "")
	help := func(w io.Writer) {
		fmt.Fprint(w, `Usage: latchkey compact --data FILE --out FILE

Write a compacted copy of the data file to a new file: every row, in pages
filled completely, without the free pages the file keeps once it has grown.
Stop the server first; a file in use is refused. The copy is read with the
same master key: move it over the data file (FILE.key stays valid), or copy
FILE.key to OUT.key.

Flags:
  --data FILE   the data file (env LATCHKEY_DATA; default ./latchkey.db)
  --out FILE    the new file (must not exist)
`)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "latchkey compact: %v\n", cli.FlagError(err))
		help(stderr)
		return 2
	}
	if *data == "" {
		*data = "./latchkey.db"
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "latchkey compact: --out FILE is required (and nothing else)")
		help(stderr)
		return 2
	}
	start := time.Now()
	before, after, err := store.Compact(*data, *out, time.Second)
	if errors.Is(err, store.ErrInUse) {
		fmt.Fprintf(stderr, "latchkey compact: %s: %v: stop the server first\n", *data, err)
		return 1
	} else if err != nil {
		fmt.Fprintf(stderr, "latchkey compact: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "Compacted %s (%s) into %s (%s, %.1f%% of it) in %v.\n", *data, sizeText(before), *out, sizeText(after),
		100*float64(after)/float64(max(before, 1)), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "The copy needs the same master key: move it over %s, or copy %s.key to %s.key.\n", *data, *data, *out)
	return 0
}

// sizeText writes n bytes for people: "1.46 GB", "812 KB".
func sizeText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// Config is the server's configuration (the flags of `latchkey serve`).
type Config struct {
	Addr                string
	Data                string
	DatabaseURL         string // when set, the store is this database, not the Data file
	BaseURL             string
	SMTPURL             string
	SMTPCAFile          string
	MailFrom            string
	SMSProvider         string
	AdminToken          string
	MasterKey           string
	TrustedProxies      string
	WebhookAllowPrivate bool
	// OAuthAllowPrivate lets calls to sign-in providers reach private,
	// loopback and link-local addresses.
	OAuthAllowPrivate bool
	LogFormat         string
	MetricsAddr       string
	// Replicas on one database (tuning and tests; see docs/replicas.md):
	// how long a background task's lease lasts, and how often the
	// invalidation feed is read. Durations ("15s", "250ms"); empty: the
	// defaults.
	LeaseTTL     string
	FeedInterval string
}

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

	// Getenv reads the provider settings not covered by flags
	// (LATCHKEY_TWILIO_*); ParseFlags sets it.
	Getenv func(string) string

	http     *http.Server
	listener net.Listener
	// metricsHTTP serves GET /metrics without authentication on
	// --metrics-addr; nil when that is empty.
	metricsHTTP     *http.Server
	metricsListener net.Listener
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

// serveFlag is one flag of `latchkey serve`.
type serveFlag struct {
	name, env string
	arg       string // placeholder in --help ("ADDR"); empty for a boolean
	def       string // the default --help shows
	help      string
	str       *string // the string it sets, nil for the booleans
}

// ParseFlags reads the serve flags, falling back to LATCHKEY_* environment
// variables, then to the defaults: flags beat environment. --help prints
// every flag with its environment variable and default to m.Stdout and
// returns flag.ErrHelp; it never shows a value taken from the
// environment, so no secret reaches the terminal.
func (m *Main) ParseFlags(args []string, getenv func(string) string) error {
	m.Getenv = getenv
	c := &m.Config
	*c = Config{Addr: "127.0.0.1:8080", Data: "./latchkey.db", MailFrom: defaultMailFrom, SMSProvider: "none", LogFormat: "text"}
	flags := []serveFlag{
		{"addr", "LATCHKEY_ADDR", "ADDR", c.Addr, "listen address", &c.Addr},
		{"data", "LATCHKEY_DATA", "FILE", c.Data, "bbolt data file; created on first start", &c.Data},
		{"database-url", "LATCHKEY_DATABASE_URL", "URL", "empty: the --data file", "PostgreSQL database (postgres://user:password@host:5432/dbname?sslmode=...) instead of --data, for several replicas on one database; needs --master-key; both on the command line are refused, and LATCHKEY_DATABASE_URL wins over LATCHKEY_DATA", &c.DatabaseURL},
		{"base-url", "LATCHKEY_BASE_URL", "URL", "http://<addr>", "public origin (http:// or https://, no path) for magic links, JWT iss and WebAuthn", &c.BaseURL},
		{"smtp-url", "LATCHKEY_SMTP_URL", "URL", "empty: mail is written to <data>.outbox/*.eml (./latchkey.outbox with --database-url)", "smtp://user:pass@host:port (STARTTLS when offered) or smtps://... (implicit TLS); options ?tls=opportunistic|required, ?auth=auto|plain|login|cram-md5, ?ca=FILE", &c.SMTPURL},
		{"smtp-ca-file", "LATCHKEY_SMTP_CA_FILE", "FILE", "none: the system's CAs", "PEM file of CA certificates trusted for the SMTP server besides the system's (also ?ca= on --smtp-url)", &c.SMTPCAFile},
		{"mail-from", "LATCHKEY_MAIL_FROM", "ADDRESS", c.MailFrom, "sender address", &c.MailFrom},
		{"sms-provider", "LATCHKEY_SMS_PROVIDER", "NAME", c.SMSProvider, "none, log or twilio", &c.SMSProvider},
		{"admin-token", "LATCHKEY_ADMIN_TOKEN", "TOKEN", "generated, printed once, saved to <data>.admin-token (only printed with --database-url)", "admin bearer token (adm_..., 24+ characters); when set it is neither printed nor written to a file", &c.AdminToken},
		{"master-key", "LATCHKEY_MASTER_KEY", "KEY", "the <data>.key file; required with --database-url", "32-byte key, base64; encrypts secrets at rest", &c.MasterKey},
		{"trusted-proxies", "LATCHKEY_TRUSTED_PROXIES", "CIDRS", "empty", "comma-separated CIDRs whose X-Forwarded-For is believed", &c.TrustedProxies},
		{"webhook-allow-private", "LATCHKEY_WEBHOOK_ALLOW_PRIVATE", "", "false", "let webhooks of both modes target private, loopback and link-local addresses (without it: live mode public only, test mode public and loopback)", nil},
		{"oauth-allow-private", "LATCHKEY_OAUTH_ALLOW_PRIVATE", "", "false", "let calls to sign-in providers (discovery, token, userinfo, JWKS) reach private, loopback and link-local addresses (without it: public addresses only, and loopback for a provider whose issuer is on loopback)", nil},
		{"log-format", "LATCHKEY_LOG_FORMAT", "FORMAT", c.LogFormat, "text or json (log/slog)", &c.LogFormat},
		{"metrics-addr", "LATCHKEY_METRICS_ADDR", "ADDR", "empty: GET /metrics only on --addr, behind the admin token", "also serve GET /metrics, without authentication, on this address (keep it private)", &c.MetricsAddr},
		{"lease-ttl", "LATCHKEY_LEASE_TTL", "DURATION", "15s", "replicas on one database (tuning, tests): how long a replica's lease on a background task (sweep, mail, webhooks) lasts without renewal, renewed every third of it; a dead replica's tasks move to another within about 4/3 of it", &c.LeaseTTL},
		{"feed-interval", "LATCHKEY_FEED_INTERVAL", "DURATION", "250ms", "replicas on one database (tuning, tests): how often a replica reads the invalidation feed, which bounds how late it sees another replica's revocations and changes; caches are bypassed after max(1s, 4 intervals) without a read", &c.FeedInterval},
	}
	// The booleans each flag with no string sets.
	bools := map[string]*bool{"webhook-allow-private": &c.WebhookAllowPrivate, "oauth-allow-private": &c.OAuthAllowPrivate}
	fs := flag.NewFlagSet("latchkey serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var boolNames []string
	for _, f := range flags {
		if f.str != nil {
			fs.StringVar(f.str, f.name, *f.str, f.help)
		} else {
			fs.Var(boolValue{bools[f.name]}, f.name, f.help)
			boolNames = append(boolNames, f.name)
		}
	}
	if err := fs.Parse(joinBoolValues(args, boolNames)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printServeHelp(m.Stdout, flags)
		}
		return cli.FlagError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, f := range flags {
		v := getenv(f.env)
		if set[f.name] || v == "" {
			continue
		}
		if err := fs.Set(f.name, v); err != nil {
			return fmt.Errorf("%s: %q is not valid for --%s", f.env, v, f.name)
		}
	}
	switch c.LogFormat {
	case "text":
		m.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	case "json":
		m.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil))
	default:
		return fmt.Errorf("--log-format must be text or json")
	}
	switch c.SMSProvider {
	case "none", "log", "twilio":
	default:
		return fmt.Errorf("--sms-provider must be none, log or twilio")
	}
	if err := m.pickStore(set, getenv); err != nil {
		return err
	}
	if c.AdminToken != "" && (!strings.HasPrefix(c.AdminToken, "adm_") || len(c.AdminToken) < 24) {
		return fmt.Errorf("--admin-token must start with adm_ and be at least 24 characters")
	}
	return nil
}

// pickStore settles which store --data and --database-url name when
// both are set (set: the flags given on the command line). Both on the
// command line are refused. Otherwise the command line beats the
// environment, and from the environment the database beats the data
// file: the container image and the systemd unit set LATCHKEY_DATA for
// the default store, so LATCHKEY_DATABASE_URL added to them must not be
// refused. The setting left out is cleared and noted for the start-up
// log (storeNote).
func (m *Main) pickStore(set map[string]bool, getenv func(string) string) error {
	c := &m.Config
	envData := getenv("LATCHKEY_DATA") != ""
	switch {
	case c.DatabaseURL == "":
		return nil
	case set["data"] && set["database-url"]:
		return fmt.Errorf("--database-url and --data name two stores: set only one")
	case set["data"]:
		// --data on the command line, LATCHKEY_DATABASE_URL from the
		// environment: the command line wins.
		m.storeNote = "LATCHKEY_DATABASE_URL is not used: --data names the store"
		c.DatabaseURL = ""
		return nil
	}
	if !store.IsURL(c.DatabaseURL) {
		return fmt.Errorf("--database-url must be a postgres:// or postgresql:// URL")
	}
	if envData {
		by := "LATCHKEY_DATABASE_URL"
		if set["database-url"] {
			by = "--database-url"
		}
		m.storeNote = fmt.Sprintf("LATCHKEY_DATA (%s) is not used: %s names the store, a PostgreSQL database", c.Data, by)
	}
	c.Data = ""
	return nil
}

// boolValue is a boolean flag: bare (--flag) it is true; its value, as
// --flag=VALUE, --flag VALUE (joinBoolValues) or from the environment,
// is one of true/false, yes/no, on/off, 1/0 (any case).
type boolValue struct{ b *bool }

// String shows the value (flag.Value).
func (v boolValue) String() string {
	if v.b == nil {
		return "false"
	}
	return strconv.FormatBool(*v.b)
}

// Set parses a boolean word (flag.Value).
func (v boolValue) Set(s string) error {
	b, ok := parseBool(s)
	if !ok {
		return fmt.Errorf("%q is not a boolean (true/false, yes/no, on/off, 1/0)", s)
	}
	*v.b = b
	return nil
}

// IsBoolFlag lets the flag stand alone (--webhook-allow-private).
func (v boolValue) IsBoolFlag() bool { return true }

func parseBool(s string) (value, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "t", "yes", "y", "on", "1":
		return true, true
	case "false", "f", "no", "n", "off", "0":
		return false, true
	}
	return false, false
}

// joinBoolValues rewrites "--flag VALUE" as "--flag=VALUE" for the
// boolean flags named, when VALUE is a boolean word: package flag never
// takes a boolean's value from the next argument, and without this
// "--webhook-allow-private yes" would leave "yes" as a stray argument.
func joinBoolValues(args, names []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if name != a && slices.Contains(names, name) && i+1 < len(args) {
			if _, ok := parseBool(args[i+1]); ok {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// printServeHelp lists the serve flags with their environment variables
// and defaults.
func printServeHelp(w io.Writer, flags []serveFlag) {
	fmt.Fprint(w, "Usage: latchkey serve [flags]\n\nRun the server. Each flag may also be set by its environment variable; a flag\nbeats the environment, which beats the default.\n\nFlags:\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range flags {
		name := "--" + f.name
		if f.arg != "" {
			name += " " + f.arg
		}
		fmt.Fprintf(tw, "  %s\t%s\n  \t(env %s; default %s)\n", name, f.help, f.env, f.def)
	}
	tw.Flush()
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
	dsn, keyFile, fresh := c.DatabaseURL, "", false
	if dsn == "" {
		// The lock wait is 1 s so that, with start-up, a second serve on
		// the same file exits well within 2 s.
		if fresh, err = store.CheckFile(c.Data, time.Second); err != nil {
			return err
		}
		dsn, keyFile = c.Data, c.Data+".key"
	}
	if c.MasterKey == "" && !fresh && keyFile != "" {
		// An existing data file needs the key it was written with: never
		// generate a fresh one beside it.
		if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
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
	if baseURL == "" {
		baseURL = "http://" + ln.Addr().String()
	}

	svc, err := auth.New(db, keys, auth.Config{
		BaseURL: baseURL, AdminToken: c.AdminToken, Now: m.Now, Logger: m.Logger, Wake: m.wake, SMS: chk.sms,
		Observer: m.Metrics, OAuth: &social.Transport{AllowPrivate: c.OAuthAllowPrivate},
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

	if t, ok := chk.mail.(*mail.SMTP); ok {
		m.Logger.Info("mail goes through SMTP", "server", t.String(), "auth", t.Auth, "implicit_tls", t.ImplicitTLS, "require_starttls", t.RequireTLS)
	}
	hooks := &webhook.Service{DB: db, Keys: keys, Now: m.Now, AllowPrivate: c.WebhookAllowPrivate}
	if m.mailOverride != nil {
		chk.mail = m.mailOverride
	}
	m.Mail = &mail.Queue{DB: db, Keys: keys, Transport: chk.mail, From: c.MailFrom, Now: m.Now, Logger: m.Logger}
	m.Server = httpapi.New(svc, httpapi.Config{TrustedProxies: chk.proxies, Logger: m.Logger, Ready: m.ready.Load, Webhooks: hooks,
		Metrics: m.Metrics,
		// GET /ready also checks the store and the background tasks; the
		// dashboard shows the same failures, mail's in full (Detail).
		ReadyChecks: []httpapi.ReadyCheck{{Name: "mail", Check: m.mailReady, Detail: m.Mail.ConfigError}},
	})
	// The webhook worker yields to the API while it is saturated.
	m.Hooks = &webhook.Worker{DB: db, Keys: keys, Now: m.Now, Logger: m.Logger, AllowPrivate: c.WebhookAllowPrivate,
		Busy: m.Server.Busy, Outcome: m.Metrics.WebhookOutcome}
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
		ErrorLog:       slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := m.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("http server", "err", err)
		}
	}()
	where := []any{"data", c.Data}
	if c.DatabaseURL != "" {
		where = []any{"database", redactURL(c.DatabaseURL)}
	}
	m.Logger.Info("latchkey listening", append([]any{"addr", ln.Addr().String(), "base_url", baseURL}, where...)...)
	if c.DatabaseURL == "" {
		m.writeAddrFile(ln.Addr())
	}
	if m.metricsListener != nil {
		m.serveMetrics()
	}
	return nil
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
}

// checkConfig checks every setting that ParseFlags does not, touching no
// file: the base URL, the SMTP URL and CA files, the sender address, the
// SMS provider's settings, the trusted proxies and the master key's form.
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
	if out.proxies, err = parsePrefixes(c.TrustedProxies); err != nil {
		return nil, err
	}
	if _, err := netmail.ParseAddress(c.MailFrom); err != nil {
		return nil, fmt.Errorf("--mail-from %q is not an email address (want name@example.com or \"Name <name@example.com>\")", c.MailFrom)
	}
	if out.sms, err = m.smsSender(); err != nil {
		return nil, err
	}
	if out.mail, err = m.mailTransport(); err != nil {
		return nil, err
	}
	if c.MasterKey != "" {
		if _, _, err := store.LoadMasterKey(c.MasterKey, ""); err != nil {
			return nil, fmt.Errorf("--master-key: %w", err)
		}
	}
	if out.leaseTTL, err = positiveDuration("--lease-ttl", c.LeaseTTL, 10*time.Millisecond); err != nil {
		return nil, err
	}
	if out.feedInterval, err = positiveDuration("--feed-interval", c.FeedInterval, time.Millisecond); err != nil {
		return nil, err
	}
	return &out, nil
}

// positiveDuration parses a duration setting of at least least; empty
// is 0 (the default).
func positiveDuration(name, v string, least time.Duration) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < least {
		return 0, fmt.Errorf("%s %q must be a duration of at least %v, e.g. 15s", name, v, least)
	}
	return d, nil
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

// firstStart creates the default project, a test key and the admin
// token, printing them once; the admin token also goes to
// <data>.admin-token (0600) unless it is configured.
func (m *Main) firstStart(ctx context.Context, baseURL string) error {
	b, err := m.Service.Init(ctx)
	if err != nil {
		return err
	}
	if b == nil {
		// A replica starting at the same time initialized the database
		// and printed what it created.
		return m.ensureAdminToken(ctx)
	}
	w := m.Stdout
	fmt.Fprintf(w, "latchkey: first start: created project %q (%s), allowed origins %s\n", b.Project.Name, b.Project.ID, strings.Join(b.Project.AllowedOrigins, ", "))
	fmt.Fprintf(w, "  passkey demo page: %s/demo/passkeys\n", browserURL(baseURL))
	fmt.Fprintf(w, "  test API key (shown once): %s\n", b.APIKey)
	if b.AdminToken != "" {
		m.showAdminToken(b.AdminToken)
	}
	return nil
}

// browserURL is baseURL as a browser should open it for passkeys: a
// loopback address becomes localhost, since WebAuthn refuses IP
// addresses.
func browserURL(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return baseURL
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && a.Unmap().IsLoopback() {
		port := u.Port()
		u.Host = "localhost"
		if port != "" {
			u.Host += ":" + port
		}
	}
	return u.String()
}

// ensureAdminToken gives a later start an admin token when none is
// configured and none is stored (the first start had one configured):
// it generates one and shows it as a first start does.
func (m *Main) ensureAdminToken(ctx context.Context) error {
	tok, err := m.Service.EnsureAdminToken(ctx)
	if err != nil || tok == "" {
		return err
	}
	fmt.Fprintln(m.Stdout, "latchkey: no admin token is configured or stored: generated one")
	m.showAdminToken(tok)
	return nil
}

// showAdminToken prints a generated admin token once and writes it to
// <data>.admin-token (0600) for the CLI; with a database URL there is no
// data file to put it beside, so it is only printed.
func (m *Main) showAdminToken(tok string) {
	w := m.Stdout
	fmt.Fprintf(w, "  admin token (shown once):  %s\n", tok)
	if m.Config.DatabaseURL != "" {
		fmt.Fprintln(w, "  pass it to the CLI with --admin-token or LATCHKEY_ADMIN_TOKEN")
		return
	}
	file := m.Config.Data + ".admin-token"
	// Replace a file left over from an earlier data file of the same
	// name. The token is committed and printed already, so a failure
	// here is reported, not fatal.
	if err := store.ReplaceSecretFile(file, tok+"\n"); err != nil {
		m.Logger.Error("could not write the admin token file; pass the printed token to the CLI instead", "file", file, "err", err)
	} else {
		fmt.Fprintf(w, "  admin token saved to %s (mode 0600) for the CLI\n", file)
	}
}

// writeAddrFile writes the address the server listens on to
// <data>.addr (cli.AddrFile; mode 0600, as the admin token file beside
// it), so that the CLI on this machine finds the server without --server
// whatever the port. An unspecified address (0.0.0.0, ::) is written as
// 127.0.0.1, where the CLI reaches it. Close removes the file; after a
// crash it stays until the next start replaces it. Failing to write it is
// logged, not fatal: --server still works.
func (m *Main) writeAddrFile(addr net.Addr) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return
	}
	ip := tcp.IP
	if ip.IsUnspecified() {
		// 0.0.0.0, or :: (":8080"), which Go listens on for IPv4 too.
		ip = net.IPv4(127, 0, 0, 1)
	}
	file := cli.AddrFile(m.Config.Data)
	if err := store.ReplaceSecretFile(file, "http://"+net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))+"\n"); err != nil {
		m.Logger.Warn("could not write the address file for the CLI; pass it --server", "file", file, "err", err)
		return
	}
	m.addrFile = file
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
		return &mail.Outbox{Dir: m.outboxDir()}, nil
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

func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("--trusted-proxies: %q is not a CIDR", part)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxies: %q is not a CIDR", part)
		}
		out = append(out, p.Masked())
	}
	return out, nil
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
