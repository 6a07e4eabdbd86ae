package store

import (
	"fmt"
	"time"
)

// Retention of rows that are not deleted by their own use.
const (
	// DeviceLifetime is how long a remembered device lasts after it was
	// last used to sign in.
	DeviceLifetime = 90 * 24 * time.Hour
	// DeliveryLifetime is how long a webhook delivery record is kept.
	DeliveryLifetime = 30 * 24 * time.Hour
	// ThrottleIdle is how long a send or failure history is kept after
	// its newest entry (or after its KeepUntil, when that is later).
	ThrottleIdle = time.Hour
)

// Expiring names a kind of row that the sweep deletes when it is due
// (Tx.ExpiryDue, Tx.SweepExpired). A backend keeps each kind indexed by
// due time, in the same transaction as every change of the row, so that
// a sweep reads only the rows it deletes. On bbolt each kind has an
// expiry index, a bucket keyed by the time the row is due (8 bytes,
// big-endian) followed by the row's key.
type Expiring int

// The expiring kinds.
const (
	// ExpiringSessions are sessions, due at their ExpiresAt.
	ExpiringSessions Expiring = iota
	// ExpiringCodes are one-time codes and replay marks (due at their
	// ExpiresAt) and the send and failure histories kept with them (due
	// ThrottleIdle after their newest entry or their KeepUntil).
	ExpiringCodes
	// ExpiringMagicLinks are magic links, used or not, due at their
	// ExpiresAt.
	ExpiringMagicLinks
	// ExpiringChallenges are WebAuthn ceremonies, due at their ExpiresAt.
	ExpiringChallenges
	// ExpiringGrants are external-method grants, due at their ExpiresAt.
	ExpiringGrants
	// ExpiringDevices are remembered devices, due DeviceLifetime after
	// their last use.
	ExpiringDevices
	// ExpiringDeliveries are webhook delivery records, due
	// DeliveryLifetime after the attempt.
	ExpiringDeliveries
	// ExpiringOAuthFlows are sign-ins with providers in flight (their
	// states and one-time codes), due at their ExpiresAt.
	ExpiringOAuthFlows
	// ExpiringRefreshTokens are sessions' refresh tokens, used or not,
	// due at their ExpiresAt (they go with their session before that
	// when it ends first).
	ExpiringRefreshTokens
	// ExpiringOIDCAuthRequests are the OpenID providers' authorization
	// requests, due at their ExpiresAt.
	ExpiringOIDCAuthRequests
	// ExpiringOIDCGrants are the OpenID providers' grants, due at their
	// ExpiresAt.
	ExpiringOIDCGrants
	// ExpiringOIDCRefreshTokens are the OpenID providers' refresh
	// tokens, due at their ExpiresAt.
	ExpiringOIDCRefreshTokens
	// ExpiringOIDCRevokedTokens are the OpenID providers' revoked access
	// tokens, due at their ExpiresAt (the tokens' own expiry).
	ExpiringOIDCRevokedTokens
	// ExpiringOIDCDeviceAuths are the OpenID providers' device
	// authorizations, due at their ExpiresAt.
	ExpiringOIDCDeviceAuths

	numExpiring = iota
)

// ExpiringKinds lists every expiring kind, for a sweep that deletes them
// all.
func ExpiringKinds() []Expiring {
	out := make([]Expiring, numExpiring)
	for i := range out {
		out[i] = Expiring(i)
	}
	return out
}

// String names the kind for logs.
func (k Expiring) String() string {
	if k < 0 || k >= numExpiring {
		return fmt.Sprintf("Expiring(%d)", int(k))
	}
	return expiringNames[k]
}

// expiringNames names the kinds for String.
var expiringNames = [numExpiring]string{
	ExpiringSessions:      "sessions",
	ExpiringCodes:         "codes",
	ExpiringMagicLinks:    "magic links",
	ExpiringChallenges:    "challenges",
	ExpiringGrants:        "grants",
	ExpiringDevices:       "devices",
	ExpiringDeliveries:    "webhook deliveries",
	ExpiringRefreshTokens: "refresh tokens",
	ExpiringOAuthFlows:    "oauth flows",

	ExpiringOIDCAuthRequests: "oidc authorization requests",
	ExpiringOIDCGrants:       "oidc grants",

	ExpiringOIDCRefreshTokens: "oidc refresh tokens",
	ExpiringOIDCRevokedTokens: "oidc revoked tokens",
	ExpiringOIDCDeviceAuths:   "oidc device authorizations",
}
