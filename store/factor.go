package store

import "time"

// Factor is a user's step-up factor: kind "totp" (Secret sealed) or
// "sms" (Phone). Status is "pending" until the first correct code, then
// "enrolled".
type Factor struct {
	UserID      string     `json:"userId"`
	ProjectID   string     `json:"projectId"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	Secret      []byte     `json:"secret,omitempty"`
	Phone       string     `json:"phone,omitempty"`
	LastStep    int64      `json:"lastStep,omitempty"`
	Failures    int        `json:"failures,omitempty"`
	LockedUntil time.Time  `json:"lockedUntil,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	EnrolledAt  *time.Time `json:"enrolledAt,omitempty"`
}

// BackupCodes is a user's current batch of recovery codes, as keyed
// hashes; a new batch replaces the whole row.
type BackupCodes struct {
	UserID    string    `json:"userId"`
	ProjectID string    `json:"projectId"`
	Hashes    [][]byte  `json:"hashes"`
	Used      []bool    `json:"used"`
	CreatedAt time.Time `json:"createdAt"`
}

// Grant is a Pattern B external-method result waiting to be redeemed,
// keyed by the keyed hash of (registration, reference).
type Grant struct {
	Hash           []byte     `json:"hash"`
	MethodID       string     `json:"methodId"`
	ProjectID      string     `json:"projectId"`
	ExternalUserID string     `json:"externalUserId"`
	Email          string     `json:"email,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	ExpiresAt      time.Time  `json:"expiresAt"`
	UsedAt         *time.Time `json:"usedAt,omitempty"`
}
