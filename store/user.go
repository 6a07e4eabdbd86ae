package store

import (
	"encoding/json"
	"time"
)

// User is an end user of one project. Email is unique per project (stored
// lowercased); ExternalUserID, when set, is unique per project too.
type User struct {
	ID             string    `json:"id"`
	ProjectID      string    `json:"projectId"`
	Email          string    `json:"email"`
	ExternalUserID string    `json:"externalUserId,omitempty"`
	FirstName      string    `json:"firstName,omitempty"`
	CompanyID      string    `json:"companyId,omitempty"`
	Disabled       bool      `json:"disabled"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`

	// EmailVerified records whether Email was proven (a code or link
	// sent to it, or an app vouching for it). Nil in rows written before
	// the field existed; auth settles those (see auth's settleVerified).
	EmailVerified *bool `json:"emailVerified,omitempty"`

	// Vouched records whether the operator vouched that Email belongs
	// to this account: an import wrote it, and its address has not
	// changed since. A sign-in that proves the address keeps a vouched
	// account, where it replaces an unverified one nobody vouched for
	// (a passkey sign-up, an address changed directly). Nil in rows
	// written before the field existed; auth settles those (see auth's
	// replaceable).
	Vouched *bool `json:"vouched,omitempty"`

	// Groups are the user's groups in its project, as slugs (auth
	// checks them, and keeps them sorted without repeats). Nil when the
	// user has none; a store keeps an empty non-nil list as such.
	Groups []string `json:"groups,omitempty"`

	// Metadata is what the app or the operator keeps about the user: a
	// JSON object (auth bounds its size), kept byte for byte. Nil when
	// there is none; a store keeps "{}" as such.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}
