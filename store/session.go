package store

import (
	"bytes"
	"encoding/json"
	"errors"
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
		return []Proof{{signIn, issuedAt}}
	}
	if d := steppedUpAt.Sub(issuedAt); method == "backup_code" && d >= 0 && d < time.Second {
		return []Proof{{signIn, steppedUpAt}}
	}
	return []Proof{{signIn, issuedAt}, {"mfa", steppedUpAt}}
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
// was proven, and whether its user has a second factor enrolled.
type SessionState struct {
	UserID string
	// Proofs are the session's proofs (Session.Proofs).
	Proofs []Proof
	// TOTP and SMS are Enrolled's: the user has a TOTP factor, an SMS
	// factor, with Status "enrolled".
	TOTP, SMS bool
}

// Session returns the session with id.
func (tx boltTx) Session(id string) (*Session, error) {
	v := tx.bucket(bucketSessions).Get([]byte(id))
	if v == nil {
		return nil, ErrNotFound
	}
	return decodeSession([]byte(id), v)
}

// SessionEnrolled returns the session with id and what its user has
// enrolled: one point read of the session, two of the factors and one
// index seek of the passkeys.
func (tx boltTx) SessionEnrolled(id string) (*Session, Enrolled, error) {
	s, err := tx.Session(id)
	if err != nil {
		return nil, Enrolled{}, err
	}
	en, err := tx.enrolled(s.ProjectID, s.UserID)
	return s, en, err
}

// ReadEnrolled sets *dst to what userID has enrolled in projectID, at
// once.
func (tx boltTx) ReadEnrolled(projectID, userID string, dst *Enrolled) error {
	en, err := tx.enrolled(projectID, userID)
	*dst = en
	return err
}

// enrolled reads what userID has enrolled in projectID: each factor's
// status only, and whether one passkey row of the user's index exists in
// the project (and is the user's: the index is by user and credential
// id, and another user may hold a credential of that id there).
func (tx boltTx) enrolled(projectID, userID string) (Enrolled, error) {
	var en Enrolled
	factors := tx.bucket(bucketFactors)
	var err error
	if en.TOTP, err = factorEnrolled(factors.Get(compound(userID, "totp"))); err != nil {
		return en, err
	}
	if en.SMS, err = factorEnrolled(factors.Get(compound(userID, "sms"))); err != nil {
		return en, err
	}
	prefix := compound(userID, "")
	c := tx.bucket(bucketUserPasskeys).Cursor()
	if k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) {
		rows := tx.bucket(bucketPasskeys)
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if v := rows.Get(compound(projectID, string(k[len(prefix):]))); v != nil {
				var pk struct {
					UserID string `json:"userId"`
				}
				if err := json.Unmarshal(v, &pk); err != nil {
					return en, err
				}
				if pk.UserID == userID {
					en.Passkey = true
					break
				}
			}
		}
	}
	return en, nil
}

// factorEnrolled reports whether a stored factor (nil: none) has the
// status "enrolled", decoding nothing else of it.
func factorEnrolled(v []byte) (bool, error) {
	if v == nil {
		return false, nil
	}
	var f struct {
		Status string `json:"status"`
	}
	err := json.Unmarshal(v, &f)
	return f.Status == "enrolled", err
}

// SessionExists reports whether a session row with id exists, without
// decoding it (the hot path of every user call).
func (tx boltTx) SessionExists(id string) (bool, error) {
	return tx.bucket(bucketSessions).Get([]byte(id)) != nil, nil
}

// PutSession stores a session, indexed under its user and by its expiry.
// Rewriting an existing session (a step-up's proof) drops it from the
// session cache once tx commits; a new one was in no cache.
func (tx boltTx) PutSession(s *Session) error {
	if err := tx.bucket(bucketUserSessions).Put(compound(s.UserID, s.ID), nil); err != nil {
		return err
	}
	if tx.bucket(bucketSessions).Get([]byte(s.ID)) != nil {
		tx.sessionChanged([]byte(s.ID))
	}
	return tx.putExpiring(&expiries[ExpiringSessions], []byte(s.ID), encodeSession(s), s.ExpiresAt)
}

// DeleteSession removes one session and its index entries.
func (tx boltTx) DeleteSession(s *Session) error {
	if err := tx.deleteExpiring(&expiries[ExpiringSessions], []byte(s.ID)); err != nil {
		return err
	}
	// The user's index entry, should the row have been gone.
	return tx.del(bucketUserSessions, compound(s.UserID, s.ID))
}

// UserSessions returns the ids of userID's sessions.
func (tx boltTx) UserSessions(userID string) ([]string, error) {
	var ids []string
	prefix := compound(userID, "")
	c := tx.bucket(bucketUserSessions).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		ids = append(ids, string(k[len(prefix):]))
	}
	return ids, nil
}

// UserSessionRows returns userID's sessions, in id order (ids are
// time-ordered UUIDs, so oldest first).
func (tx boltTx) UserSessionRows(userID string) ([]*Session, error) {
	ids, err := tx.UserSessions(userID)
	if err != nil {
		return nil, err
	}
	out := make([]*Session, 0, len(ids))
	for _, id := range ids {
		s, err := tx.Session(id)
		if errors.Is(err, ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// TouchSession sets the session's LastSeenAt to t when t is later. A
// session that no longer exists is left absent (never recreated). A
// session never touched whose t is within grace of its IssuedAt is left
// as it is too: shown as last seen at its sign-in, it is off by less than
// grace, and most sessions are used right after their sign-in. The row
// keeps its size and its expiry.
func (tx boltTx) TouchSession(id string, t time.Time, grace time.Duration) error {
	s, err := tx.Session(id)
	if errors.Is(err, ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if !t.After(s.LastSeenAt) || (s.LastSeenAt.IsZero() && t.Sub(s.IssuedAt) < grace) {
		return nil
	}
	s.LastSeenAt = t
	return tx.bucket(bucketSessions).Put([]byte(s.ID), encodeSession(s))
}

// DeleteUserSessions removes every session of userID.
func (tx boltTx) DeleteUserSessions(userID string) error {
	ids, err := tx.UserSessions(userID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := tx.deleteExpiring(&expiries[ExpiringSessions], []byte(id)); err != nil {
			return err
		}
		if err := tx.del(bucketUserSessions, compound(userID, id)); err != nil {
			return err
		}
	}
	return nil
}

// RecentUserSessions returns up to limit of userID's sessions, newest
// first (ids are time-ordered UUIDs), and whether older ones remain. It
// reads at most limit+1 index entries, so a user with many sessions costs
// no more than one with limit of them.
func (tx boltTx) RecentUserSessions(userID string, limit int) ([]*Session, bool, error) {
	out := []*Session{}
	prefix := compound(userID, "")
	c := tx.bucket(bucketUserSessions).Cursor()
	k, _ := c.Seek(append(clone(prefix), 0xff))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Prev() {
		s, err := tx.Session(string(k[len(prefix):]))
		if errors.Is(err, ErrNotFound) {
			continue
		} else if err != nil {
			return nil, false, err
		}
		out = append(out, s)
	}
	return out, k != nil && bytes.HasPrefix(k, prefix), nil
}
