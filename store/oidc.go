package store

import "time"

// Records of the projects' OpenID providers.

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
