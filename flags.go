package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"latchkey/internal/autotls"
	"latchkey/internal/cli"
	"latchkey/store"
)

// Config is the server's configuration (the flags of `latchkey serve`).
type Config struct {
	Addr        string
	Data        string
	DatabaseURL string // when set, the store is this database, not the Data file
	BaseURL     string
	SMTPURL     string
	SMTPCAFile  string
	MailFrom    string
	// MailLog logs each message written to the outbox with its code or
	// link (development; refused with an SMTP server).
	MailLog             bool
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
	// Off-site backups (a data file only): the s3:// URL of the bucket
	// and prefix, how often ("6h"; empty: never) and how many to keep
	// ("14"; "0": every one).
	BackupTo    string
	BackupEvery string
	BackupKeep  string
	// HTTPS: TLSDomain names the domains (comma-separated) whose
	// certificates come from the ACME CA at ACMEDirectory (empty: Let's
	// Encrypt) with the contact ACMEEmail, its HTTPS trusted with
	// ACMECAFile's CAs besides the system's; or TLSCert and TLSKey are
	// the files of one certificate. HTTPAddr answers HTTP-01 challenges
	// and redirects the rest to HTTPS (empty: :80 with TLSDomain, none
	// with TLSCert; "off": none).
	TLSDomain     string
	TLSCert       string
	TLSKey        string
	HTTPAddr      string
	ACMEDirectory string
	ACMEEmail     string
	ACMECAFile    string
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
	*c = Config{Addr: "127.0.0.1:8080", Data: "./latchkey.db", MailFrom: defaultMailFrom, SMSProvider: "none", LogFormat: "text", BackupKeep: "14"}
	flags := []serveFlag{
		{"addr", "LATCHKEY_ADDR", "ADDR", c.Addr + "; :443 with --tls-domain or --tls-cert", "listen address (HTTPS with --tls-domain or --tls-cert)", &c.Addr},
		{"data", "LATCHKEY_DATA", "FILE", c.Data, "bbolt data file; created on first start", &c.Data},
		{"database-url", "LATCHKEY_DATABASE_URL", "URL", "empty: the --data file", "PostgreSQL database (postgres://user:password@host:5432/dbname?sslmode=...) instead of --data, for several replicas on one database; needs --master-key; both on the command line are refused, and LATCHKEY_DATABASE_URL wins over LATCHKEY_DATA", &c.DatabaseURL},
		{"base-url", "LATCHKEY_BASE_URL", "URL", "http://<addr>", "public origin (http:// or https://, no path) for magic links, JWT iss and WebAuthn", &c.BaseURL},
		{"smtp-url", "LATCHKEY_SMTP_URL", "URL", "empty: mail is written to <data>.outbox/*.eml (./latchkey.outbox with --database-url)", "smtp://user:pass@host:port (STARTTLS when offered) or smtps://... (implicit TLS); options ?tls=opportunistic|required, ?auth=auto|plain|login|cram-md5, ?ca=FILE", &c.SMTPURL},
		{"smtp-ca-file", "LATCHKEY_SMTP_CA_FILE", "FILE", "none: the system's CAs", "PEM file of CA certificates trusted for the SMTP server besides the system's (also ?ca= on --smtp-url)", &c.SMTPCAFile},
		{"mail-from", "LATCHKEY_MAIL_FROM", "ADDRESS", c.MailFrom, "sender address", &c.MailFrom},
		{"mail-log", "LATCHKEY_MAIL_LOG", "", "false", "development: log one line per message written to the outbox with its recipient, kind, and code or link (refused with --smtp-url)", nil},
		{"sms-provider", "LATCHKEY_SMS_PROVIDER", "NAME", c.SMSProvider, "none, log or twilio", &c.SMSProvider},
		{"admin-token", "LATCHKEY_ADMIN_TOKEN", "TOKEN", "generated, printed once, saved to <data>.admin-token (only printed with --database-url)", "admin bearer token (adm_..., 24+ characters); when set it is neither printed nor written to a file", &c.AdminToken},
		{"master-key", "LATCHKEY_MASTER_KEY", "KEY", "the <data>.key file; required with --database-url", "32-byte key, base64; encrypts secrets at rest", &c.MasterKey},
		{"trusted-proxies", "LATCHKEY_TRUSTED_PROXIES", "CIDRS", "empty", "comma-separated CIDRs whose X-Forwarded-For is believed", &c.TrustedProxies},
		{"webhook-allow-private", "LATCHKEY_WEBHOOK_ALLOW_PRIVATE", "", "false", "let webhooks of both modes target private, loopback and link-local addresses (without it: live mode public only, test mode public and loopback)", nil},
		{"oauth-allow-private", "LATCHKEY_OAUTH_ALLOW_PRIVATE", "", "false", "let calls to sign-in providers (discovery, token, userinfo, JWKS) reach private, loopback and link-local addresses (without it: public addresses only, and loopback for a provider whose issuer is on loopback)", nil},
		{"log-format", "LATCHKEY_LOG_FORMAT", "FORMAT", c.LogFormat, "text or json (log/slog)", &c.LogFormat},
		{"metrics-addr", "LATCHKEY_METRICS_ADDR", "ADDR", "empty: GET /metrics only on --addr, behind the admin token", "also serve GET /metrics, without authentication, on this address (keep it private)", &c.MetricsAddr},
		{"backup-to", "LATCHKEY_BACKUP_TO", "URL", "empty: no off-site backups", "upload a backup of the data file (the same bytes as GET /api/v1/admin/backup) to s3://bucket/prefix?endpoint=host:port&region=R (endpoint default s3.amazonaws.com over HTTPS; endpoint=http://host:port or secure=false for plain HTTP); credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN; needs --backup-every; not with --database-url", &c.BackupTo},
		{"backup-every", "LATCHKEY_BACKUP_EVERY", "DURATION", "empty: off", "how often to upload a backup to --backup-to (at least 1m, e.g. 6h); a failed upload is tried again every minute", &c.BackupEvery},
		{"backup-keep", "LATCHKEY_BACKUP_KEEP", "N", c.BackupKeep, "how many backups to keep in the bucket: the newest N; older ones are deleted after a successful upload (0 keeps every one)", &c.BackupKeep},
		{"tls-domain", "LATCHKEY_TLS_DOMAIN", "DOMAINS", "empty: no HTTPS", "serve HTTPS on --addr with certificates from an ACME CA (Let's Encrypt unless --acme-directory) for these domains (comma-separated; the first is the base URL's host unless --base-url): TLS-ALPN-01 on --addr, HTTP-01 on --http-addr; certificates are kept in the store (replicas share them) and renewed in the background", &c.TLSDomain},
		{"tls-cert", "LATCHKEY_TLS_CERT", "FILE", "empty", "serve HTTPS on --addr with this PEM certificate chain (and --tls-key), read again within seconds of a change", &c.TLSCert},
		{"tls-key", "LATCHKEY_TLS_KEY", "FILE", "empty", "the PEM private key of --tls-cert", &c.TLSKey},
		{"http-addr", "LATCHKEY_HTTP_ADDR", "ADDR", ":80 with --tls-domain, none with --tls-cert", "plain HTTP listener that answers ACME HTTP-01 challenges and redirects every other request to the HTTPS base URL; off: none (TLS-ALPN-01 only)", &c.HTTPAddr},
		{"acme-directory", "LATCHKEY_ACME_DIRECTORY", "URL", autotls.LetsEncrypt, "ACME directory (https://) of the CA for --tls-domain: a staging or private CA", &c.ACMEDirectory},
		{"acme-email", "LATCHKEY_ACME_EMAIL", "ADDRESS", "empty", "contact address of the ACME account (expiry and policy notices from the CA)", &c.ACMEEmail},
		{"acme-ca-file", "LATCHKEY_ACME_CA_FILE", "FILE", "none: the system's CAs", "PEM file of CA certificates trusted for --acme-directory's HTTPS besides the system's (a private CA)", &c.ACMECAFile},
		{"lease-ttl", "LATCHKEY_LEASE_TTL", "DURATION", "15s", "replicas on one database (tuning, tests): how long a replica's lease on a background task (sweep, mail, webhooks) lasts without renewal, renewed every third of it; a dead replica's tasks move to another within about 4/3 of it", &c.LeaseTTL},
		{"feed-interval", "LATCHKEY_FEED_INTERVAL", "DURATION", "250ms", "replicas on one database (tuning, tests): how often a replica reads the invalidation feed, which bounds how late it sees another replica's revocations and changes; caches are bypassed after max(1s, 4 intervals) without a read", &c.FeedInterval},
	}
	// The booleans each flag with no string sets.
	bools := map[string]*bool{"webhook-allow-private": &c.WebhookAllowPrivate, "oauth-allow-private": &c.OAuthAllowPrivate, "mail-log": &c.MailLog}
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
	if (c.TLSDomain != "" || c.TLSCert != "") && !set["addr"] && getenv("LATCHKEY_ADDR") == "" {
		c.Addr = ":443"
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

// positiveDuration parses a duration setting of at least least; empty
// is 0 (the default). Its error gives example, a good value.
func positiveDuration(name, v string, least time.Duration, example string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < least {
		return 0, fmt.Errorf("%s %q must be a duration of at least %v, e.g. %s", name, v, least, example)
	}
	return d, nil
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
