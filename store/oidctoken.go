package store

import "time"

// Records of the OpenID providers' tokens beyond the code flow: refresh
// tokens (kept as keyed hashes, one family per grant) and the access
// tokens revoked before their expiry (RFC 7009). Both are keyed by their
// project first, so that a project's provider never reaches another's;
// the sweep deletes them at their ExpiresAt, DeleteProject with their
// project.

// OIDCRefreshToken is one refresh token of a grant, keyed by (ProjectID,
// Hash), Hash being the keyed hash of the token (the token itself is
// never stored). A grant's refresh tokens are its family: one is live
// (RotatedAt zero), the ones it replaced are kept rotated for a while,
// so that one presented again is seen as reuse.
type OIDCRefreshToken struct {
	ProjectID string `json:"projectId"`
	Hash      []byte `json:"hash"`
	GrantID   string `json:"grantId"`
	ClientID  string `json:"clientId"`
	// Scopes are the token's scopes: its grant's, or fewer when a
	// refresh asked for fewer.
	Scopes    []string  `json:"scopes"`
	CreatedAt time.Time `json:"createdAt"`
	// RotatedAt is when the token was exchanged for the next one of its
	// family; zero while it is the live one.
	RotatedAt time.Time `json:"rotatedAt"`
	// ExpiresAt is when the sweep deletes it: for a live token, when it
	// stops being accepted (idle); for a rotated one, when a reuse of it
	// is no longer told.
	ExpiresAt time.Time `json:"expiresAt"`
}

// OIDCRevokedToken is an access token of a project's provider revoked
// before its expiry (RFC 7009), keyed by (ProjectID, JTI): checks of the
// token refuse it while the row lives, and the sweep deletes it at
// ExpiresAt, the token's own expiry, after which nothing accepts it.
type OIDCRevokedToken struct {
	ProjectID string    `json:"projectId"`
	JTI       string    `json:"jti"`
	ClientID  string    `json:"clientId"`
	RevokedAt time.Time `json:"revokedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}
