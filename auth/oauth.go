package auth

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/auth/social"
	"latchkey/internal/netguard"
	"latchkey/store"
)

// OAuth 2.0 / OpenID Connect sign-in.
//
// POST /oauth/start keeps the state, the nonce and the PKCE verifier in a
// challenge row of kind "oauth_state" (keyed by the keyed hash of the
// state, due for the sweep after OAuthStateLifetime) and answers the
// provider's authorization URL. The provider sends the browser back to
// /oauth/callback (GET with the query, or, for providers whose response
// mode is form_post, a POST of the same fields as a form from the
// provider's page), which consumes that row (single use), redeems the
// provider's code with the verifier, verifies the ID token (or reads
// GitHub's user and emails API) and keeps the identity it proved in a
// challenge row of kind "oauth_code" keyed by the hash of a new one-time
// code; the browser goes on to the app's redirectUrl?code=. The app's
// backend then calls POST /oauth/exchange, which consumes that row and
// signs the user in under the linking rules (signInIdentity): the
// account linked to the provider account (its issuer and subject, a
// store.Identity written by the first sign-in), else the address rules.
//
// Every call to a provider goes through social's guarded clients: no
// private, link-local or reserved address, and loopback only for a
// provider on loopback (oauthHTTP).
const (
	// OAuthStateLifetime is how long a started sign-in waits for the
	// provider's callback.
	OAuthStateLifetime = 10 * time.Minute
	// OAuthCodeLifetime is how long the one-time code handed to the app
	// may be exchanged.
	OAuthCodeLifetime = 5 * time.Minute
	// OAuthCallbackPath is the redirect_uri every provider is given,
	// under the base URL.
	OAuthCallbackPath = "/api/v1/oauth/callback"

	kindOAuthState = "oauth_state"
	kindOAuthCode  = "oauth_code"
	methodOAuth    = "oauth"

	// githubIssuer is the issuer of GitHub identities (GitHub issues no
	// ID token): their links are (githubIssuer, numeric user id).
	githubIssuer = "https://github.com"
	// maxSubject is the longest subject accepted (OpenID Connect Core
	// 2: at most 255 ASCII characters; bytes here).
	maxSubject = 255
)

// Provider types and their fixed issuers.
var (
	providerTypes = map[string]bool{"oidc": true, "github": true, "google": true, "apple": true, "microsoft": true}
	knownIssuers  = map[string]string{
		"google":    "https://accounts.google.com",
		"apple":     "https://appleid.apple.com",
		"microsoft": "https://login.microsoftonline.com/common/v2.0",
	}
	providerName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	// microsoftIssuer is the issuer of an ID token from Microsoft's
	// multi-tenant endpoints: the user's own tenant.
	microsoftIssuer = regexp.MustCompile(`^https://login\.microsoftonline\.com/([0-9a-f-]{36})/v2\.0$`)
)

// ProviderInput is the body of POST /admin/projects/:id/providers.
type ProviderInput struct {
	Name         string   `json:"name"`
	Type         string   `json:"type"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Issuer       string   `json:"issuer"`
	Scopes       []string `json:"scopes"`
	// ResponseMode is ResponseModeQuery or ResponseModeFormPost; empty
	// means the type's default (form_post for Apple, else query).
	ResponseMode string `json:"responseMode"`
	// LinkByEmail says whether a first sign-in with the provider may sign
	// in the existing account of an address the provider vouches for;
	// nil means the type's default (DefaultLinkByEmail).
	LinkByEmail *bool `json:"linkByEmail"`
}

// ProviderPatch is the body of PATCH
// /admin/projects/:id/providers/:name: the settings to change (nil:
// unchanged).
type ProviderPatch struct {
	LinkByEmail *bool `json:"linkByEmail"`
}

// ProviderView is a provider as the admin API shows it: never its secret.
type ProviderView struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	Type         string   `json:"type"`
	ClientID     string   `json:"clientId"`
	Issuer       *string  `json:"issuer"`
	Scopes       []string `json:"scopes"`
	ResponseMode string   `json:"responseMode"`
	LinkByEmail  bool     `json:"linkByEmail"`
	CreatedAt    string   `json:"createdAt"`
}

// How a provider returns the browser to the callback (the OAuth 2.0
// response_mode): a redirect carrying code and state in its query, or
// an HTML form the browser posts to the callback (Apple's way whenever
// it is asked for the address or the name).
const (
	ResponseModeQuery    = "query"
	ResponseModeFormPost = "form_post"
)

// responseMode is pr's response mode: the stored one, else the type's
// default.
func responseMode(pr *store.Provider) string {
	if pr.ResponseMode != "" {
		return pr.ResponseMode
	}
	if pr.Type == "apple" {
		return ResponseModeFormPost
	}
	return ResponseModeQuery
}

// DefaultLinkByEmail is the linkByEmail of a provider added without
// one: true for the providers whose verified addresses are their own to
// vouch for (google, apple, github, microsoft), false for a generic
// OpenID Connect provider (type oidc), whose users may be able to set
// any address on their account there.
func DefaultLinkByEmail(typ string) bool { return typ != "oidc" }

// linkByEmail reports whether a first sign-in with pr may sign in the
// existing account of the address pr vouches for. A provider stored
// before the setting existed (nil) keeps doing what it did then: it
// links.
func linkByEmail(pr *store.Provider) bool {
	if pr.LinkByEmail != nil {
		return *pr.LinkByEmail
	}
	return true
}

// ViewProvider returns the admin view of pr.
func ViewProvider(pr *store.Provider) ProviderView {
	scopes := pr.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return ProviderView{ID: pr.ID, Name: pr.Name, Type: pr.Type, ClientID: pr.ClientID,
		Issuer: nullable(pr.Issuer), Scopes: scopes, ResponseMode: responseMode(pr), LinkByEmail: linkByEmail(pr),
		CreatedAt: formatTime(pr.CreatedAt)}
}

// defaultScopes are the scopes asked when a provider names none.
func defaultScopes(typ string) []string {
	switch typ {
	case "github":
		return []string{"read:user", "user:email"}
	case "apple":
		return []string{"openid", "email", "name"}
	}
	return []string{"openid", "email", "profile"}
}

// checkIssuer validates an issuer URL: https, or http on a loopback
// address (a provider on the same host). An issuer whose host is a
// private, link-local or reserved IP address is refused unless
// allowPrivate (a name is judged when it is dialled: social).
func checkIssuer(raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || len(raw) > 512 {
		return Invalid("issuer must be an absolute https URL.")
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !social.LoopbackHost(u.Hostname())) {
		return Invalid("issuer must be an absolute https URL.")
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate && netguard.IsPrivate(ip) && !ip.Unmap().IsLoopback() {
		return Invalid("issuer must not be a private, link-local or reserved address: latchkey does not call those (--oauth-allow-private lifts this).")
	}
	return nil
}

// loopbackProvider reports whether pr is on loopback (its issuer's
// host, or for GitHub the endpoints in use): its calls may then reach
// loopback addresses.
func (s *Service) loopbackProvider(pr *store.Provider) bool {
	if pr.Type == "github" {
		return s.social.GitHubLoopback()
	}
	u, err := url.Parse(pr.Issuer)
	return err == nil && social.LoopbackHost(u.Hostname())
}

// AddProvider registers an OAuth provider for project projectID; the
// client secret is sealed with the keyring and never shown again. Its
// linkByEmail is in.LinkByEmail, else DefaultLinkByEmail of its type.
// 400 VALIDATION_ERROR for a bad field, 404 PROJECT_NOT_FOUND, 409
// PROVIDER_EXISTS when the project has a provider of that name.
func (s *Service) AddProvider(ctx context.Context, projectID string, in ProviderInput) (ProviderView, error) {
	if !providerTypes[in.Type] {
		return ProviderView{}, Invalid(`type must be "oidc", "github", "google", "apple" or "microsoft".`)
	}
	if in.Name == "" {
		in.Name = in.Type
	}
	if !providerName.MatchString(in.Name) {
		return ProviderView{}, Invalid("name must match [a-z0-9][a-z0-9_-]{0,63}.")
	}
	if in.ClientID == "" || len(in.ClientID) > 512 {
		return ProviderView{}, Invalid("clientId must be 1 to 512 characters.")
	}
	if in.ClientSecret == "" || len(in.ClientSecret) > 4096 {
		return ProviderView{}, Invalid("clientSecret must be 1 to 4096 characters.")
	}
	switch {
	case in.Type == "oidc" && in.Issuer == "":
		return ProviderView{}, Invalid("issuer is required for type oidc.")
	case in.Type == "github" && in.Issuer != "":
		return ProviderView{}, Invalid("issuer is not used for type github.")
	case in.Type == "microsoft" && in.Issuer != "":
		// A single-tenant application names its tenant's issuer.
		if !microsoftIssuer.MatchString(in.Issuer) && in.Issuer != knownIssuers["microsoft"] {
			return ProviderView{}, Invalid("issuer must be https://login.microsoftonline.com/<tenant id>/v2.0.")
		}
	case in.Type == "google" || in.Type == "apple":
		if in.Issuer != "" && in.Issuer != knownIssuers[in.Type] {
			return ProviderView{}, Invalid("issuer of %s is %s.", in.Type, knownIssuers[in.Type])
		}
	}
	if in.Issuer == "" {
		in.Issuer = knownIssuers[in.Type]
	}
	if in.Issuer != "" {
		if err := checkIssuer(in.Issuer, s.social.AllowsPrivate()); err != nil {
			return ProviderView{}, err
		}
	}
	if len(in.Scopes) > 20 {
		return ProviderView{}, Invalid("scopes holds at most 20 scopes.")
	}
	for _, sc := range in.Scopes {
		if sc == "" || len(sc) > 128 || strings.ContainsAny(sc, " \t\r\n") {
			return ProviderView{}, Invalid("each scope must be 1 to 128 characters without spaces.")
		}
	}
	if len(in.Scopes) == 0 {
		in.Scopes = defaultScopes(in.Type)
	}
	if in.Type != "github" && !contains(in.Scopes, "openid") {
		in.Scopes = append([]string{"openid"}, in.Scopes...)
	}
	switch in.ResponseMode {
	case "":
		in.ResponseMode = responseMode(&store.Provider{Type: in.Type})
	case ResponseModeQuery, ResponseModeFormPost:
	default:
		return ProviderView{}, Invalid(`responseMode must be "query" or "form_post".`)
	}
	switch {
	case in.Type == "github" && in.ResponseMode == ResponseModeFormPost:
		return ProviderView{}, Invalid("responseMode form_post is not available for type github: GitHub returns with a redirect.")
	case in.Type == "apple" && in.ResponseMode == ResponseModeQuery && (contains(in.Scopes, "email") || contains(in.Scopes, "name")):
		return ProviderView{}, Invalid("Apple returns with form_post when asked for email or name: responseMode query needs scopes without them.")
	}
	link := DefaultLinkByEmail(in.Type)
	if in.LinkByEmail != nil {
		link = *in.LinkByEmail
	}
	pr := store.Provider{ID: newID(), Name: in.Name, Type: in.Type, ClientID: in.ClientID,
		Issuer: in.Issuer, Scopes: in.Scopes, ResponseMode: in.ResponseMode, LinkByEmail: &link, CreatedAt: s.now().UTC()}
	sealed, err := s.keys.Seal([]byte(in.ClientSecret), []byte("provider:"+pr.ID))
	if err != nil {
		return ProviderView{}, internal(err)
	}
	pr.Secret = sealed
	err = s.db.Update(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		if findProvider(p, pr.Name) != nil {
			return ErrProviderExists
		}
		p.Providers = append(p.Providers, pr)
		return tx.PutProject(p)
	})
	if err != nil {
		return ProviderView{}, internal(err)
	}
	s.projects.invalidate(projectID)
	s.projectsChanged()
	return ViewProvider(&pr), nil
}

// UpdateProvider changes the settings of project projectID's provider
// name that patch sets (linkByEmail) and returns its view; sign-ins
// already past the provider's callback keep the setting they were
// proven under. 400 VALIDATION_ERROR when patch sets nothing, 404
// PROJECT_NOT_FOUND or PROVIDER_NOT_FOUND.
func (s *Service) UpdateProvider(ctx context.Context, projectID, name string, patch ProviderPatch) (ProviderView, error) {
	if patch.LinkByEmail == nil {
		return ProviderView{}, Invalid("Nothing to change: give linkByEmail.")
	}
	var v ProviderView
	err := s.db.Update(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		pr := findProvider(p, name)
		if pr == nil {
			return ErrProviderNotFound
		}
		pr.LinkByEmail = boolPtr(*patch.LinkByEmail)
		v = ViewProvider(pr)
		return tx.PutProject(p)
	})
	if err != nil {
		return ProviderView{}, internal(err)
	}
	s.projects.invalidate(projectID)
	s.projectsChanged()
	return v, nil
}

// Providers lists project projectID's providers, oldest first; 404
// PROJECT_NOT_FOUND for an unknown project.
func (s *Service) Providers(ctx context.Context, projectID string) ([]ProviderView, error) {
	out := []ProviderView{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		for i := range p.Providers {
			out = append(out, ViewProvider(&p.Providers[i]))
		}
		return nil
	})
	return out, internal(err)
}

// DeleteProvider removes project projectID's provider name; sign-ins
// already started with it fail at the callback. 404 PROJECT_NOT_FOUND or
// PROVIDER_NOT_FOUND.
func (s *Service) DeleteProvider(ctx context.Context, projectID, name string) error {
	var removed string // its id
	err := s.db.Update(ctx, func(tx store.Tx) error {
		p, err := projectTx(tx, projectID)
		if err != nil {
			return err
		}
		for i := range p.Providers {
			if p.Providers[i].Name == name {
				removed = p.Providers[i].ID
				p.Providers = append(p.Providers[:i:i], p.Providers[i+1:]...)
				if len(p.Providers) == 0 {
					p.Providers = nil
				}
				return tx.PutProject(p)
			}
		}
		return ErrProviderNotFound
	})
	if err != nil {
		return internal(err)
	}
	s.projects.invalidate(projectID)
	s.projectsChanged()
	s.oidc.forget(projectID, removed)
	return nil
}

func findProvider(p *store.Project, name string) *store.Provider {
	for i := range p.Providers {
		if p.Providers[i].Name == name {
			return &p.Providers[i]
		}
	}
	return nil
}

// pendingOAuth is what a started sign-in keeps server-side (the
// challenge's Session): never sent anywhere but to the provider.
type pendingOAuth struct {
	ProviderID  string `json:"providerId"`
	Provider    string `json:"provider"`
	RedirectURL string `json:"redirectUrl"`
	Nonce       string `json:"nonce,omitempty"`
	Verifier    string `json:"verifier"`
	// Bind is the app's codeChallenge, when it gave one: the exchange
	// then needs its codeVerifier (checkBinding).
	Bind string `json:"bind,omitempty"`
}

// oauthIdentity is what a callback proved, kept for the exchange.
type oauthIdentity struct {
	Provider string `json:"provider"`
	// Issuer and Subject name the provider account (githubIssuer for
	// GitHub). An identity kept by a release before links existed has
	// no Issuer: it is neither looked up nor linked.
	Issuer        string `json:"issuer,omitempty"`
	Subject       string `json:"subject"`
	Email         string `json:"email"`
	EmailVerified bool   `json:"emailVerified"`
	// LinkByEmail is the provider's setting when the callback proved
	// the identity (false in one kept by an older release).
	LinkByEmail bool   `json:"linkByEmail,omitempty"`
	Bind        string `json:"bind,omitempty"` // the sign-in's codeChallenge
}

// oauthClient is a provider ready to use: its OAuth 2.0 configuration
// and, for OpenID Connect, the ID-token verifier (JWKS, issuer,
// audience, expiry).
type oauthClient struct {
	pr       *store.Provider
	conf     *oauth2.Config
	verifier *oidc.IDTokenVerifier // nil for GitHub
	op       *oidc.Provider        // nil for GitHub
}

// DiscoveryTTL is how long a provider's OpenID Connect discovery (its
// document, and the JWKS read through it) is used before the next
// sign-in with that provider reads it again.
const DiscoveryTTL = time.Hour

// discovered caches OpenID Connect discovery by provider id (and with
// it the issuer's JWKS, which go-oidc refreshes on an unknown key id),
// for DiscoveryTTL by the service's clock. Removing a provider, or its
// project, drops its entries; a provider added again has a new id, so
// it is discovered anew. On other replicas a removed provider's entry
// is never used again (the project row no longer names it) and expires:
// entries past their TTL are dropped as others are filled. Safe for
// concurrent use; the mutex is never held across I/O (two sign-ins that
// miss at once both read the document, and the later fill wins).
type discovered struct {
	mu sync.Mutex
	m  map[string]discovery // by provider id
}

// discovery is one provider's discovered OpenID Connect configuration:
// the provider object, and the key set of its JWKS (read when a token
// names a key id it does not hold) with the signing algorithms it
// announces.
type discovery struct {
	op        *oidc.Provider
	keys      oidc.KeySet
	algs      []string
	projectID string
	issuer    string
	fetched   time.Time
}

// signingAlgs are the ID-token signing algorithms go-oidc verifies.
var signingAlgs = map[string]bool{oidc.RS256: true, oidc.RS384: true, oidc.RS512: true, oidc.ES256: true, oidc.ES384: true,
	oidc.ES512: true, oidc.PS256: true, oidc.PS384: true, oidc.PS512: true, oidc.EdDSA: true}

// get returns the discovery of provider pr of project projectID,
// reading its issuer's discovery document when there is no entry, or
// its entry is older than DiscoveryTTL at now. ctx carries the client
// of the call; keysCtx the client (and nothing else) for the key set's
// later reads of the JWKS.
func (d *discovered) get(ctx, keysCtx context.Context, projectID string, pr *store.Provider, multiTenant bool, now time.Time) (discovery, error) {
	d.mu.Lock()
	e, ok := d.m[pr.ID]
	d.mu.Unlock()
	if ok && e.issuer == pr.Issuer && now.Sub(e.fetched) < DiscoveryTTL {
		return e, nil
	}
	if multiTenant {
		// Microsoft's multi-tenant discovery names a templated issuer;
		// the token's issuer is checked against the tenant (identify).
		ctx = oidc.InsecureIssuerURLContext(ctx, strings.Replace(pr.Issuer, "/common/", "/{tenantid}/", 1))
	}
	op, err := oidc.NewProvider(ctx, pr.Issuer)
	if err != nil {
		return discovery{}, err
	}
	var doc struct {
		JWKS string   `json:"jwks_uri"`
		Algs []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := op.Claims(&doc); err != nil {
		return discovery{}, err
	}
	e = discovery{op: op, keys: oidc.NewRemoteKeySet(keysCtx, doc.JWKS), projectID: projectID, issuer: pr.Issuer, fetched: now}
	for _, a := range doc.Algs {
		if signingAlgs[a] {
			e.algs = append(e.algs, a)
		}
	}
	d.mu.Lock()
	if d.m == nil {
		d.m = map[string]discovery{}
	}
	for id, old := range d.m {
		if now.Sub(old.fetched) >= DiscoveryTTL {
			delete(d.m, id)
		}
	}
	d.m[pr.ID] = e
	d.mu.Unlock()
	return e, nil
}

// forget drops the entry of provider providerID, or with providerID
// "" the entries of every provider of project projectID.
func (d *discovered) forget(projectID, providerID string) {
	d.mu.Lock()
	for id, e := range d.m {
		if id == providerID || providerID == "" && e.projectID == projectID {
			delete(d.m, id)
		}
	}
	d.mu.Unlock()
}

// oauthHTTP returns ctx carrying the HTTP client for the calls to
// provider pr: guarded against private addresses, and against loopback
// unless pr is on loopback.
func (s *Service) oauthHTTP(ctx context.Context, pr *store.Provider) context.Context {
	return s.social.Context(ctx, s.loopbackProvider(pr))
}

// providerFailed is the error for a call to provider pr that failed:
// ErrProviderPrivate when the guard refused its address (logged: the
// operator's to fix), else ErrProviderUnavailable.
func (s *Service) providerFailed(pr *store.Provider, err error) *Error {
	if errors.Is(err, social.ErrPrivateAddress) {
		s.log.Warn("oauth: a provider endpoint is at a private, loopback or link-local address; not called",
			"provider", pr.Name, "issuer", pr.Issuer, "err", err)
		return ErrProviderPrivate.Because(err)
	}
	return ErrProviderUnavailable.Because(err)
}

// keyErrKey is the context key of the slot where reportingKeys keeps a
// verification's key-set failure, which go-oidc's error leaves out.
type keyErrKey struct{}

// reportingKeys is a key set that keeps its failure (a JWKS that could
// not be read, say) in the slot of the verification's context, so that
// identify can tell an unreachable JWKS from a bad signature.
type reportingKeys struct{ oidc.KeySet }

// VerifySignature verifies jwt with the key set, keeping its failure.
func (k reportingKeys) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := k.KeySet.VerifySignature(ctx, jwt)
	if slot, ok := ctx.Value(keyErrKey{}).(*error); ok && err != nil {
		*slot = err
	}
	return payload, err
}

// client builds the client of provider pr of project projectID:
// discovery (cached) for OpenID Connect types.
func (s *Service) client(ctx context.Context, projectID string, pr *store.Provider) (*oauthClient, error) {
	secret, err := s.keys.Open(pr.Secret, []byte("provider:"+pr.ID))
	if err != nil {
		return nil, err
	}
	conf := &oauth2.Config{ClientID: pr.ClientID, ClientSecret: string(secret),
		RedirectURL: s.baseURL + OAuthCallbackPath, Scopes: pr.Scopes}
	if pr.Type == "github" {
		gh := s.social.Endpoints()
		conf.Endpoint = oauth2.Endpoint{AuthURL: gh.AuthURL, TokenURL: gh.TokenURL, AuthStyle: oauth2.AuthStyleInParams}
		return &oauthClient{pr: pr, conf: conf}, nil
	}
	multi := pr.Type == "microsoft" && !microsoftIssuer.MatchString(pr.Issuer)
	d, err := s.oidc.get(s.oauthHTTP(ctx, pr), s.oauthHTTP(context.Background(), pr), projectID, pr, multi, s.now())
	if err != nil {
		return nil, s.providerFailed(pr, err)
	}
	conf.Endpoint = d.op.Endpoint()
	return &oauthClient{pr: pr, conf: conf, op: d.op, verifier: oidc.NewVerifier(pr.Issuer, reportingKeys{d.keys}, &oidc.Config{
		ClientID: pr.ClientID, Now: s.now, SkipIssuerCheck: multi, SupportedSigningAlgs: d.algs,
	})}, nil
}

// oauthKey is the challenge id of a state or one-time code: its keyed
// hash, so no row is keyed by a secret.
func (s *Service) oauthKey(domain, secret string) string {
	h := s.keys.HashString(domain, secret)
	return hex.EncodeToString(h[:])
}

// StartOAuth begins a sign-in with project p's provider name and returns
// the provider's authorization URL. codeChallenge, when not empty, binds
// the sign-in to whoever holds its verifier (checkBinding): the app keeps
// the verifier with the browser's own session, so a callback URL carried
// to another browser cannot sign that browser in (login CSRF). 400
// VALIDATION_ERROR for a codeChallenge that is not a base64url SHA-256,
// 400 INVALID_REDIRECT_URL when redirectURL is not under an allowed
// origin, 404 PROVIDER_NOT_FOUND, 403 RISK_BLOCKED from a denied address,
// 502 PROVIDER_UNAVAILABLE when the provider's discovery document cannot
// be read.
func (s *Service) StartOAuth(ctx context.Context, p *store.Project, name, redirectURL, codeChallenge string, m Meta) (string, error) {
	a := s.attempt(ctx, p.ID, methodOAuth, "start", m)
	if name == "" {
		return "", a.reject(Invalid("provider is required."))
	}
	if codeChallenge != "" && !isChallenge(codeChallenge) {
		return "", a.reject(Invalid("codeChallenge must be the SHA-256 of a code verifier in base64url without padding: 43 characters of A-Z, a-z, 0-9, '-' and '_'."))
	}
	if redirectURL == "" || !CheckRedirect(redirectURL, p.AllowedOrigins) {
		return "", a.reject(ErrInvalidRedirect)
	}
	if err := s.checkRisk(p, m); err != nil {
		return "", a.reject(err)
	}
	pr := findProvider(p, name)
	if pr == nil {
		return "", a.reject(ErrProviderNotFound)
	}
	c, err := s.client(ctx, p.ID, pr)
	if err != nil {
		return "", a.reject(internal(err))
	}
	state := base64.RawURLEncoding.EncodeToString(randomBytes(32))
	pend := pendingOAuth{ProviderID: pr.ID, Provider: pr.Name, RedirectURL: redirectURL, Verifier: oauth2.GenerateVerifier(), Bind: codeChallenge}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(pend.Verifier)}
	if c.verifier != nil {
		pend.Nonce = base64.RawURLEncoding.EncodeToString(randomBytes(24))
		opts = append(opts, oidc.Nonce(pend.Nonce))
	}
	if responseMode(pr) == ResponseModeFormPost {
		opts = append(opts, oauth2.SetAuthURLParam("response_mode", ResponseModeFormPost))
	}
	raw, err := json.Marshal(pend)
	if err != nil {
		return "", a.reject(internal(err))
	}
	ch := &store.Challenge{ID: s.oauthKey(kindOAuthState, state), ProjectID: p.ID, Kind: kindOAuthState,
		Session: raw, ExpiresAt: s.now().Add(OAuthStateLifetime).UTC()}
	err = a.update(func(tx store.Tx) error {
		if err := tx.PutChallenge(ch); err != nil {
			return err
		}
		return a.ok(tx)
	})
	if err := a.result(err); err != nil {
		return "", err
	}
	return c.conf.AuthCodeURL(state, opts...), nil
}

// OAuthCallback finishes the provider's side of a sign-in: it consumes
// the state (single use), redeems the provider's code with the PKCE
// verifier and proves the identity (ID token: signature by a key of the
// issuer's JWKS, issuer, audience, expiry, nonce; GitHub: its API), then
// returns where to send the browser: the app's redirectUrl with code=
// (the one-time code for OAuthExchange) or, when the provider or the
// token failed, with error=<wire code>. An unknown, used or expired
// state has no redirect to go to: 400 INVALID_STATE.
func (s *Service) OAuthCallback(ctx context.Context, state, code, providerError string, m Meta) (string, error) {
	a := s.attempt(ctx, "", methodOAuth, "callback", m)
	if state == "" || len(state) > 256 {
		return "", a.reject(ErrInvalidState)
	}
	id := s.oauthKey(kindOAuthState, state)
	// The state is read first and consumed in the transaction that ends
	// the callback (with the one-time code when it succeeds: one commit),
	// after the calls to the provider, which no transaction may wait
	// for. Two callbacks racing with one state both reach the provider;
	// only the first to commit finds the state still there.
	var ch *store.Challenge
	if err := s.db.View(ctx, func(tx store.Tx) error {
		c, err := tx.Challenge(id)
		if err == nil && c.Kind == kindOAuthState {
			ch = c
		} else if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return err
	}); err != nil {
		return "", a.reject(internal(err))
	}
	if ch == nil {
		return "", a.reject(ErrInvalidState)
	}
	a.projectID = ch.ProjectID
	// consume deletes the state inside tx, or reports it already gone.
	consume := func(tx store.Tx) (bool, error) {
		if _, err := tx.Challenge(id); errors.Is(err, store.ErrNotFound) {
			return false, nil
		} else if err != nil {
			return false, err
		}
		return true, tx.DeleteChallenge(id)
	}
	// end consumes the state and records failure, in one transaction.
	end := func(failure error) error {
		err := a.update(func(tx store.Tx) error {
			if _, err := consume(tx); err != nil {
				return err
			}
			return a.fail(tx, failure)
		})
		return a.result(err)
	}
	if !s.now().Before(ch.ExpiresAt) {
		return "", end(ErrStateExpired)
	}
	p, err := s.project(ctx, ch.ProjectID)
	if err != nil { // the project was deleted (with the state)
		return "", a.reject(ErrInvalidState)
	}
	var pend pendingOAuth
	if err := json.Unmarshal(ch.Session, &pend); err != nil {
		return "", a.reject(internal(err))
	}
	back := func(failure error) (string, error) {
		e := AsError(failure)
		if err := end(failure); err != nil && AsError(err).Code != e.Code {
			return "", err
		}
		if e.Code == ErrInternal.Code {
			s.log.Error("oauth callback", "provider", pend.Provider, "err", failure)
		}
		return withQuery(pend.RedirectURL, "error", e.Code), nil
	}
	if err := s.checkRisk(p, m); err != nil {
		return back(err)
	}
	if providerError != "" || code == "" {
		return back(ErrOAuthDenied)
	}
	pr := findProvider(p, pend.Provider)
	if pr == nil || pr.ID != pend.ProviderID {
		return back(ErrProviderNotFound)
	}
	c, err := s.client(ctx, p.ID, pr)
	if err != nil {
		return back(err)
	}
	idn, err := s.identify(ctx, c, code, &pend)
	if err != nil {
		return back(err)
	}
	idn.Bind, idn.LinkByEmail = pend.Bind, linkByEmail(pr)
	a.email = idn.Email
	raw, err := json.Marshal(idn)
	if err != nil {
		return back(internal(err))
	}
	one := base64.RawURLEncoding.EncodeToString(randomBytes(32))
	out := &store.Challenge{ID: s.oauthKey(kindOAuthCode, one), ProjectID: p.ID, Kind: kindOAuthCode,
		Email: idn.Email, Session: raw, ExpiresAt: s.now().Add(OAuthCodeLifetime).UTC()}
	err = a.update(func(tx store.Tx) error {
		if there, err := consume(tx); err != nil {
			return err
		} else if !there {
			return a.fail(tx, ErrInvalidState)
		}
		if err := tx.PutChallenge(out); err != nil {
			return err
		}
		return a.ok(tx)
	})
	if err := a.result(err); err != nil {
		return "", err
	}
	return withQuery(pend.RedirectURL, "code", one), nil
}

// withQuery returns raw with name=value added to its query.
func withQuery(raw, name, value string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// identify redeems the provider's code and proves who signed in: for
// OpenID Connect, the ID token's signature, issuer, audience, expiry and
// nonce (go-oidc), its authorized party (checkAZP) and a usable subject;
// whether the address is verified (emailVerified); GitHub: its API.
func (s *Service) identify(ctx context.Context, c *oauthClient, code string, pend *pendingOAuth) (*oauthIdentity, error) {
	hctx := s.oauthHTTP(ctx, c.pr)
	tok, err := c.conf.Exchange(hctx, code, oauth2.VerifierOption(pend.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, ErrOAuthDenied.Because(err)
		}
		return nil, s.providerFailed(c.pr, err)
	}
	if c.verifier == nil {
		return s.githubIdentity(hctx, c, tok)
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		return nil, ErrInvalidIDToken.Because(errors.New("no id_token in the token response"))
	}
	var keyErr error
	idt, err := c.verifier.Verify(context.WithValue(hctx, keyErrKey{}, &keyErr), rawID)
	if err != nil {
		// The JWKS could not be read (refused by the guard, or
		// unreachable): the provider's failure, not the token's.
		var ue *url.Error
		if errors.Is(keyErr, social.ErrPrivateAddress) || errors.As(keyErr, &ue) {
			return nil, s.providerFailed(c.pr, keyErr)
		}
		return nil, ErrInvalidIDToken.Because(err)
	}
	if idt.Nonce != pend.Nonce {
		return nil, ErrInvalidIDToken.Because(errors.New("nonce mismatch"))
	}
	if !usableSubject(idt.Subject) {
		return nil, ErrInvalidIDToken.Because(fmt.Errorf("subject of %d bytes, empty, too long or not printable text", len(idt.Subject)))
	}
	var claims idClaims
	if err := idt.Claims(&claims); err != nil {
		return nil, ErrInvalidIDToken.Because(err)
	}
	if err := checkAZP(idt.Audience, claims.AZP, c.pr.ClientID); err != nil {
		return nil, ErrInvalidIDToken.Because(err)
	}
	if c.pr.Type == "microsoft" && !microsoftIssuer.MatchString(c.pr.Issuer) {
		if sub := microsoftIssuer.FindStringSubmatch(claims.Issuer); sub == nil || sub[1] != claims.TenantID {
			return nil, ErrInvalidIDToken.Because(fmt.Errorf("issuer %q is not the token's tenant", claims.Issuer))
		}
	}
	verified := emailVerified(c.pr.Type, &claims)
	if claims.Email == "" && c.op.UserInfoEndpoint() != "" {
		// Providers that keep the address out of the ID token give it
		// from their userinfo endpoint, for the same subject.
		ui, err := c.op.UserInfo(hctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return nil, s.providerFailed(c.pr, err)
		}
		if ui.Subject != idt.Subject {
			return nil, ErrInvalidIDToken.Because(errors.New("userinfo names another subject"))
		}
		claims.Email, verified = ui.Email, ui.EmailVerified
	}
	email, err := NormalizeEmail(claims.Email)
	if err != nil {
		return nil, ErrEmailNotVerified.Because(fmt.Errorf("no usable address: %w", err))
	}
	// The token's own issuer: for Microsoft's multi-tenant endpoint, the
	// user's tenant (checked above), else the provider's (go-oidc).
	return &oauthIdentity{Provider: c.pr.Name, Issuer: claims.Issuer, Subject: idt.Subject, Email: email, EmailVerified: verified}, nil
}

// idClaims are the ID-token claims identify reads besides go-oidc's.
type idClaims struct {
	Issuer        string `json:"iss"`
	TenantID      string `json:"tid"`
	AZP           string `json:"azp"`
	Email         string `json:"email"`
	EmailVerified any    `json:"email_verified"` // Apple sends "true"
	// EDOV is Microsoft's "email domain owner verified" (an optional
	// claim the application asks for): true when the domain's owner
	// vouches for the address.
	EDOV any `json:"xms_edov"`
}

// isTrue reports whether a claim is true, as a JSON boolean or the
// string "true" (as Apple sends email_verified).
func isTrue(v any) bool { return v == true || v == "true" }

// emailVerified reports whether an ID token of a provider of type typ
// vouches for its address: email_verified true; for Microsoft, whose
// email claim is whatever the account's owner typed unless said
// otherwise, also xms_edov true (the address's domain owner verified
// it). Microsoft sends no email_verified by default, so without
// xms_edov its addresses are not verified.
func emailVerified(typ string, c *idClaims) bool {
	if isTrue(c.EmailVerified) {
		return true
	}
	return typ == "microsoft" && isTrue(c.EDOV)
}

// checkAZP applies OpenID Connect Core 3.1.3.7 to an ID token whose
// audience (aud) go-oidc found to contain clientID: with several
// audiences, the authorized party (azp) must be present and be
// clientID; with one, an azp that is present must be clientID.
func checkAZP(aud []string, azp, clientID string) error {
	switch {
	case len(aud) > 1 && azp == "":
		return fmt.Errorf("%d audiences and no azp", len(aud))
	case azp != "" && azp != clientID:
		return fmt.Errorf("azp %q is not this client", azp)
	}
	return nil
}

// usableSubject reports whether sub can name a provider account: 1 to
// maxSubject bytes of UTF-8 text without control characters.
func usableSubject(sub string) bool {
	if sub == "" || len(sub) > maxSubject || !utf8.ValidString(sub) {
		return false
	}
	return !strings.ContainsFunc(sub, unicode.IsControl)
}

// githubIdentity reads GitHub's user and its primary address.
func (s *Service) githubIdentity(ctx context.Context, c *oauthClient, tok *oauth2.Token) (*oauthIdentity, error) {
	id, emails, err := s.social.GitHubUser(ctx, c.conf, tok)
	if errors.Is(err, social.ErrRefused) {
		return nil, ErrOAuthDenied.Because(err)
	} else if err != nil {
		return nil, s.providerFailed(c.pr, err)
	}
	idn := &oauthIdentity{Provider: c.pr.Name, Issuer: githubIssuer, Subject: fmt.Sprint(id)}
	for _, e := range emails {
		if e.Primary {
			email, err := NormalizeEmail(e.Email)
			if err != nil {
				return nil, ErrEmailNotVerified.Because(err)
			}
			idn.Email, idn.EmailVerified = email, e.Verified
		}
	}
	if idn.Email == "" {
		return nil, ErrEmailNotVerified.Because(errors.New("GitHub user without a primary address"))
	}
	return idn, nil
}

// OAuthExchange trades the one-time code of a callback for a login in
// project p (single use, OAuthCodeLifetime), under the linking rules of
// signInIdentity: the account linked to the provider account, else an
// address the provider does not say is verified signs no one in (403
// EMAIL_NOT_VERIFIED), a new address is a new, verified user, and an
// existing account of the address is signed in only when the provider
// links by address (else 409 SIGN_IN_WITH_EMAIL_FIRST) and it has no
// second factor (TOTP, SMS, passkey; else 409 SIGN_IN_WITH_EMAIL_FIRST:
// the app signs the user in by email code instead, which its factors
// then guard). 401 INVALID_CODE for an unknown, used or expired code;
// 403 USER_DISABLED; 403 RISK_BLOCKED.
// A sign-in started with a codeChallenge needs its codeVerifier, and one
// started without takes none (401 INVALID_CODE otherwise, the code used
// up); a codeVerifier that is not 43-128 unreserved characters (RFC 7636)
// is 400 VALIDATION_ERROR. It returns the login and the provider's name.
func (s *Service) OAuthExchange(ctx context.Context, p *store.Project, code, codeVerifier string, m Meta) (*Login, string, error) {
	a := s.attempt(ctx, p.ID, methodOAuth, "exchange", m)
	if code == "" {
		return nil, "", a.reject(Invalid("code is required."))
	}
	if codeVerifier != "" && !isVerifier(codeVerifier) {
		return nil, "", a.reject(Invalid("codeVerifier must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_' and '~'."))
	}
	if len(code) > 256 {
		return nil, "", a.reject(ErrInvalidCode)
	}
	id := s.oauthKey(kindOAuthCode, code)
	var email string
	if err := s.db.View(ctx, func(tx store.Tx) error {
		c, err := tx.Challenge(id)
		if err == nil && c.Kind == kindOAuthCode && c.ProjectID == p.ID {
			email = c.Email
		}
		return nil
	}); err != nil {
		return nil, "", internal(err)
	}
	if email == "" {
		return nil, "", a.reject(ErrInvalidCode)
	}
	if err := a.reserveRisk(p, subject{email: email}); err != nil {
		a.email = email
		return nil, "", a.reject(err)
	}
	defer a.release()
	var login *Login
	var provider string
	err := a.update(func(tx store.Tx) error {
		login = nil
		c, err := tx.Challenge(id)
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, ErrInvalidCode.With("Unknown or already used code."))
		} else if err != nil {
			return err
		}
		if c.Kind != kindOAuthCode || c.ProjectID != p.ID {
			return a.fail(tx, ErrInvalidCode)
		}
		if err := tx.DeleteChallenge(id); err != nil {
			return err
		}
		if !s.now().Before(c.ExpiresAt) {
			return a.fail(tx, ErrCodeExpired)
		}
		var idn oauthIdentity
		if err := json.Unmarshal(c.Session, &idn); err != nil {
			return err
		}
		a.email, provider = idn.Email, idn.Provider
		if err := checkBinding(idn.Bind, codeVerifier); err != nil {
			return a.fail(tx, err)
		}
		u, isNew, err := s.signInIdentity(tx, p, &idn)
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				if u != nil {
					a.of(u)
				}
				return a.fail(tx, err)
			}
			return err
		}
		a.of(u)
		login, err = s.startLogin(tx, p, u, "oauth:"+idn.Provider, a.m)
		if err != nil {
			return err
		}
		login.IsNewUser = isNew
		return a.ok(tx)
	})
	if err := a.result(err); err != nil {
		return nil, "", err
	}
	l, err := s.finish(login)
	return l, provider, err
}

// checkBinding checks an exchange's codeVerifier against the
// codeChallenge its sign-in was started with (RFC 7636, S256): both or
// neither. The app made the verifier and keeps it with the browser's
// session, so a code that reached another browser (a captured callback
// URL) meets a verifier that does not match.
func checkBinding(challenge, verifier string) error {
	switch {
	case challenge == "" && verifier == "":
		return nil
	case challenge == "":
		return ErrCodeNotBound.With("This sign-in was started without a codeChallenge.")
	case verifier == "":
		return ErrCodeNotBound.With("This sign-in was started with a codeChallenge: codeVerifier is required.")
	}
	sum := sha256.Sum256([]byte(verifier))
	want := base64.RawURLEncoding.EncodeToString(sum[:])
	if subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) != 1 {
		return ErrCodeNotBound
	}
	return nil
}

// isChallenge reports whether c has the form of a base64url SHA-256
// without padding: 43 characters of A-Z, a-z, 0-9, '-' and '_'.
func isChallenge(c string) bool {
	if len(c) != 43 {
		return false
	}
	for i := 0; i < len(c); i++ {
		if !isAlnum(c[i]) && c[i] != '-' && c[i] != '_' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
}

// isVerifier reports whether v is an RFC 7636 code verifier: 43 to 128
// unreserved characters.
func isVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; !isAlnum(c) && c != '-' && c != '.' && c != '_' && c != '~' {
			return false
		}
	}
	return true
}

// signInIdentity applies the linking rules to a proved identity inside
// tx: the user to sign in and whether it is new, or the refusal (an
// *Error, with the user it concerns when there is one).
//
//  1. The account linked to the provider account (issuer, subject) is
//     the one signed in, whatever address the provider gives now; the
//     address need not be verified, as it is not what finds the account.
//  2. Else the address must be verified (ErrEmailNotVerified). An
//     existing account of that address is signed in only when the
//     provider links by address (else ErrNotLinked: neither taken over
//     nor duplicated), and never one with a second factor
//     (ErrSignInWithEmailFirst); a new address is a new user. A
//     provider that links by address is trusted for it: its new user
//     is verified. One that does not is not: its new user is an
//     unverified account that registered itself, as a passkey sign-up
//     is, which a sign-in proving the address replaces (with its link
//     to the provider account: replaceUnverified), so that whoever
//     claimed an address at such a provider cannot hold it against its
//     owner.
//
// A disabled account is ErrUserDisabled. The first sign-in that passes
// links the provider account to its user.
func (s *Service) signInIdentity(tx store.Tx, p *store.Project, idn *oauthIdentity) (*store.User, bool, error) {
	linked, err := linkedUser(tx, p, idn)
	if err != nil {
		return nil, false, err
	}
	if linked != nil {
		if linked.Disabled {
			return linked, false, ErrUserDisabled
		}
		if has, err := hasFactors(tx, linked); err != nil {
			return nil, false, err
		} else if has {
			return linked, false, ErrSignInWithEmailFirst
		}
		return linked, false, nil
	}
	if !idn.EmailVerified {
		return nil, false, ErrEmailNotVerified
	}
	u, err := tx.UserByEmail(p.ID, idn.Email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, false, err
	}
	if err == nil {
		if !idn.LinkByEmail {
			return u, false, ErrNotLinked
		}
		if u.Disabled {
			return u, false, ErrUserDisabled
		}
		if changed, err := settleVerified(tx, u); err != nil {
			return nil, false, err
		} else if changed {
			if err := tx.PutUser(u); err != nil {
				return nil, false, err
			}
		}
		// An account the sign-in keeps (verified, or vouched for by
		// an import) is signed in to by email first when it has
		// factors.
		if replace, err := replaceable(tx, u); err != nil {
			return nil, false, err
		} else if !replace {
			has, err := hasFactors(tx, u)
			if err != nil {
				return nil, false, err
			}
			if has {
				return u, false, ErrSignInWithEmailFirst
			}
		}
	}
	// New, or an unverified account that registered itself (replaced
	// as a code sign-in replaces it), or one kept without factors. A
	// provider that does not link by address does not prove it (the
	// address has no account: an existing one was refused above): its
	// new user registered itself, unverified.
	var isNew bool
	if !idn.LinkByEmail {
		u, err = s.newUser(tx, p, idn.Email, false)
		isNew = err == nil
	} else {
		u, isNew, err = s.provenUser(tx, p, idn.Email)
	}
	if err != nil {
		return nil, false, err
	}
	if idn.Issuer != "" {
		err = tx.PutIdentity(&store.Identity{ProjectID: p.ID, Issuer: idn.Issuer, Subject: idn.Subject, UserID: u.ID,
			Provider: idn.Provider, CreatedAt: s.now().UTC()})
	}
	return u, isNew, err
}

// linkedUser returns the user of p linked to idn's provider account, or
// nil when there is none (no link, or one whose user is gone).
func linkedUser(tx store.Tx, p *store.Project, idn *oauthIdentity) (*store.User, error) {
	if idn.Issuer == "" {
		return nil, nil
	}
	link, err := tx.Identity(p.ID, idn.Issuer, idn.Subject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	u, err := tx.User(link.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if u.ProjectID != p.ID {
		return nil, nil
	}
	return u, nil
}

// hasFactors reports whether u has an enrolled TOTP or SMS factor or a
// passkey.
func hasFactors(tx store.Tx, u *store.User) (bool, error) {
	for _, kind := range []string{"totp", "sms"} {
		f, err := tx.Factor(u.ID, kind)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return false, err
		}
		if f.EnrolledAt != nil {
			return true, nil
		}
	}
	pks, err := tx.UserPasskeys(u.ProjectID, u.ID)
	return len(pks) > 0, err
}
