// Package auth holds latchkey's use cases: API-key checks, projects and
// keys for the operator, sign-in by code, link, factor or external method,
// sessions and JWTs, and the events each writes. It knows nothing of HTTP;
// errors it returns are *Error values carrying their wire code.
package auth

import (
	"context"
	"crypto"
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"latchkey/auth/social"
	"latchkey/store"
)

// Config configures a Service.
type Config struct {
	// BaseURL is the public origin: magic links, JWT "iss", WebAuthn.
	BaseURL string
	// AdminToken, when set, is the only admin token (not stored).
	AdminToken string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives operational logs; never secrets.
	Logger *slog.Logger
	// Wake is called after a commit that queued mail or events.
	Wake func()
	// SMS sends text messages; nil fails every send (provider "none").
	SMS SMSSender
	// Observer, when set, is told of authentication events and logins
	// once they commit (metrics).
	Observer Observer
	// OAuth makes the calls to OAuth providers; nil means the default
	// client (social.Timeout) and GitHub's own endpoints.
	OAuth *social.Transport
	// BuiltInMail renders the built-in wording of a mail (package mail's
	// Render), which template previews show when a project has no
	// template of its own; nil makes such a preview fail.
	BuiltInMail BuiltInMail
	// SigningKey makes a new private key for a provider's signing
	// algorithm (AlgRS256: RSA-2048, AlgES256: P-256); nil generates it
	// from crypto/rand. Tests hand out keys generated beforehand
	// (testkit.SigningKey): an RSA key costs a quarter of a CPU-second
	// under the race detector.
	SigningKey func(alg string) (crypto.Signer, error)
}

// BuiltInMail renders the built-in wording of a mail of kind (a queued
// mail's kind) to address to, with content c.
type BuiltInMail func(kind, to string, c store.MailContent) (Rendered, error)

// Observer is told of authentication outcomes after their transaction
// commits, so a rolled-back or retried transaction counts once or not
// at all. Its methods run on the committing goroutine: they must be
// quick and must not block. The values are from small fixed sets.
type Observer interface {
	// AuthEvent is one authentication event: method and action as the
	// event records them, failure its failure category, "" for a success.
	AuthEvent(method, action, failure string)
	// Login is one session created, by method ("email_otp", "passkey" …).
	Login(method string)
}

// SMSSender sends a text message to an E.164 number. Errors must not
// carry credentials.
type SMSSender interface {
	SendSMS(ctx context.Context, to, body string) error
}

// Service runs the use cases against one store. It is safe for concurrent use.
type Service struct {
	db      store.DB
	keys    *store.Keyring
	baseURL string
	now     func() time.Time
	log     *slog.Logger
	wake    func()
	sms     SMSSender
	obs     Observer    // nil: none
	builtIn BuiltInMail // nil: none
	// signingKey makes the providers' keys (Config.SigningKey); nil:
	// generated.
	signingKey func(alg string) (crypto.Signer, error)

	adminToken string // configured admin token, or empty
	adminHash  []byte // stored hash of a generated admin token

	apiKeys  cache[*cachedKey]     // by key prefix
	projects cache[*store.Project] // by project id
	limiter  *Limiter
	risk     *Risk
	tokens   *tokenCache
	suppress *suppressor

	activity   *activity // per-session rate and last-seen times
	adminFails *Limiter  // admin-token failures per client IP; wrong device user codes (keys "device-…")

	// shared counts the limits across replicas on a store they share
	// (PostgreSQL); nil on bbolt (shared.go).
	shared *shared

	signers    sync.Map // project id + "/" + kid → *signer
	publicKeys sync.Map // project id + "/" + kid → *ecdsa.PublicKey

	// The projects' OpenID provider keys (oidc_keys.go): decrypted
	// keys by project id + "/" + kid, and one maker of missing keys at
	// a time.
	oidcSigners sync.Map
	// oidcKeySets are the projects' provider key sets (OIDCKeys), kept
	// a minute at most and dropped with their project.
	oidcKeySets cache[*cachedKeySet]
	oidcKeyGen  sync.Mutex

	// origins is every project's allowed origins (CORS preflights);
	// projectsVersion counts project changes, which make it stale.
	origins         atomic.Pointer[originIndex]
	projectsVersion atomic.Uint64
	// originsFrozen: the store's invalidation feed is not trusted, so
	// the origin index is read anew for every call (replicas.go).
	originsFrozen atomic.Bool

	unwatch func() // ends the subscription to the store's changes

	social *social.Transport // OAuth providers' HTTP side; may be nil
	oidc   discovered        // OpenID Connect discovery by issuer

	onRender func() // tests: called as a mail template render starts

	// userinfo is the providers' access tokens remembered by the
	// userinfo endpoint (oidc_userinfo.go).
	userinfo *userinfoCache

	// pageTexts are the projects' texts of their hosted pages, parsed
	// (page_texts.go), dropped with a change of their templates.
	pageTexts cache[pageTextSet]
}

// New returns a Service over db. It loads the admin token hash.
func New(db store.DB, keys *store.Keyring, cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Wake == nil {
		cfg.Wake = func() {}
	}
	s := &Service{
		db: outageDB{db}, keys: keys, baseURL: cfg.BaseURL, now: cfg.Now, log: cfg.Logger,
		wake: cfg.Wake, adminToken: cfg.AdminToken, sms: cfg.SMS, obs: cfg.Observer, builtIn: cfg.BuiltInMail,
		limiter:  NewLimiter(cfg.Now),
		risk:     NewRisk(cfg.Now),
		tokens:   newTokenCache(1 << 16),
		userinfo: newUserinfoCache(userinfoCacheSize),
		suppress: newSuppressor(),

		activity:   newActivity(ActivityMaxTracked),
		adminFails: NewLimiter(cfg.Now),
		signingKey: cfg.SigningKey,
	}
	s.social = cfg.OAuth
	if s.shared = newShared(db); s.shared != nil {
		s.limiter.share, s.adminFails.share, s.activity.share = s.shared.keys, s.shared.admin, s.shared.sessions
	}
	err := db.View(context.Background(), func(tx store.Tx) (err error) {
		s.adminHash, err = tx.AdminTokenHash()
		return err
	})
	if err != nil {
		return nil, err
	}
	s.watch()
	return s, nil
}

// Close writes what the service keeps in memory between flushes: the
// last-seen times of sessions and the counts of suppressed failures.
// Call it once requests have stopped, before the store closes.
func (s *Service) Close() error {
	if s.unwatch != nil {
		s.unwatch()
	}
	ctx := context.Background()
	return errors.Join(s.FlushLastSeen(ctx), s.FlushSuppressed(ctx))
}

// Backup writes a consistent copy of the store to w while the service
// runs (a hot backup), telling before the copy's size first (for a
// Content-Length), and returns the bytes written. Safe for concurrent
// use with every other call; writers are not blocked. A store that
// cannot (PostgreSQL) returns ErrBackupNotSupported without calling
// before.
func (s *Service) Backup(ctx context.Context, w io.Writer, before func(size int64)) (int64, error) {
	n, err := s.db.Backup(ctx, w, before)
	if errors.Is(err, store.ErrNotSupported) {
		return 0, ErrBackupNotSupported.Because(err)
	}
	return n, err
}

// Usable returns nil while the store can serve reads and writes, else
// why not, in words safe to show (GET /ready). It writes nothing and is
// cheap enough for every readiness probe.
func (s *Service) Usable(ctx context.Context) error { return s.db.Usable(ctx) }

// StoreStats reads the sizes of the store and its queues (metrics, at
// scrape time). It walks the queues: not for every request.
func (s *Service) StoreStats(ctx context.Context) (store.Stats, error) { return s.db.Stats(ctx) }

// Now returns the service clock's time.
func (s *Service) Now() time.Time { return s.now() }

// BaseURL returns the public origin.
func (s *Service) BaseURL() string { return s.baseURL }

// internal wraps an unexpected error as INTERNAL_ERROR (SERVICE_UNAVAILABLE
// for a failed store write: AsError).
func internal(err error) error {
	if err == nil {
		return nil
	}
	return AsError(err)
}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// randomString returns n characters drawn uniformly from alphabet.
func randomString(alphabet string, n int) string {
	out := make([]byte, n)
	buf := make([]byte, n+n/2+8)
	limit := 256 - 256%len(alphabet)
	for i := 0; i < n; {
		if _, err := rand.Read(buf); err != nil {
			panic(err) // crypto/rand never fails on supported platforms
		}
		for _, b := range buf {
			if int(b) >= limit {
				continue
			}
			out[i] = alphabet[int(b)%len(alphabet)]
			i++
			if i == n {
				break
			}
		}
	}
	return string(out)
}

// randomBytes returns n random bytes.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return b
}
