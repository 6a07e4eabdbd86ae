package auth

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"latchkey/auth/social"
	"latchkey/store"
)

// OAuth 2.0 / OpenID Connect sign-in.
//
// POST /oauth/start keeps the state, the nonce and the PKCE verifier in a
// store.OAuthFlow of kind state (keyed by the keyed hash of the state,
// due for the sweep after OAuthStateLifetime) and answers the provider's
// authorization URL. The provider sends the browser back to
// /oauth/callback (GET with the query, or, for providers whose response
// mode is form_post, a POST of the same fields as a form from the
// provider's page), which consumes that row (single use), redeems the
// provider's code with the verifier, verifies the ID token (or reads
// GitHub's user and emails API) and keeps the identity it proved in an
// OAuthFlow of kind code keyed by the hash of a new one-time code; the
// browser goes on to the app's redirectUrl?code=. The app's
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

	// keyOAuthState and keyOAuthCode are the domains of the keyed hashes
	// that key a state's and a one-time code's OAuthFlow (oauthKey). They
	// are those of the releases that kept both as WebAuthn challenge rows,
	// which an upgrade moves with their ids: a sign-in in flight across
	// the upgrade is found by them.
	keyOAuthState = "oauth_state"
	keyOAuthCode  = "oauth_code"
	methodOAuth   = "oauth"

	// githubIssuer is the issuer of GitHub identities (GitHub issues no
	// ID token): their links are (githubIssuer, numeric user id).
	githubIssuer = "https://github.com"
	// maxSubject is the longest subject accepted (OpenID Connect Core
	// 2: at most 255 ASCII characters; bytes here).
	maxSubject = 255
)

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

// pendingOAuth is what a started sign-in keeps server-side (the
// Payload of its OAuthFlow of kind state): never sent anywhere but to the
// provider.
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

// oauthIdentity is what a callback proved, kept for the exchange (the
// Payload of an OAuthFlow of kind code).
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
	multi := pr.Type == "microsoft" && !microsoftIssuer().MatchString(pr.Issuer)
	d, err := s.oidc.get(s.oauthHTTP(ctx, pr), s.oauthHTTP(context.Background(), pr), projectID, pr, multi, s.now())
	if err != nil {
		return nil, s.providerFailed(pr, err)
	}
	conf.Endpoint = d.op.Endpoint()
	return &oauthClient{pr: pr, conf: conf, op: d.op, verifier: oidc.NewVerifier(pr.Issuer, reportingKeys{d.keys}, &oidc.Config{
		ClientID: pr.ClientID, Now: s.now, SkipIssuerCheck: multi, SupportedSigningAlgs: d.algs,
	})}, nil
}

// oauthKey is the OAuthFlow id of a state or one-time code (domain
// keyOAuthState or keyOAuthCode): its keyed hash, so no row is keyed by
// a secret.
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
	return s.startOAuth(ctx, p, name, redirectURL, codeChallenge, false, m)
}

// startOAuth is StartOAuth; ownPage says redirectURL is a page of
// latchkey's own (a hosted sign-in page, made here and not given by a
// caller), which needs no allowed origin.
func (s *Service) startOAuth(ctx context.Context, p *store.Project, name, redirectURL, codeChallenge string, ownPage bool, m Meta) (string, error) {
	a := s.attempt(ctx, p.ID, methodOAuth, "start", m)
	if name == "" {
		return "", a.reject(Invalid("provider is required."))
	}
	if codeChallenge != "" && !isChallenge(codeChallenge) {
		return "", a.reject(Invalid("codeChallenge must be the SHA-256 of a code verifier in base64url without padding: 43 characters of A-Z, a-z, 0-9, '-' and '_'."))
	}
	if redirectURL == "" || (!ownPage && !CheckRedirect(redirectURL, p.AllowedOrigins)) {
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
	flow := &store.OAuthFlow{ID: s.oauthKey(keyOAuthState, state), ProjectID: p.ID, Kind: store.OAuthFlowState,
		Payload: raw, ExpiresAt: s.now().Add(OAuthStateLifetime).UTC()}
	err = a.update(func(tx store.Tx) error {
		if err := tx.PutOAuthFlow(flow); err != nil {
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
	id := s.oauthKey(keyOAuthState, state)
	// The state is read first and consumed in the transaction that ends
	// the callback (with the one-time code when it succeeds: one commit),
	// after the calls to the provider, which no transaction may wait
	// for. Two callbacks racing with one state both reach the provider;
	// only the first to commit finds the state still there.
	var flow *store.OAuthFlow
	if err := s.db.View(ctx, func(tx store.Tx) error {
		f, err := tx.OAuthFlow(id)
		if err == nil && f.Kind == store.OAuthFlowState {
			flow = f
		} else if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return err
	}); err != nil {
		return "", a.reject(internal(err))
	}
	if flow == nil {
		return "", a.reject(ErrInvalidState)
	}
	a.projectID = flow.ProjectID
	cb := &callback{s: s, a: a, id: id}
	if !s.now().Before(flow.ExpiresAt) {
		return "", cb.fail(ErrStateExpired)
	}
	p, err := s.project(ctx, flow.ProjectID)
	if err != nil { // the project was deleted (with the state)
		return "", a.reject(ErrInvalidState)
	}
	if err := json.Unmarshal(flow.Payload, &cb.pend); err != nil {
		return "", a.reject(internal(err))
	}
	pend := &cb.pend
	if err := s.checkRisk(p, m); err != nil {
		return cb.redirect(err)
	}
	if providerError != "" || code == "" {
		return cb.redirect(ErrOAuthDenied)
	}
	pr := findProvider(p, pend.Provider)
	if pr == nil || pr.ID != pend.ProviderID {
		return cb.redirect(ErrProviderNotFound)
	}
	c, err := s.client(ctx, p.ID, pr)
	if err != nil {
		return cb.redirect(err)
	}
	idn, err := s.identify(ctx, c, code, pend)
	if err != nil {
		return cb.redirect(err)
	}
	idn.Bind, idn.LinkByEmail = pend.Bind, linkByEmail(pr)
	a.email = idn.Email
	raw, err := json.Marshal(idn)
	if err != nil {
		return cb.redirect(internal(err))
	}
	one := base64.RawURLEncoding.EncodeToString(randomBytes(32))
	out := &store.OAuthFlow{ID: s.oauthKey(keyOAuthCode, one), ProjectID: p.ID, Kind: store.OAuthFlowCode,
		Payload: raw, ExpiresAt: s.now().Add(OAuthCodeLifetime).UTC()}
	err = a.update(func(tx store.Tx) error {
		if there, err := cb.consume(tx); err != nil {
			return err
		} else if !there {
			return a.fail(tx, ErrInvalidState)
		}
		if err := tx.PutOAuthFlow(out); err != nil {
			return err
		}
		return a.ok(tx)
	})
	if err := a.result(err); err != nil {
		return "", err
	}
	return withQuery(pend.RedirectURL, "code", one), nil
}

// callback is one provider callback under way: its attempt, the state's
// OAuthFlow id and what the started sign-in kept. The state is consumed
// by the transaction that ends the callback, whichever way it ends.
type callback struct {
	s    *Service
	a    *attempt
	id   string // the state's OAuthFlow id
	pend pendingOAuth
}

// consume deletes the state inside tx, or reports it already gone.
func (cb *callback) consume(tx store.Tx) (bool, error) {
	if _, err := tx.OAuthFlow(cb.id); errors.Is(err, store.ErrNotFound) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, tx.DeleteOAuthFlow(cb.id)
}

// fail consumes the state and records failure, in one transaction.
func (cb *callback) fail(failure error) error {
	err := cb.a.update(func(tx store.Tx) error {
		if _, err := cb.consume(tx); err != nil {
			return err
		}
		return cb.a.fail(tx, failure)
	})
	return cb.a.result(err)
}

// redirect ends the callback with failure (fail) and sends the browser
// back to the app with the failure's code (an internal one is logged);
// an error other than failure itself in ending it is returned instead.
func (cb *callback) redirect(failure error) (string, error) {
	e := AsError(failure)
	if err := cb.fail(failure); err != nil && AsError(err).Code != e.Code {
		return "", err
	}
	if e.Code == ErrInternal.Code {
		cb.s.log.Error("oauth callback", "provider", cb.pend.Provider, "err", failure)
	}
	return withQuery(cb.pend.RedirectURL, "error", e.Code), nil
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
	if c.pr.Type == "microsoft" && !microsoftIssuer().MatchString(c.pr.Issuer) {
		if sub := microsoftIssuer().FindStringSubmatch(claims.Issuer); sub == nil || sub[1] != claims.TenantID {
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
	return s.oauthExchange(ctx, p, code, codeVerifier, func(provider string) loginAs {
		return loginAs{method: "oauth:" + provider}
	}, m)
}

// oauthExchange is OAuthExchange for a session as says for the
// identity's provider.
func (s *Service) oauthExchange(ctx context.Context, p *store.Project, code, codeVerifier string, as func(provider string) loginAs, m Meta) (*Login, string, error) {
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
	id := s.oauthKey(keyOAuthCode, code)
	var email string
	if err := s.db.View(ctx, func(tx store.Tx) error {
		email = ""
		f, err := tx.OAuthFlow(id)
		if err == nil && f.Kind == store.OAuthFlowCode && f.ProjectID == p.ID {
			var idn oauthIdentity
			if json.Unmarshal(f.Payload, &idn) == nil {
				email = idn.Email
			}
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
		f, err := tx.OAuthFlow(id)
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, ErrInvalidCode.With("Unknown or already used code."))
		} else if err != nil {
			return err
		}
		if f.Kind != store.OAuthFlowCode || f.ProjectID != p.ID {
			return a.fail(tx, ErrInvalidCode)
		}
		if err := tx.DeleteOAuthFlow(id); err != nil {
			return err
		}
		if !s.now().Before(f.ExpiresAt) {
			return a.fail(tx, ErrCodeExpired)
		}
		var idn oauthIdentity
		if err := json.Unmarshal(f.Payload, &idn); err != nil {
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
		login, err = s.startLoginAs(tx, p, u, as(idn.Provider), a.m)
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
