package store

import (
	"encoding/json"
	"time"
)

// Passkey is a WebAuthn credential. Credential is go-webauthn's credential
// record as JSON (public key, sign count, transports, AAGUID, flags).
type Passkey struct {
	ID         string          `json:"id"` // base64url credential id
	UserID     string          `json:"userId"`
	ProjectID  string          `json:"projectId"`
	Credential json.RawMessage `json:"credential"`
	CreatedAt  time.Time       `json:"createdAt"`
	LastUsedAt *time.Time      `json:"lastUsedAt,omitempty"`
}

// Challenge is a pending WebAuthn ceremony (a passkey's registration or
// sign-in): single use, short-lived. A sign-in with a provider in
// flight is an OAuthFlow, not a Challenge.
type Challenge struct {
	ID        string          `json:"id"`
	ProjectID string          `json:"projectId"`
	Kind      string          `json:"kind"` // "register" or "login"
	UserID    string          `json:"userId,omitempty"`
	Email     string          `json:"email,omitempty"` // sign-up
	Session   json.RawMessage `json:"session"`         // go-webauthn SessionData
	ExpiresAt time.Time       `json:"expiresAt"`
}
