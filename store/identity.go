package store

import (
	"errors"
	"time"
)

// Identity links a user to an account at a sign-in provider: the
// provider's issuer and the subject it names the account by, the pair
// OpenID Connect defines as an account's stable identity (GitHub: its
// numeric user id under GitHub's own issuer). It is keyed by (ProjectID,
// Issuer, Subject) and listed under UserID; DeleteUser and DeleteProject
// remove it with its user.
type Identity struct {
	ProjectID string `json:"projectId"`
	Issuer    string `json:"issuer"`
	Subject   string `json:"subject"`
	UserID    string `json:"userId"`
	// Provider is the name of the provider the link was made with, as
	// it was then (for people reading it; the link follows the issuer).
	Provider  string    `json:"provider"`
	CreatedAt time.Time `json:"createdAt"`
}

// ErrBadIdentity is returned by PutIdentity for an identity whose
// project, issuer, subject or user is empty, or one of whose fields is
// not text (invalid UTF-8 or a NUL byte), changing nothing.
var ErrBadIdentity = errors.New("store: identity with an empty key or a field that is not text")
