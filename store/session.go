package store

import (
	"strings"
	"time"
)

// Session is a signed-in user's session; the JWT names it in "sid".
type Session struct {
	ID        string    `json:"id"`
	UserID    string    `json:"userId"`
	ProjectID string    `json:"projectId"`
	Method    string    `json:"method"`
	IssuedAt  time.Time `json:"issuedAt"`
	ExpiresAt time.Time `json:"expiresAt"`

	// Where the session was signed in from and when it was last used
	// (written at most once a minute; zero until then: IssuedAt).
	IP         string    `json:"ip,omitempty"`
	UserAgent  string    `json:"userAgent,omitempty"`
	LastSeenAt time.Time `json:"lastSeenAt,omitzero"`

	// Proofs are how the session was proven: each method once, in the
	// order first proven, with the time it was last proven. A session
	// stored before sessions kept them reads as LegacyProofs says.
	Proofs []Proof `json:"proofs,omitempty"`
}

// Proof is one way a session was proven and when it last was. Method is
// an authentication method reference (amr): "otp" (an email code),
// "link", "passkey", "backup_code", "totp", "sms", "oauth:<provider>",
// "external", or "mfa" (LegacyProofs).
type Proof struct {
	Method string    `json:"method"`
	At     time.Time `json:"at"`
	// Synced is, for a passkey proof, whether the passkey was backup
	// eligible (a synced passkey, which may leave the device) rather
	// than bound to one authenticator.
	Synced bool `json:"synced,omitempty"`
}

// LegacyProofs returns the proofs of a session stored before sessions
// kept them, from what such a row held: its sign-in method (as the
// session lists show it: email_otp, magic_link, passkey, backup_code,
// oauth:<provider>, external:<method>) at IssuedAt, and the time of its
// last step-up. That step-up was a TOTP code or the enrolled phone's SMS
// code, which of them was not recorded: it reads as "mfa". A backup-code
// sign-in set it too, within a second of IssuedAt (IssuedAt is
// truncated to the second): that is the sign-in itself, at the later
// time.
func LegacyProofs(method string, issuedAt, steppedUpAt time.Time) []Proof {
	signIn := method
	switch {
	case method == "email_otp":
		signIn = "otp"
	case method == "magic_link":
		signIn = "link"
	case strings.HasPrefix(method, "external:"):
		signIn = "external"
	}
	if steppedUpAt.IsZero() {
		return []Proof{{Method: signIn, At: issuedAt}}
	}
	if d := steppedUpAt.Sub(issuedAt); method == "backup_code" && d >= 0 && d < time.Second {
		return []Proof{{Method: signIn, At: steppedUpAt}}
	}
	return []Proof{{Method: signIn, At: issuedAt}, {Method: "mfa", At: steppedUpAt}}
}

// Enrolled is what an account holds that proves its user besides its
// address: an enrolled TOTP factor, an enrolled SMS factor, passkeys.
type Enrolled struct {
	TOTP    bool // a TOTP factor with Status "enrolled"
	SMS     bool // an SMS factor with Status "enrolled"
	Passkey bool // at least one passkey in the user's project
}

// SessionState is what the session check of every user call and GET
// /session need of a session row (DB.SessionState): whose it is, how it
// was proven, whether its user has a second factor enrolled, and who
// the user is (for a forward-auth check's identity headers).
type SessionState struct {
	UserID string
	// Proofs are the session's proofs (Session.Proofs).
	Proofs []Proof
	// TOTP and SMS are Enrolled's: the user has a TOTP factor, an SMS
	// factor, with Status "enrolled".
	TOTP, SMS bool
	// Email, Name and Groups are the user's User.Email, FirstName and
	// Groups (empty without the user's row). A change of the user shows
	// in the next SessionState, as a change of its factors does.
	Email, Name string
	Groups      []string
}
