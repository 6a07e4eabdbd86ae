package auth

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"latchkey/store"
)

// The clients (relying parties) of a project's OpenID provider, as the
// admin API manages them (docs/api.md, "OpenID Connect clients").

// Client types and grant types.
const (
	ClientConfidential = "confidential"
	ClientPublic       = "public"

	GrantAuthorizationCode = "authorization_code"
	GrantRefreshToken      = "refresh_token"
	GrantDeviceCode        = "urn:ietf:params:oauth:grant-type:device_code"
	GrantClientCredentials = "client_credentials"
)

// Client limits and defaults (docs/api.md, "OpenID Connect clients").
const (
	MaxClientsPerProject       = 1000
	maxClientURIs              = 20
	maxClientURILen            = 2000
	maxClientScopes            = 50
	maxClientClaims            = 50
	DefaultAccessTokenLifetime = 3600
	MinAccessTokenLifetime     = 300
	MaxAccessTokenLifetime     = 86400
	DefaultRefreshLifetime     = 30 * 86400
	DefaultRefreshIdle         = 7 * 86400
	MinRefreshLifetime         = 300
	MaxRefreshLifetime         = 90 * 86400
)

// clientSecretPrefix starts every client secret, so that a leaked one is
// recognisable (secret scanners) and never mistaken for an API key.
const clientSecretPrefix = "lkcs_"

// clientSecretDomain is the keyed-hash domain of client secrets.
const clientSecretDomain = "oidc-client-secret"

// ProviderScopes are the scopes the provider knows, the default of a
// client's scopes.
var ProviderScopes = []string{"openid", "profile", "email", "groups", "offline_access"}

// reservedClaims are the claims the provider sets itself: a client's
// claims map cannot name them.
var reservedClaims = []string{"iss", "sub", "aud", "exp", "iat", "nbf", "jti", "azp", "auth_time", "nonce", "acr", "amr",
	"sid", "at_hash", "c_hash", "s_hash", "scope", "client_id", "cnf", "typ", "events", "email", "email_verified",
	"name", "given_name", "family_name", "preferred_username", "groups"}

var (
	claimName  = lazyRegexp(`^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$`)
	scopeToken = lazyRegexp(`^[\x21\x23-\x5b\x5d-\x7e]{1,64}$`)
	uriScheme  = lazyRegexp(`^[a-z][a-z0-9+.-]*$`)
)

// ClientInput is the body of a client's creation (name, type and, with
// the authorization code grant, redirectUris required) and of its
// update (any subset; type cannot change). Nil fields are absent.
type ClientInput struct {
	Name                        *string            `json:"name"`
	RedirectURIs                *[]string          `json:"redirectUris"`
	PostLogoutRedirectURIs      *[]string          `json:"postLogoutRedirectUris"`
	BackchannelLogoutURI        *string            `json:"backchannelLogoutUri"`
	Type                        *string            `json:"type"`
	GrantTypes                  *[]string          `json:"grantTypes"`
	Scopes                      *[]string          `json:"scopes"`
	FirstParty                  *bool              `json:"firstParty"`
	RequireMFA                  *bool              `json:"requireMfa"`
	IDTokenAlg                  *string            `json:"idTokenAlg"`
	AccessTokenLifetimeSeconds  *int               `json:"accessTokenLifetimeSeconds"`
	RefreshTokenLifetimeSeconds *int               `json:"refreshTokenLifetimeSeconds"`
	RefreshTokenIdleSeconds     *int               `json:"refreshTokenIdleSeconds"`
	Claims                      *map[string]string `json:"claims"`
}

// ClientView is a client as the admin API shows it: never its secret.
type ClientView struct {
	ID                          string            `json:"id"`
	ProjectID                   string            `json:"projectId"`
	Name                        string            `json:"name"`
	Type                        string            `json:"type"`
	Issuer                      string            `json:"issuer"`
	RedirectURIs                []string          `json:"redirectUris"`
	PostLogoutRedirectURIs      []string          `json:"postLogoutRedirectUris"`
	BackchannelLogoutURI        *string           `json:"backchannelLogoutUri"`
	GrantTypes                  []string          `json:"grantTypes"`
	Scopes                      []string          `json:"scopes"`
	FirstParty                  bool              `json:"firstParty"`
	RequireMFA                  bool              `json:"requireMfa"`
	IDTokenAlg                  string            `json:"idTokenAlg"`
	AccessTokenLifetimeSeconds  int               `json:"accessTokenLifetimeSeconds"`
	RefreshTokenLifetimeSeconds int               `json:"refreshTokenLifetimeSeconds"`
	RefreshTokenIdleSeconds     int               `json:"refreshTokenIdleSeconds"`
	Claims                      map[string]string `json:"claims"`
	CreatedAt                   string            `json:"createdAt"`
	UpdatedAt                   string            `json:"updatedAt"`
	// Registered is whether the client registered itself (dynamic
	// client registration).
	Registered bool `json:"registered"`
}

// OIDCIssuer returns the issuer of projectID's OpenID provider:
// <base URL>/oidc/<project id>.
func (s *Service) OIDCIssuer(projectID string) string {
	return strings.TrimSuffix(s.baseURL, "/") + "/oidc/" + projectID
}

// viewClient returns the admin view of c.
func (s *Service) viewClient(c *store.OIDCClient) ClientView {
	v := ClientView{ID: c.ID, ProjectID: c.ProjectID, Name: c.Name, Type: c.Type, Issuer: s.OIDCIssuer(c.ProjectID),
		RedirectURIs: orEmpty(c.RedirectURIs), PostLogoutRedirectURIs: orEmpty(c.PostLogoutRedirectURIs),
		GrantTypes: orEmpty(c.GrantTypes), Scopes: orEmpty(c.Scopes), FirstParty: c.FirstParty, RequireMFA: c.RequireMFA,
		IDTokenAlg: c.IDTokenAlg, AccessTokenLifetimeSeconds: c.AccessTokenLifetimeSeconds,
		RefreshTokenLifetimeSeconds: c.RefreshTokenLifetimeSeconds, RefreshTokenIdleSeconds: c.RefreshTokenIdleSeconds,
		Claims: c.Claims, CreatedAt: formatTime(c.CreatedAt), UpdatedAt: formatTime(c.UpdatedAt), Registered: c.Registered}
	if c.BackchannelLogoutURI != "" {
		u := c.BackchannelLogoutURI
		v.BackchannelLogoutURI = &u
	}
	if v.Claims == nil {
		v.Claims = map[string]string{}
	}
	return v
}

// orEmpty returns list, or an empty list for nil (a JSON array).
func orEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// CreateClient registers a client of projectID's provider and returns
// it with its secret, shown only here ("" for a public client, which
// has none).
func (s *Service) CreateClient(ctx context.Context, projectID string, in ClientInput) (ClientView, string, error) {
	if in.Name == nil {
		return ClientView{}, "", Invalid("name is required.")
	}
	if in.Type == nil {
		return ClientView{}, "", Invalid(`type is required: "confidential" or "public".`)
	}
	now := s.now().UTC()
	c := &store.OIDCClient{ID: newID(), ProjectID: projectID, GrantTypes: []string{GrantAuthorizationCode},
		Scopes: slices.Clone(ProviderScopes), IDTokenAlg: AlgRS256, AccessTokenLifetimeSeconds: DefaultAccessTokenLifetime,
		RefreshTokenLifetimeSeconds: DefaultRefreshLifetime, RefreshTokenIdleSeconds: DefaultRefreshIdle,
		CreatedAt: now, UpdatedAt: now}
	if err := in.apply(c, true); err != nil {
		return ClientView{}, "", err
	}
	var secret string
	if c.Type == ClientConfidential {
		secret = newClientSecret()
		h := s.keys.HashString(clientSecretDomain, secret)
		c.SecretHash = h[:]
	}
	err := s.db.Update(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		existing, err := tx.OIDCClients(projectID)
		if err != nil {
			return err
		}
		if len(existing) >= MaxClientsPerProject {
			return Invalid("A project can have at most %d clients.", MaxClientsPerProject)
		}
		return tx.PutOIDCClient(c)
	})
	if err != nil {
		return ClientView{}, "", internal(err)
	}
	return s.viewClient(c), secret, nil
}

// Clients lists projectID's clients, oldest first (404
// PROJECT_NOT_FOUND for an unknown project).
func (s *Service) Clients(ctx context.Context, projectID string) ([]ClientView, error) {
	out := []ClientView{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		if _, err := projectTx(tx, projectID); err != nil {
			return err
		}
		cs, err := tx.OIDCClients(projectID)
		for _, c := range cs {
			out = append(out, s.viewClient(c))
		}
		return err
	})
	return out, internal(err)
}

// Client returns projectID's client id (404 PROJECT_NOT_FOUND, then
// CLIENT_NOT_FOUND).
func (s *Service) Client(ctx context.Context, projectID, id string) (ClientView, error) {
	var v ClientView
	err := s.db.View(ctx, func(tx store.Tx) error {
		c, err := clientTx(tx, projectID, id)
		if err == nil {
			v = s.viewClient(c)
		}
		return err
	})
	return v, internal(err)
}

// clientTx returns projectID's client id inside tx: 404
// PROJECT_NOT_FOUND for an unknown project, CLIENT_NOT_FOUND for an
// unknown client of a known one.
func clientTx(tx store.Tx, projectID, id string) (*store.OIDCClient, error) {
	if _, err := projectTx(tx, projectID); err != nil {
		return nil, err
	}
	c, err := tx.OIDCClient(projectID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrClientNotFound
	}
	return c, err
}

// UpdateClient applies in to projectID's client id: the fields given
// change, the others stay; type cannot change.
func (s *Service) UpdateClient(ctx context.Context, projectID, id string, in ClientInput) (ClientView, error) {
	var c *store.OIDCClient
	err := s.db.Update(ctx, func(tx store.Tx) error {
		var err error
		if c, err = clientTx(tx, projectID, id); err != nil {
			return err
		}
		if err := in.apply(c, false); err != nil {
			return err
		}
		c.UpdatedAt = s.now().UTC()
		s.oidcTokensChanged(tx)
		return tx.PutOIDCClient(c)
	})
	if err != nil {
		return ClientView{}, internal(err)
	}
	return s.viewClient(c), nil
}

// DeleteClient removes projectID's client id and, in the same
// transaction, everything issued to it: the users' consents go and
// every grant is revoked (revokeClientGrants), so none of its access or
// refresh tokens is accepted again, even by a client stored later with
// the same id.
func (s *Service) DeleteClient(ctx context.Context, projectID, id string) error {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		if _, err := clientTx(tx, projectID, id); err != nil {
			return err
		}
		s.oidcTokensChanged(tx)
		if err := s.revokeClientGrants(tx, projectID, id); err != nil {
			return err
		}
		return tx.DeleteOIDCClient(projectID, id)
	})
	return internal(err)
}

// RotateClientSecret gives projectID's confidential client id a new
// secret, returned only here; the old one stops working at once. A
// public client has none: 400 VALIDATION_ERROR.
func (s *Service) RotateClientSecret(ctx context.Context, projectID, id string) (ClientView, string, error) {
	secret := newClientSecret()
	h := s.keys.HashString(clientSecretDomain, secret)
	var c *store.OIDCClient
	err := s.db.Update(ctx, func(tx store.Tx) error {
		var err error
		if c, err = clientTx(tx, projectID, id); err != nil {
			return err
		}
		if c.Type != ClientConfidential {
			return Invalid("A public client has no secret to rotate.")
		}
		c.SecretHash = h[:]
		c.UpdatedAt = s.now().UTC()
		return tx.PutOIDCClient(c)
	})
	if err != nil {
		return ClientView{}, "", internal(err)
	}
	return s.viewClient(c), secret, nil
}

// CheckClientSecret reports whether secret is the secret of the
// confidential client c (keyed hash, constant-time compare). A public
// client has none: false.
func (s *Service) CheckClientSecret(c *store.OIDCClient, secret string) bool {
	if c.Type != ClientConfidential || len(c.SecretHash) == 0 {
		return false
	}
	h := s.keys.HashString(clientSecretDomain, secret)
	return store.Equal(h[:], c.SecretHash)
}

// newClientSecret returns a new client secret: the prefix and 43 base62
// characters (256 bits).
func newClientSecret() string { return clientSecretPrefix + randomString(base62, 43) }

// apply validates in and copies it onto c; creating says whether c is
// new (type may be set only then). The whole client is checked after:
// a change that leaves it inconsistent (client_credentials given to a
// public client, an idle time past the lifetime) is refused.
func (in *ClientInput) apply(c *store.OIDCClient, creating bool) error {
	if in.Type != nil {
		t := *in.Type
		if t != ClientConfidential && t != ClientPublic {
			return Invalid(`type must be "confidential" or "public".`)
		}
		if !creating && t != c.Type {
			return Invalid("type cannot be changed: create a new client of the other type.")
		}
		c.Type = t
	}
	if in.Name != nil {
		n, ok := clientName(*in.Name)
		if !ok {
			return Invalid("name must be 1 to 100 characters.")
		}
		c.Name = n
	}
	if in.GrantTypes != nil {
		gs, err := grantTypes(*in.GrantTypes)
		if err != nil {
			return err
		}
		c.GrantTypes = gs
	}
	if in.RedirectURIs != nil {
		uris, err := clientURIs("redirectUris", *in.RedirectURIs, c.Type == ClientPublic)
		if err != nil {
			return err
		}
		c.RedirectURIs = uris
	}
	if in.PostLogoutRedirectURIs != nil {
		uris, err := clientURIs("postLogoutRedirectUris", *in.PostLogoutRedirectURIs, c.Type == ClientPublic)
		if err != nil {
			return err
		}
		c.PostLogoutRedirectURIs = uris
	}
	if in.BackchannelLogoutURI != nil {
		u := *in.BackchannelLogoutURI
		if u != "" {
			if err := checkClientURI("backchannelLogoutUri", u, false); err != nil {
				return err
			}
		}
		c.BackchannelLogoutURI = u
	}
	if in.Scopes != nil {
		scopes, err := clientScopes(*in.Scopes)
		if err != nil {
			return err
		}
		c.Scopes = scopes
	}
	if in.FirstParty != nil {
		c.FirstParty = *in.FirstParty
	}
	if in.RequireMFA != nil {
		c.RequireMFA = *in.RequireMFA
	}
	if in.IDTokenAlg != nil {
		if a := *in.IDTokenAlg; a != AlgRS256 && a != AlgES256 {
			return Invalid(`idTokenAlg must be "RS256" or "ES256".`)
		}
		c.IDTokenAlg = *in.IDTokenAlg
	}
	if in.AccessTokenLifetimeSeconds != nil {
		v := *in.AccessTokenLifetimeSeconds
		if v < MinAccessTokenLifetime || v > MaxAccessTokenLifetime {
			return Invalid("accessTokenLifetimeSeconds must be between %d and %d.", MinAccessTokenLifetime, MaxAccessTokenLifetime)
		}
		c.AccessTokenLifetimeSeconds = v
	}
	if in.RefreshTokenLifetimeSeconds != nil {
		v := *in.RefreshTokenLifetimeSeconds
		if v < MinRefreshLifetime || v > MaxRefreshLifetime {
			return Invalid("refreshTokenLifetimeSeconds must be between %d and %d.", MinRefreshLifetime, MaxRefreshLifetime)
		}
		c.RefreshTokenLifetimeSeconds = v
	}
	if in.RefreshTokenIdleSeconds != nil {
		v := *in.RefreshTokenIdleSeconds
		if v < MinRefreshLifetime || v > MaxRefreshLifetime {
			return Invalid("refreshTokenIdleSeconds must be between %d and %d.", MinRefreshLifetime, MaxRefreshLifetime)
		}
		c.RefreshTokenIdleSeconds = v
	}
	if in.Claims != nil {
		claims, err := clientClaims(*in.Claims)
		if err != nil {
			return err
		}
		c.Claims = claims
	}
	return checkClient(c)
}

// clientName returns a client's name trimmed, and whether it is one:
// 1 to 100 characters on one line.
func clientName(in string) (string, bool) {
	n := strings.TrimSpace(in)
	return n, n != "" && utf8.RuneCountInString(n) <= 100 && !strings.ContainsAny(n, "\r\n")
}

// checkClient checks what one field alone cannot tell.
func checkClient(c *store.OIDCClient) error {
	if c.Type == ClientPublic && slices.Contains(c.GrantTypes, GrantClientCredentials) {
		return Invalid("grantTypes: client_credentials is for confidential clients only.")
	}
	if slices.Contains(c.GrantTypes, GrantAuthorizationCode) && len(c.RedirectURIs) == 0 {
		return Invalid("redirectUris: give at least one redirect URI (the authorization_code grant needs one).")
	}
	if c.RefreshTokenIdleSeconds > c.RefreshTokenLifetimeSeconds {
		return Invalid("refreshTokenIdleSeconds must not exceed refreshTokenLifetimeSeconds.")
	}
	return nil
}

// grantTypes checks a client's grant types, folding duplicates.
func grantTypes(in []string) ([]string, error) {
	if len(in) == 0 {
		return nil, Invalid("grantTypes must name at least one grant type.")
	}
	out := make([]string, 0, len(in))
	for _, g := range in {
		switch g {
		case GrantAuthorizationCode, GrantRefreshToken, GrantDeviceCode, GrantClientCredentials:
		default:
			return nil, Invalid("grantTypes: unknown grant type %q (authorization_code, refresh_token, %s or client_credentials).", clip(g), GrantDeviceCode)
		}
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	if slices.Contains(out, GrantRefreshToken) && !slices.Contains(out, GrantAuthorizationCode) && !slices.Contains(out, GrantDeviceCode) {
		return nil, Invalid("grantTypes: refresh_token needs authorization_code or the device code grant.")
	}
	return out, nil
}

// clientScopes checks a client's scopes (RFC 6749 scope tokens, openid
// among them), folding duplicates.
func clientScopes(in []string) ([]string, error) {
	if len(in) > maxClientScopes {
		return nil, Invalid("scopes holds at most %d scopes.", maxClientScopes)
	}
	out := make([]string, 0, len(in))
	for _, sc := range in {
		if !scopeToken().MatchString(sc) {
			return nil, Invalid("scopes: %q is not a scope (1 to 64 printable ASCII characters, no space, quote or backslash).", clip(sc))
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if !slices.Contains(out, "openid") {
		return nil, Invalid("scopes must include openid.")
	}
	return out, nil
}

// clientClaims checks a client's claims map: claim name to
// "metadata.<key>".
func clientClaims(in map[string]string) (map[string]string, error) {
	if len(in) > maxClientClaims {
		return nil, Invalid("claims holds at most %d claims.", maxClientClaims)
	}
	out := make(map[string]string, len(in))
	for name, src := range in {
		if !claimName().MatchString(name) {
			return nil, Invalid("claims: %q is not a claim name (a letter or _, then up to 63 letters, digits, _ . : -).", clip(name))
		}
		if slices.Contains(reservedClaims, name) {
			return nil, Invalid("claims: %q is set by the provider itself.", name)
		}
		key, ok := strings.CutPrefix(src, "metadata.")
		if !ok || key == "" || len(key) > 128 || !utf8.ValidString(key) || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return nil, Invalid(`claims: %q must be "metadata.<key>", a key of the user's metadata (1 to 128 bytes).`, clip(src))
		}
		out[name] = src
	}
	return out, nil
}

// clientURIs checks a list of redirect URIs, folding duplicates.
func clientURIs(field string, in []string, public bool) ([]string, error) {
	if len(in) > maxClientURIs {
		return nil, Invalid("%s holds at most %d URIs.", field, maxClientURIs)
	}
	out := make([]string, 0, len(in))
	for _, u := range in {
		if err := checkClientURI(field, u, public); err != nil {
			return nil, err
		}
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out, nil
}

// unsafeSchemes are schemes no redirect may use.
var unsafeSchemes = []string{"javascript", "data", "vbscript", "file", "about", "blob", "filesystem", "ws", "wss", "ftp"}

// checkClientURI checks one URI a client registers (kept as given: the
// provider matches it exactly). It is absolute, without a fragment or
// user info, and https, or http on a loopback address literal
// (127.0.0.1 or [::1], not "localhost": RFC 8252, section 8.3); a public
// (native) client may use a custom scheme named for a reversed domain
// (RFC 8252, section 7.1).
func checkClientURI(field, raw string, customOK bool) error {
	if raw == "" || len(raw) > maxClientURILen || !utf8.ValidString(raw) || strings.ContainsFunc(raw, func(r rune) bool { return r <= 0x20 || r == 0x7f }) {
		return Invalid("%s: %q is not an absolute URI of at most %d characters without spaces.", field, clip(raw), maxClientURILen)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || !uriScheme().MatchString(u.Scheme) {
		return Invalid("%s: %q is not an absolute URI.", field, clip(raw))
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return Invalid("%s: %q has a fragment (#), which a redirect URI cannot have.", field, clip(raw))
	}
	if u.User != nil {
		return Invalid("%s: %q has user info, which a redirect URI cannot have.", field, clip(raw))
	}
	switch u.Scheme {
	case "https":
		if u.Host == "" || u.Hostname() == "" {
			return Invalid("%s: %q has no host.", field, clip(raw))
		}
		return nil
	case "http":
		host := u.Hostname()
		if strings.EqualFold(host, "localhost") {
			return Invalid("%s: %q: use http://127.0.0.1 or http://[::1] instead of localhost (RFC 8252).", field, clip(raw))
		}
		if a, err := netip.ParseAddr(host); err != nil || !(a == netip.MustParseAddr("127.0.0.1") || a == netip.IPv6Loopback()) {
			return Invalid("%s: %q: http is allowed only on 127.0.0.1 or [::1]; use https.", field, clip(raw))
		}
		return nil
	}
	if !customOK {
		return Invalid("%s: %q: the scheme must be https (or http on 127.0.0.1 or [::1]); custom schemes are for public (native) clients only.", field, clip(raw))
	}
	if slices.Contains(unsafeSchemes, u.Scheme) {
		return Invalid("%s: %q: the %s scheme cannot be a redirect URI.", field, clip(raw), u.Scheme)
	}
	// RFC 8252, section 7.1: a native app's scheme is a domain name it
	// controls, reversed (com.example.app), which another app cannot
	// claim by accident and which names no browser's own scheme
	// (x-javascript, a single word).
	if !strings.Contains(u.Scheme, ".") {
		return Invalid("%s: %q: a custom scheme must be a reversed domain name the app controls, such as com.example.app (RFC 8252).", field, clip(raw))
	}
	return nil
}
