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
	"net/url"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/auth/social"
	"latchkey/store"
)

// OAuth 2.0 / OpenID Connect sign-in (decisions.md §18).
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
// signs the user in under the linking rules (signInIdentity).
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

// ViewProvider returns the admin view of pr.
func ViewProvider(pr *store.Provider) ProviderView {
	scopes := pr.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	return ProviderView{ID: pr.ID, Name: pr.Name, Type: pr.Type, ClientID: pr.ClientID,
		Issuer: nullable(pr.Issuer), Scopes: scopes, ResponseMode: responseMode(pr), CreatedAt: formatTime(pr.CreatedAt)}
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
// address (a provider on the same host).
func checkIssuer(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || len(raw) > 512 {
		return Invalid("issuer must be an absolute https URL.")
	}
	if u.Scheme == "https" || u.Scheme == "http" && isLoopbackHost(u.Hostname()) {
		return nil
	}
	return Invalid("issuer must be an absolute https URL.")
}

func isLoopbackHost(h string) bool { return h == "localhost" || isLoopbackIP(h) }

// AddProvider registers an OAuth provider for project projectID; the
// client secret is sealed with the keyring and never shown again. 400
// VALIDATION_ERROR for a bad field, 404 PROJECT_NOT_FOUND, 409
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
		if err := checkIssuer(in.Issuer); err != nil {
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
	pr := store.Provider{ID: newID(), Name: in.Name, Type: in.Type, ClientID: in.ClientID,
		Issuer: in.Issuer, Scopes: in.Scopes, ResponseMode: in.ResponseMode, CreatedAt: s.now().UTC()}
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
	Provider      string `json:"provider"`
	Subject       string `json:"subject"`
	Email         string `json:"email"`
	EmailVerified bool   `json:"emailVerified"`
	Bind          string `json:"bind,omitempty"` // the sign-in's codeChallenge
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
// document, and the JWKS go-oidc reads through it) is used before the
// next sign-in with that provider reads it again.
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

// discovery is one provider's discovered OpenID Connect configuration.
type discovery struct {
	op        *oidc.Provider
	projectID string
	issuer    string
	fetched   time.Time
}

// get returns the provider object of provider pr of project projectID,
// reading its issuer's discovery document when there is no entry, or
// its entry is older than DiscoveryTTL at now.
func (d *discovered) get(ctx context.Context, projectID string, pr *store.Provider, multiTenant bool, now time.Time) (*oidc.Provider, error) {
	d.mu.Lock()
	e, ok := d.m[pr.ID]
	d.mu.Unlock()
	if ok && e.issuer == pr.Issuer && now.Sub(e.fetched) < DiscoveryTTL {
		return e.op, nil
	}
	if multiTenant {
		// Microsoft's multi-tenant discovery names a templated issuer;
		// the token's issuer is checked against the tenant (tokenIssuerOK).
		ctx = oidc.InsecureIssuerURLContext(ctx, strings.Replace(pr.Issuer, "/common/", "/{tenantid}/", 1))
	}
	op, err := oidc.NewProvider(ctx, pr.Issuer)
	if err != nil {
		return nil, err
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
	d.m[pr.ID] = discovery{op: op, projectID: projectID, issuer: pr.Issuer, fetched: now}
	d.mu.Unlock()
	return op, nil
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

// oauthHTTP returns ctx carrying the HTTP client used for provider calls.
func (s *Service) oauthHTTP(ctx context.Context) context.Context {
	return s.social.Context(ctx)
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
	op, err := s.oidc.get(s.oauthHTTP(ctx), projectID, pr, multi, s.now())
	if err != nil {
		return nil, ErrProviderUnavailable.Because(err)
	}
	conf.Endpoint = op.Endpoint()
	return &oauthClient{pr: pr, conf: conf, op: op, verifier: op.Verifier(&oidc.Config{
		ClientID: pr.ClientID, Now: s.now, SkipIssuerCheck: multi,
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
	idn.Bind = pend.Bind
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

// identify redeems the provider's code and proves who signed in.
func (s *Service) identify(ctx context.Context, c *oauthClient, code string, pend *pendingOAuth) (*oauthIdentity, error) {
	hctx := s.oauthHTTP(ctx)
	tok, err := c.conf.Exchange(hctx, code, oauth2.VerifierOption(pend.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return nil, ErrOAuthDenied.Because(err)
		}
		return nil, ErrProviderUnavailable.Because(err)
	}
	if c.verifier == nil {
		return s.githubIdentity(hctx, c, tok)
	}
	rawID, _ := tok.Extra("id_token").(string)
	if rawID == "" {
		return nil, ErrInvalidIDToken.Because(errors.New("no id_token in the token response"))
	}
	idt, err := c.verifier.Verify(hctx, rawID)
	if err != nil {
		return nil, ErrInvalidIDToken.Because(err)
	}
	if idt.Nonce != pend.Nonce {
		return nil, ErrInvalidIDToken.Because(errors.New("nonce mismatch"))
	}
	var claims struct {
		Issuer        string `json:"iss"`
		TenantID      string `json:"tid"`
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"` // Apple sends "true"
	}
	if err := idt.Claims(&claims); err != nil {
		return nil, ErrInvalidIDToken.Because(err)
	}
	if c.pr.Type == "microsoft" && !microsoftIssuer.MatchString(c.pr.Issuer) {
		if sub := microsoftIssuer.FindStringSubmatch(claims.Issuer); sub == nil || sub[1] != claims.TenantID {
			return nil, ErrInvalidIDToken.Because(fmt.Errorf("issuer %q is not the token's tenant", claims.Issuer))
		}
	}
	verified := claims.EmailVerified == true || claims.EmailVerified == "true"
	if claims.Email == "" && c.op.UserInfoEndpoint() != "" {
		// Providers that keep the address out of the ID token give it
		// from their userinfo endpoint, for the same subject.
		ui, err := c.op.UserInfo(hctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return nil, ErrProviderUnavailable.Because(err)
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
	return &oauthIdentity{Provider: c.pr.Name, Subject: idt.Subject, Email: email, EmailVerified: verified}, nil
}

// githubIdentity reads GitHub's user and its primary address.
func (s *Service) githubIdentity(ctx context.Context, c *oauthClient, tok *oauth2.Token) (*oauthIdentity, error) {
	id, emails, err := s.social.GitHubUser(ctx, c.conf, tok)
	if errors.Is(err, social.ErrRefused) {
		return nil, ErrOAuthDenied.Because(err)
	} else if err != nil {
		return nil, ErrProviderUnavailable.Because(err)
	}
	idn := &oauthIdentity{Provider: c.pr.Name, Subject: fmt.Sprint(id)}
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
// project p (single use, OAuthCodeLifetime). The linking rules
// (decisions.md §18): an address the provider does not say is verified
// signs no one in (403 EMAIL_NOT_VERIFIED); a new address is a new,
// verified user; an existing user is signed in only when it has no
// second factor (TOTP, SMS, passkey): one that has is 409
// SIGN_IN_WITH_EMAIL_FIRST, and the app signs the user in by email code
// (which its factors then guard) instead. 401 INVALID_CODE for an
// unknown, used or expired code; 403 USER_DISABLED; 403 RISK_BLOCKED.
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
func (s *Service) signInIdentity(tx store.Tx, p *store.Project, idn *oauthIdentity) (*store.User, bool, error) {
	if !idn.EmailVerified {
		return nil, false, ErrEmailNotVerified
	}
	u, err := tx.UserByEmail(p.ID, idn.Email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, false, err
	}
	if err == nil {
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
	// as a code sign-in replaces it), or one kept without factors.
	u, isNew, err := s.provenUser(tx, p, idn.Email)
	return u, isNew, err
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
