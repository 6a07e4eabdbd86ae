// Package httpapi serves latchkey's HTTP API: routing, authentication of
// API keys, session tokens and the admin token, request decoding and the
// one writer of the error envelope. Handlers decode, call auth, encode.
package httpapi

import (
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
	"latchkey/webhook"
)

// Config configures a Server.
type Config struct {
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	Logger         *slog.Logger
	// Ready reports whether the scheduler runs (for /health and /ready).
	Ready func() bool
	// ReadyChecks are further conditions of GET /api/v1/ready, beyond
	// the store and Ready (a provider's configuration error, say).
	ReadyChecks []ReadyCheck
	// Webhooks serves the webhook registration calls.
	Webhooks *webhook.Service
	// Metrics receives the request metrics and serves GET /metrics; nil
	// makes the Server its own (requests are always instrumented).
	Metrics *Metrics
	// Outbox says where mail goes, for the dashboard's Outbox page.
	Outbox Outbox
}

// Outbox says where mail goes: the .eml outbox directory the dashboard's
// Outbox page lists, or an SMTP server (then the page lists nothing).
type Outbox struct {
	// Dir is the directory the mail outbox writes to; empty when mail
	// goes through an SMTP server.
	Dir string
	// SMTP names the SMTP server mail goes through (host:port), shown
	// on the page instead of messages.
	SMTP string
	// PerReplica says that replicas share a database and each writes
	// the mail it sends into its own Dir, so the page of one replica
	// may miss the messages another sent.
	PerReplica bool
}

// Server is the HTTP API over an auth.Service. It is an http.Handler.
type Server struct {
	auth    *auth.Service
	router  *router
	metrics *Metrics
	log     *slog.Logger
	proxies []netip.Prefix
	ready   func() bool
	hooks   *webhook.Service

	readyChecks []ReadyCheck

	dashSess dashSessions

	baseOrigin string // the base URL's scheme://host[:port], canonical

	load load // is the API saturated? (Busy)

	providers oidcProviders // the projects' OpenID providers (oidc.go)

	outbox Outbox // where mail goes (the dashboard's Outbox page)
}

// MaxBodyBytes is the largest accepted request body (docs/api.md,
// "Request limits").
const MaxBodyBytes = 64 << 10

// MaxHeaderBytes is the value for http.Server.MaxHeaderBytes: net/http
// allows 4,096 bytes on top of it, so the request line and headers
// together may take 64 KiB; more is answered 431 before any handler runs.
const MaxHeaderBytes = 64<<10 - 4096

// New returns a Server with every route registered.
func New(svc *auth.Service, cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Ready == nil {
		cfg.Ready = func() bool { return true }
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(MetricsOptions{})
	}
	if svc != nil {
		cfg.Metrics.watchStore(svc.StoreStats)
	}
	s := &Server{auth: svc, log: cfg.Logger, proxies: cfg.TrustedProxies, ready: cfg.Ready, hooks: cfg.Webhooks,
		readyChecks: cfg.ReadyChecks, metrics: cfg.Metrics, dashSess: dashSessions{auth: svc, log: cfg.Logger}, outbox: cfg.Outbox}
	if svc != nil {
		if u, err := url.Parse(svc.BaseURL()); err == nil {
			s.baseOrigin, _ = auth.NormalizeOrigin(u.Scheme + "://" + u.Host)
		}
	}
	r := newRouter(cfg.Metrics)
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleMethodNotAllowed = true
	r.HandleOPTIONS = false
	r.NotFound = cfg.Metrics.instrumentHandler("unmatched", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.writeError(w, auth.ErrNotFound)
	}))
	r.MethodNotAllowed = cfg.Metrics.instrumentHandler("unmatched", http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// httprouter lists OPTIONS in Allow; OPTIONS is served only on
		// the paths browsers call (CORS preflights).
		h := w.Header()
		if allow := h.Get("Allow"); allow != "" && !browserPath(req.URL.Path) {
			methods := strings.Split(allow, ", ")
			h.Set("Allow", strings.Join(slices.DeleteFunc(methods, func(m string) bool { return m == http.MethodOptions }), ", "))
		}
		s.writeError(w, auth.ErrMethodNotAllowed)
	}))
	r.PanicHandler = func(w http.ResponseWriter, r *http.Request, v any) {
		s.log.Error("panic", "method", r.Method, "path", r.URL.Path, "panic", v)
		s.writeError(w, auth.ErrInternal)
	}
	s.router = r
	s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.load.request()
	if r.Method == http.MethodOptions && browserPath(r.URL.Path) && s.preflight(w, r) {
		return
	}
	s.router.ServeHTTP(w, r)
}

// Busy reports whether the API is saturated: it is serving requests and
// goroutines are queueing for the CPUs. Background work (the webhook
// worker) yields while it is. Safe for concurrent use; cheap enough to
// call before every background task.
func (s *Server) Busy() bool { return s.load.busy() }

func (s *Server) routes() {
	r := s.router
	r.GET("/api/v1/health", s.handle(s.health))
	r.GET("/api/v1/ready", s.handle(s.readiness))
	r.GET("/api/v1/openapi.json", s.handle(s.openapi))
	r.GET("/api/v1/me", s.handle(s.me))
	r.GET("/api/v1/projects/:projectId/jwks.json", s.handle(s.jwks))

	// Account and session.
	r.GET("/api/v1/user", s.session(s.getUser))
	r.PATCH("/api/v1/user", s.session(s.patchUser))
	r.DELETE("/api/v1/user", s.session(s.deleteUser))
	r.POST("/api/v1/user/email/send", s.session(s.emailSend))
	r.POST("/api/v1/user/email/verify", s.session(s.emailVerify))
	r.GET("/api/v1/session", s.sessionProofs(s.getSession))
	r.POST("/api/v1/session/refresh", s.key(s.sessionRefresh))
	r.POST("/api/v1/logout", s.session(s.logout))
	r.GET("/api/v1/sessions", s.session(s.listSessions))
	r.DELETE("/api/v1/sessions/:id", s.session(s.deleteSession))

	// Email OTP and magic link.
	r.POST("/api/v1/otp/send", s.key(s.otpSend))
	r.POST("/api/v1/otp/verify", s.key(s.otpVerify))
	r.POST("/api/v1/magic/send", s.key(s.magicSend))
	r.GET("/api/v1/magic/verify", s.handle(s.magicVerify))
	r.POST("/api/v1/magic/verify", s.handle(s.magicConfirm))

	// Step-up and recovery.
	r.POST("/api/v1/backup-codes/generate", s.session(s.backupGenerate))
	r.POST("/api/v1/backup-codes/verify", s.key(s.backupVerify))
	r.POST("/api/v1/sms/send", s.session(s.smsSend))
	r.POST("/api/v1/sms/verify", s.session(s.smsVerify))
	r.POST("/api/v1/totp/enroll", s.session(s.totpEnroll))
	r.POST("/api/v1/totp/verify", s.session(s.totpVerify))

	// Passkeys.
	r.POST("/api/v1/passkey/register/start", s.handle(s.passkeyRegisterStart))
	r.POST("/api/v1/passkey/register/verify", s.handle(s.passkeyRegisterVerify))
	r.POST("/api/v1/passkey/login/start", s.browserKey(s.passkeyLoginStart))
	r.POST("/api/v1/passkey/login/verify", s.browserKey(s.passkeyLoginVerify))
	r.GET("/api/v1/passkeys", s.session(s.listPasskeys))
	r.GET("/api/v1/passkeys/by-external", s.keyRate401(s.listPasskeysByExternal))
	r.DELETE("/api/v1/passkeys/*rest", s.handle(s.deletePasskey))

	// Webhooks.
	r.POST("/api/v1/webhooks", s.key(s.createWebhook))
	r.GET("/api/v1/webhooks", s.key(s.listWebhooks))
	r.DELETE("/api/v1/webhooks/:id", s.key(s.deleteWebhook))
	r.GET("/api/v1/webhooks/:id/deliveries", s.key(s.listDeliveries))

	// External methods.
	r.POST("/api/v1/external-auth/confirm", s.key(s.externalConfirm))
	r.POST("/api/v1/external-auth/callback/:registrationId", s.handle(s.externalCallback))
	r.POST("/api/v1/external-auth/redeem", s.key(s.externalRedeem))

	// Prometheus metrics behind the admin token (main can also serve
	// them, open, on a separate listener: Metrics.Handler).
	r.GET("/metrics", s.admin(s.serveMetrics))

	s.adminRoutes()
	s.clientRoutes()
	s.oidcRoutes()
	s.forwardAuthRoutes()
	s.accountRoutes()
	s.oauthRoutes()
	s.dashboardRoutes()
	s.demoRoutes()
}

// serveMetrics serves the Prometheus metrics (admin token checked).
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	s.metrics.Handler().ServeHTTP(w, r)
	return nil
}
