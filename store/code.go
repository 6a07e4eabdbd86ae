package store

import "time"

// Code is a pending one-time code (email OTP or SMS). Only its keyed hash
// is stored. One code per (kind, project, subject): a new send replaces it.
type Code struct {
	Kind      string    `json:"kind"`
	ProjectID string    `json:"projectId"`
	Subject   string    `json:"subject"` // email address or user id
	Phone     string    `json:"phone,omitempty"`
	Email     string    `json:"email,omitempty"` // address a confirmation code proves
	Hash      []byte    `json:"hash"`
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Throttle is the recent history of one (kind, project, subject): sends
// for per-address send limits, or failures for a guessing limit. The
// sweep deletes it ThrottleIdle after its newest entry; KeepUntil, when
// set, keeps it until ThrottleIdle after then, for histories whose
// window is longer.
type Throttle struct {
	Sends     []time.Time `json:"sends"`
	KeepUntil time.Time   `json:"keepUntil,omitzero"`
}
