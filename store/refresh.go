package store

import "time"

// RefreshToken is one refresh token of a session, keyed by the session
// and the keyed hash of the token (the token itself is never stored).
// A session's tokens are its family: one is live (UsedAt nil), the ones
// it replaced are kept as used, so that presenting one again is seen as
// reuse; they all go with their session.
type RefreshToken struct {
	SessionID string    `json:"sessionId"`
	Hash      []byte    `json:"hash"`
	ProjectID string    `json:"projectId"`
	CreatedAt time.Time `json:"createdAt"`
	// UsedAt is when the token was exchanged for the next one of its
	// family (rotated); nil while it is the live one.
	UsedAt *time.Time `json:"usedAt,omitempty"`
	// ExpiresAt is when the sweep deletes it (ExpiringRefreshTokens).
	ExpiresAt time.Time `json:"expiresAt"`
}
