package store

import "time"

// MagicLink is a pending sign-in link, keyed by the keyed hash of its token.
type MagicLink struct {
	Hash        []byte     `json:"hash"`
	ProjectID   string     `json:"projectId"`
	Email       string     `json:"email"`
	RedirectURL string     `json:"redirectUrl,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	ExpiresAt   time.Time  `json:"expiresAt"`
	UsedAt      *time.Time `json:"usedAt,omitempty"`
}

// Device is a remembered device: a deviceToken's row id and the keyed
// hash of the whole token, bound to a user. It lasts DeviceLifetime
// after its last use.
type Device struct {
	Key        []byte    `json:"key"`
	Hash       []byte    `json:"hash"`
	UserID     string    `json:"userId"`
	ProjectID  string    `json:"projectId"`
	CreatedAt  time.Time `json:"createdAt"`
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
}

// Expired reports whether d has not been used for DeviceLifetime at now:
// lookups treat it as absent until the sweep deletes it.
func (d *Device) Expired(now time.Time) bool { return !now.Before(d.LastUsedAt.Add(DeviceLifetime)) }
