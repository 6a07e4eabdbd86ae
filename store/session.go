package store

import (
	"bytes"
	"errors"
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
	// SteppedUpAt is the last time this session passed a step-up check
	// (TOTP, the enrolled phone's SMS code, or a backup-code login that
	// created it); zero when never.
	SteppedUpAt time.Time `json:"steppedUpAt,omitzero"`

	// Where the session was signed in from and when it was last used
	// (written at most once a minute; zero until then: IssuedAt).
	IP         string    `json:"ip,omitempty"`
	UserAgent  string    `json:"userAgent,omitempty"`
	LastSeenAt time.Time `json:"lastSeenAt,omitzero"`
}

// Session returns the session with id.
func (tx boltTx) Session(id string) (*Session, error) {
	v := tx.bucket(bucketSessions).Get([]byte(id))
	if v == nil {
		return nil, ErrNotFound
	}
	return decodeSession([]byte(id), v)
}

// SessionExists reports whether a session row with id exists, without
// decoding it (the hot path of every user call).
func (tx boltTx) SessionExists(id string) (bool, error) {
	return tx.bucket(bucketSessions).Get([]byte(id)) != nil, nil
}

// PutSession stores a session, indexed under its user and by its expiry.
func (tx boltTx) PutSession(s *Session) error {
	if err := tx.bucket(bucketUserSessions).Put(compound(s.UserID, s.ID), nil); err != nil {
		return err
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
