package store

import "time"

// APIKey is an application's credential. Only the keyed hash of the whole
// key is stored; Prefix (sk_live_/sk_test_ plus the lookup id) names it.
type APIKey struct {
	Prefix    string     `json:"prefix"`
	Hash      []byte     `json:"hash"`
	ProjectID string     `json:"projectId,omitempty"`
	Mode      string     `json:"mode"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	Revoked   bool       `json:"revoked"`
	CreatedAt time.Time  `json:"createdAt"`
}
