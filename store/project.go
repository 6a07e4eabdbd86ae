package store

import "time"

// Project is one application using latchkey: its users, keys and settings.
type Project struct {
	ID                 string    `json:"id"`
	Name               string    `json:"name"`
	CompanyID          string    `json:"companyId"`
	AllowedOrigins     []string  `json:"allowedOrigins"`
	RPID               string    `json:"rpId"`
	SessionTTLSeconds  int       `json:"sessionTtlSeconds"`
	RateLimitPerMinute int       `json:"rateLimitPerMinute"`
	DenyCIDRs          []string  `json:"denyCidrs"`
	CreatedAt          time.Time `json:"createdAt"`

	// EmailChange is how PATCH /user changes an address: "verify" (by a
	// code sent to the new address) or "direct"; empty means "verify".
	EmailChange string `json:"emailChange,omitempty"`

	// SessionRateLimitPerMinute is how many calls with one session's
	// token that write or start a ceremony the session may make per
	// rolling minute; 0 (projects stored before it existed) means the
	// default.
	SessionRateLimitPerMinute int `json:"sessionRateLimitPerMinute,omitempty"`

	// SessionIdleSeconds is how long a session may go without being
	// refreshed and still be refreshed, and SessionMaxSeconds how long
	// after its sign-in it may be refreshed at all; 0 (projects stored
	// before they existed, or that never set them) means the default.
	SessionIdleSeconds int `json:"sessionIdleSeconds,omitempty"`
	SessionMaxSeconds  int `json:"sessionMaxSeconds,omitempty"`

	// SigningKeyID is the JWT "kid" of the project's ES256 key.
	SigningKeyID string `json:"signingKeyId"`
	// SigningKey is the PKCS#8 private key, sealed with the keyring.
	SigningKey []byte `json:"signingKey"`
	// PublicKey is the PKIX public key, published in the JWKS.
	PublicKey []byte `json:"publicKey"`

	// Providers are the project's OAuth 2.0 / OpenID Connect sign-in
	// providers, in the order they were added; names are unique in the
	// project. Nil when there are none.
	Providers []Provider `json:"providers,omitempty"`

	// ForwardAuth is the project's forward-auth for apps behind a
	// reverse proxy: the domain of its cookie and its access rules. Nil
	// when the project has none.
	ForwardAuth *ForwardAuth `json:"forwardAuth,omitempty"`

	// ClientRegistration is whether the project's OpenID provider lets
	// clients register themselves (RFC 7591): "open", or "" (closed).
	ClientRegistration string `json:"clientRegistration,omitempty"`

	// DisplayName, LogoURL and AccentColor brand the project's hosted
	// pages: the name they show (empty: Name), the address of an https
	// logo (empty: none) and a colour "#rrggbb" (empty: the built-in).
	// Checked by the caller.
	DisplayName string `json:"displayName,omitempty"`
	LogoURL     string `json:"logoUrl,omitempty"`
	AccentColor string `json:"accentColor,omitempty"`
}

// ForwardAuth is a project's forward-auth settings.
type ForwardAuth struct {
	// CookieDomain is the domain the sign-in cookie is set for (the
	// apps' hosts are it or under it), without a leading dot.
	CookieDomain string `json:"cookieDomain"`
	// Rules are tried in order; the first whose host and path match
	// decides. No match denies.
	Rules []ForwardAuthRule `json:"rules"`
}

// ForwardAuthRule is one access rule of forward-auth.
type ForwardAuthRule struct {
	// Host is the host the rule covers: a name, or "*." and a domain for
	// every host under it.
	Host string `json:"host"`
	// PathPrefix, when set, limits the rule to paths that start with it.
	PathPrefix string `json:"pathPrefix,omitempty"`
	// Policy is "bypass", "signed_in" or "mfa".
	Policy string `json:"policy"`
	// Groups, when set, admit only users in at least one of them.
	Groups []string `json:"groups,omitempty"`
}

// Provider is one OAuth 2.0 / OpenID Connect provider of a project.
type Provider struct {
	ID       string `json:"id"`
	Name     string `json:"name"` // slug, unique in the project
	Type     string `json:"type"` // oidc, github, google, apple, microsoft
	ClientID string `json:"clientId"`
	// Secret is the client secret sealed with the keyring (additional
	// data "provider:"+ID); never returned by the API.
	Secret    []byte    `json:"secret"`
	Issuer    string    `json:"issuer,omitempty"`
	Scopes    []string  `json:"scopes,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	// ResponseMode is how the provider returns the browser to the
	// callback: "query" (a redirect) or "form_post" (a form the browser
	// posts); empty (providers stored before it existed) means the
	// type's default.
	ResponseMode string `json:"responseMode,omitempty"`
	// LinkByEmail says whether a first sign-in with the provider may
	// sign in the existing account of the address it vouches for; nil
	// in providers stored before the setting existed (auth decides what
	// that means).
	LinkByEmail *bool `json:"linkByEmail,omitempty"`
}
