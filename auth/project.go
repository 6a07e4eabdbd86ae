package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"latchkey/store"
)

// Project limits: session token lifetime 5 minutes to 90 days (24 hours
// by default), 1 to 1,000,000,000 requests per key per minute (100 by
// default), at most 50 allowed origins and 1,000 deny-list entries
// (docs/api.md, "Projects").
const (
	DefaultSessionTTL = 86400
	MinSessionTTL     = 300
	MaxSessionTTL     = 7776000
	DefaultRateLimit  = 100
	MaxRateLimit      = 1_000_000_000
	maxOrigins        = 50
	maxDenyCIDRs      = 1000
)

// Session times (refresh.go): a session may be refreshed while it has
// not gone unrefreshed for its project's idle time (7 days by default)
// and is younger than its maximum (30 days by default); each is 5
// minutes to 365 days, and the token lifetime <= the idle time <= the
// maximum.
const (
	DefaultSessionIdle = 604800
	DefaultSessionMax  = 2592000
	// MaxSessionLifetime bounds sessionIdleSeconds and
	// sessionMaxSeconds: 365 days.
	MaxSessionLifetime = 31536000
)

// ProjectInput is the body of create and update; nil fields are unset.
type ProjectInput struct {
	Name               *string   `json:"name"`
	AllowedOrigins     *[]string `json:"allowedOrigins"`
	CompanyID          *string   `json:"companyId"`
	RPID               *string   `json:"rpId"`
	SessionTTLSeconds  *int      `json:"sessionTtlSeconds"`
	RateLimitPerMinute *int      `json:"rateLimitPerMinute"`
	DenyCIDRs          *[]string `json:"denyCidrs"`
	EmailChange        *string   `json:"emailChange"`
	// SessionRateLimitPerMinute is the per-session limit of the calls
	// that write or start a ceremony (1 to MaxSessionRateLimit).
	SessionRateLimitPerMinute *int `json:"sessionRateLimitPerMinute"`
	// SessionIdleSeconds is how long a session may go unrefreshed and
	// still be refreshed; SessionMaxSeconds how long after its sign-in
	// it may be refreshed at all (each MinSessionTTL to
	// MaxSessionLifetime; sessionTtlSeconds <= sessionIdleSeconds <=
	// sessionMaxSeconds).
	SessionIdleSeconds *int `json:"sessionIdleSeconds"`
	SessionMaxSeconds  *int `json:"sessionMaxSeconds"`
	// ForwardAuth is the forward-auth settings, replaced whole
	// ({cookieDomain, rules}), or null to remove them
	// (parseForwardAuth); nil when not given.
	ForwardAuth json.RawMessage `json:"forwardAuth"`
	// ClientRegistration is whether the project's OpenID provider takes
	// dynamic client registrations: "open" or "closed".
	ClientRegistration *string `json:"clientRegistration"`
	// DisplayName, LogoURL and AccentColor brand the hosted pages
	// (applyBranding); "" removes each.
	DisplayName *string `json:"displayName"`
	LogoURL     *string `json:"logoUrl"`
	AccentColor *string `json:"accentColor"`
}

// apply validates in and copies it onto p.
func (in *ProjectInput) apply(p *store.Project) error {
	if err := in.applyFields(p); err != nil {
		return err
	}
	if in.SessionTTLSeconds != nil || in.SessionIdleSeconds != nil || in.SessionMaxSeconds != nil {
		return checkSessionTimes(p)
	}
	return nil
}

// applyFields validates each field of in and copies it onto p.
func (in *ProjectInput) applyFields(p *store.Project) error {
	if in.Name != nil {
		n := strings.TrimSpace(*in.Name)
		if n == "" || utf8.RuneCountInString(n) > 100 || strings.ContainsAny(n, "\r\n") {
			return Invalid("name must be 1 to 100 characters.")
		}
		p.Name = n
	}
	if in.AllowedOrigins != nil {
		if len(*in.AllowedOrigins) > maxOrigins {
			return Invalid("allowedOrigins holds at most %d origins.", maxOrigins)
		}
		origins := make([]string, 0, len(*in.AllowedOrigins))
		for _, o := range *in.AllowedOrigins {
			c, err := NormalizeOrigin(o)
			if err != nil {
				return err
			}
			origins = append(origins, c)
		}
		p.AllowedOrigins = origins
	}
	if in.CompanyID != nil {
		c := strings.TrimSpace(*in.CompanyID)
		if c == "" || len(c) > 128 {
			return Invalid("companyId must be 1 to 128 characters.")
		}
		p.CompanyID = c
	}
	if in.RPID != nil {
		r := strings.ToLower(strings.TrimSpace(*in.RPID))
		if r != "" {
			if _, ok := canonicalOrigin(mustURL("https://" + r)); !ok || strings.ContainsAny(r, "/:@") {
				return Invalid("rpId must be a host name.")
			}
			if _, err := netip.ParseAddr(r); err == nil {
				return Invalid("rpId must be a domain name: WebAuthn does not accept IP addresses.")
			}
		}
		p.RPID = r
	}
	if in.SessionTTLSeconds != nil {
		t := *in.SessionTTLSeconds
		if t < MinSessionTTL || t > MaxSessionTTL {
			return Invalid("sessionTtlSeconds must be between %d and %d.", MinSessionTTL, MaxSessionTTL)
		}
		p.SessionTTLSeconds = t
	}
	if in.RateLimitPerMinute != nil {
		r := *in.RateLimitPerMinute
		if r < 1 || r > MaxRateLimit {
			return Invalid("rateLimitPerMinute must be between 1 and %d.", MaxRateLimit)
		}
		p.RateLimitPerMinute = r
	}
	if in.DenyCIDRs != nil {
		if len(*in.DenyCIDRs) > maxDenyCIDRs {
			return Invalid("denyCidrs holds at most %d entries.", maxDenyCIDRs)
		}
		c, err := parseCIDRs(*in.DenyCIDRs)
		if err != nil {
			return err
		}
		p.DenyCIDRs = c
	}
	if in.EmailChange != nil {
		if v := *in.EmailChange; v != EmailChangeVerify && v != EmailChangeDirect {
			return Invalid(`emailChange must be "verify" or "direct".`)
		}
		p.EmailChange = *in.EmailChange
	}
	if in.SessionRateLimitPerMinute != nil {
		r := *in.SessionRateLimitPerMinute
		if r < 1 || r > MaxSessionRateLimit {
			return Invalid("sessionRateLimitPerMinute must be between 1 and %d.", MaxSessionRateLimit)
		}
		p.SessionRateLimitPerMinute = r
	}
	for _, f := range []struct {
		name string
		in   *int
		dst  *int
	}{{"sessionIdleSeconds", in.SessionIdleSeconds, &p.SessionIdleSeconds}, {"sessionMaxSeconds", in.SessionMaxSeconds, &p.SessionMaxSeconds}} {
		if f.in == nil {
			continue
		}
		if v := *f.in; v < MinSessionTTL || v > MaxSessionLifetime {
			return Invalid("%s must be between %d and %d.", f.name, MinSessionTTL, MaxSessionLifetime)
		}
		*f.dst = *f.in
	}
	if in.ForwardAuth != nil {
		fa, err := parseForwardAuth(in.ForwardAuth)
		if err != nil {
			return err
		}
		p.ForwardAuth = fa
	}
	if in.ClientRegistration != nil {
		switch *in.ClientRegistration {
		case ClientRegistrationOpen:
			p.ClientRegistration = ClientRegistrationOpen
		case ClientRegistrationClosed:
			p.ClientRegistration = ""
		default:
			return Invalid(`clientRegistration must be "open" or "closed".`)
		}
	}
	return in.applyBranding(p)
}

// ProjectView is a project as the admin API shows it.
type ProjectView struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	CompanyID          string   `json:"companyId"`
	AllowedOrigins     []string `json:"allowedOrigins"`
	RPID               string   `json:"rpId"`
	SessionTTLSeconds  int      `json:"sessionTtlSeconds"`
	RateLimitPerMinute int      `json:"rateLimitPerMinute"`
	DenyCIDRs          []string `json:"denyCidrs"`
	EmailChange        string   `json:"emailChange"`
	// SessionRateLimitPerMinute is the per-session limit in force (the
	// default for a project that never set it).
	SessionRateLimitPerMinute int `json:"sessionRateLimitPerMinute"`
	// SessionIdleSeconds and SessionMaxSeconds are the session times in
	// force (sessionTimes: the defaults for a project that never set
	// them).
	SessionIdleSeconds int    `json:"sessionIdleSeconds"`
	SessionMaxSeconds  int    `json:"sessionMaxSeconds"`
	CreatedAt          string `json:"createdAt"`
	// ForwardAuth is the forward-auth settings; null when the project
	// has none.
	ForwardAuth *store.ForwardAuth `json:"forwardAuth"`
	// ClientRegistration is "open" when clients may register
	// themselves with the project's OpenID provider, else "closed".
	ClientRegistration string `json:"clientRegistration"`
	// DisplayName, LogoURL and AccentColor brand the hosted pages; ""
	// when unset.
	DisplayName string `json:"displayName"`
	LogoURL     string `json:"logoUrl"`
	AccentColor string `json:"accentColor"`
}

// ViewProject returns the admin view of p.
func (s *Service) ViewProject(p *store.Project) ProjectView {
	v := ProjectView{
		ID: p.ID, Name: p.Name, CompanyID: p.CompanyID,
		AllowedOrigins: p.AllowedOrigins, RPID: s.RPID(p),
		SessionTTLSeconds: p.SessionTTLSeconds, RateLimitPerMinute: p.RateLimitPerMinute,
		DenyCIDRs: p.DenyCIDRs, EmailChange: p.EmailChange, CreatedAt: formatTime(p.CreatedAt),
		SessionRateLimitPerMinute: sessionRateLimit(p), ClientRegistration: ClientRegistrationClosed,
		DisplayName: p.DisplayName, LogoURL: p.LogoURL, AccentColor: p.AccentColor,
	}
	if p.ClientRegistration == ClientRegistrationOpen {
		v.ClientRegistration = ClientRegistrationOpen
	}
	_, idle, most := sessionTimes(p)
	v.SessionIdleSeconds, v.SessionMaxSeconds = int(idle/time.Second), int(most/time.Second)
	if v.EmailChange == "" {
		v.EmailChange = EmailChangeVerify
	}
	if v.AllowedOrigins == nil {
		v.AllowedOrigins = []string{}
	}
	if v.DenyCIDRs == nil {
		v.DenyCIDRs = []string{}
	}
	if p.ForwardAuth != nil {
		fa := *p.ForwardAuth
		if fa.Rules == nil {
			fa.Rules = []store.ForwardAuthRule{}
		}
		v.ForwardAuth = &fa
	}
	return v
}

// RPID returns the project's WebAuthn relying party id: its rpId, else
// the host of its first allowed origin, else the base URL's host. A
// loopback address there (the default base URL is 127.0.0.1) becomes
// "localhost", since WebAuthn refuses IP addresses as relying party ids.
func (s *Service) RPID(p *store.Project) string {
	if p.RPID != "" {
		return p.RPID
	}
	host := hostOfOrigin(s.baseURL)
	if len(p.AllowedOrigins) > 0 {
		host = hostOfOrigin(p.AllowedOrigins[0])
	}
	if isLoopbackIP(host) {
		return "localhost"
	}
	return host
}

// CreateProject validates in and creates a project with its own ES256
// signing key. name is required.
func (s *Service) CreateProject(ctx context.Context, in ProjectInput) (*store.Project, error) {
	p, err := s.newProject(in)
	if err != nil {
		return nil, err
	}
	if err := s.db.Update(ctx, func(tx store.Tx) error { return tx.PutProject(p) }); err != nil {
		return nil, internal(err)
	}
	s.projectsChanged()
	return p, nil
}

// newProject validates in and returns a new project, not yet stored.
func (s *Service) newProject(in ProjectInput) (*store.Project, error) {
	if in.Name == nil {
		return nil, Invalid("name is required.")
	}
	p := &store.Project{
		ID:                        uuid.NewString(),
		SessionTTLSeconds:         DefaultSessionTTL,
		RateLimitPerMinute:        DefaultRateLimit,
		SessionRateLimitPerMinute: DefaultSessionRateLimit,
		AllowedOrigins:            []string{},
		DenyCIDRs:                 []string{},
		CreatedAt:                 s.now().UTC(),
	}
	if err := in.apply(p); err != nil {
		return nil, err
	}
	if p.CompanyID == "" {
		p.CompanyID = uuid.NewString()
	}
	if err := s.newSigningKey(p); err != nil {
		return nil, internal(err)
	}
	return p, nil
}

// newSigningKey gives p a fresh P-256 key, the private half sealed.
func (s *Service) newSigningKey(p *store.Project) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return err
	}
	sealed, err := s.keys.Seal(der, []byte("jwt:"+p.ID))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(pub)
	p.SigningKeyID = base64.RawURLEncoding.EncodeToString(sum[:12])
	p.SigningKey = sealed
	p.PublicKey = pub
	return nil
}

// Project returns the project with id (404 PROJECT_NOT_FOUND).
func (s *Service) Project(ctx context.Context, id string) (*store.Project, error) {
	p, err := s.project(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrProjectNotFound
	}
	return p, internal(err)
}

// projectTx returns the project with id inside tx, or 404
// PROJECT_NOT_FOUND.
func projectTx(tx store.Tx, id string) (*store.Project, error) {
	p, err := tx.Project(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrProjectNotFound
	}
	return p, err
}

// Projects lists every project.
func (s *Service) Projects(ctx context.Context) ([]*store.Project, error) {
	var out []*store.Project
	err := s.db.View(ctx, func(tx store.Tx) error {
		var err error
		out, err = tx.Projects()
		return err
	})
	return out, internal(err)
}

// UpdateProject applies in to project id.
func (s *Service) UpdateProject(ctx context.Context, id string, in ProjectInput) (*store.Project, error) {
	var p *store.Project
	err := s.db.Update(ctx, func(tx store.Tx) error {
		var err error
		p, err = projectTx(tx, id)
		if err != nil {
			return err
		}
		if err := in.apply(p); err != nil {
			return err
		}
		return tx.PutProject(p)
	})
	if err != nil {
		return nil, internal(err)
	}
	s.projects.invalidate(id)
	s.projectsChanged()
	return p, nil
}

// DeleteProject removes a project and all its data in one transaction
// (store.Tx.DeleteProject: users, sessions, factors, passkeys, codes,
// links, devices, challenges, external methods, grants, templates,
// OpenID provider keys, webhooks); its
// API keys are detached and answer INVALID_API_KEY from now on. No
// webhook event is emitted: the project's webhooks are gone with it.
// Authentication events and already queued mail stay.
func (s *Service) DeleteProject(ctx context.Context, id string) error {
	var detached []string
	err := s.db.Update(ctx, func(tx store.Tx) error {
		var err error
		detached, err = tx.DeleteProject(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrProjectNotFound
		}
		return err
	})
	if err != nil {
		return internal(err)
	}
	s.projects.invalidate(id)
	s.oidcKeySets.invalidate(id)
	s.pageTexts.invalidate(id)
	s.projectsChanged()
	s.oidc.forget(id, "")
	s.apiKeys.invalidate(detached...)
	for _, m := range []*sync.Map{&s.signers, &s.publicKeys, &s.oidcSigners} {
		m.Range(func(k, _ any) bool {
			if strings.HasPrefix(k.(string), id+"/") {
				m.Delete(k)
			}
			return true
		})
	}
	return nil
}
