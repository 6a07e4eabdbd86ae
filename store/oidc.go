package store

import "time"

// Records of the projects' OpenID providers: their signing keys and
// their clients (relying parties).

// OIDCKey is one signing key of a project's OpenID provider: it signs
// the provider's ID tokens and access tokens and its public half is in
// the provider's JWKS. It is keyed by (ProjectID, ID); a project has at
// most one active key (RetiredAt zero) of each Alg. These keys are
// apart from the project's session-token key (Project.SigningKey).
type OIDCKey struct {
	ProjectID string `json:"projectId"`
	// ID is the key's "kid".
	ID string `json:"id"`
	// Alg is the JWS algorithm: "RS256" or "ES256".
	Alg string `json:"alg"`
	// PrivateKey is the PKCS#8 private key sealed with the keyring; the
	// additional data names the project and the kid.
	PrivateKey []byte `json:"privateKey"`
	// PublicJWK is the public half as a JSON Web Key, as the JWKS
	// publishes it.
	PublicJWK []byte    `json:"publicJwk"`
	CreatedAt time.Time `json:"createdAt"`
	// RetiredAt is when the key stopped signing; zero while it signs.
	RetiredAt time.Time `json:"retiredAt"`
}

// OIDCClient is a client (relying party) of a project's OpenID
// provider, keyed by (ProjectID, ID). Lists of strings are kept in
// order; what the fields may hold is the caller's business.
type OIDCClient struct {
	ProjectID string `json:"projectId"`
	ID        string `json:"id"`
	Name      string `json:"name"`
	// Type is "confidential" or "public".
	Type string `json:"type"`
	// SecretHash is the keyed hash of the client secret; nil for a
	// public client.
	SecretHash             []byte   `json:"secretHash"`
	RedirectURIs           []string `json:"redirectUris"`
	PostLogoutRedirectURIs []string `json:"postLogoutRedirectUris"`
	BackchannelLogoutURI   string   `json:"backchannelLogoutUri"`
	GrantTypes             []string `json:"grantTypes"`
	Scopes                 []string `json:"scopes"`
	FirstParty             bool     `json:"firstParty"`
	RequireMFA             bool     `json:"requireMfa"`
	// IDTokenAlg is the JWS algorithm of its ID tokens: "RS256" or
	// "ES256".
	IDTokenAlg                  string `json:"idTokenAlg"`
	AccessTokenLifetimeSeconds  int    `json:"accessTokenLifetimeSeconds"`
	RefreshTokenLifetimeSeconds int    `json:"refreshTokenLifetimeSeconds"`
	RefreshTokenIdleSeconds     int    `json:"refreshTokenIdleSeconds"`
	// Claims maps a claim name to where its value comes from
	// ("metadata.<key>").
	Claims    map[string]string `json:"claims"`
	CreatedAt time.Time         `json:"createdAt"`
	UpdatedAt time.Time         `json:"updatedAt"`
	// Registered is whether the client registered itself (dynamic
	// client registration) rather than being created by the admin.
	Registered bool `json:"registered,omitempty"`
}
