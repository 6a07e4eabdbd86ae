package bolt

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"

	"latchkey/store"
)

// Session returns the session with id.
func (tx txn) Session(id string) (*store.Session, error) {
	v := tx.bucket(bucketSessions).Get([]byte(id))
	if v == nil {
		return nil, store.ErrNotFound
	}
	return decodeSession([]byte(id), v)
}

// SessionEnrolled returns the session with id and what its user has
// enrolled: one point read of the session, two of the factors and one
// index seek of the passkeys.
func (tx txn) SessionEnrolled(id string) (*store.Session, store.Enrolled, error) {
	s, err := tx.Session(id)
	if err != nil {
		return nil, store.Enrolled{}, err
	}
	en, err := tx.enrolled(s.ProjectID, s.UserID)
	return s, en, err
}

// ReadEnrolled sets *dst to what userID has enrolled in projectID, at
// once.
func (tx txn) ReadEnrolled(projectID, userID string, dst *store.Enrolled) error {
	en, err := tx.enrolled(projectID, userID)
	*dst = en
	return err
}

// enrolled reads what userID has enrolled in projectID: each factor's
// status only, and whether one passkey row of the user's index exists in
// the project (and is the user's: the index is by user and credential
// id, and another user may hold a credential of that id there).
func (tx txn) enrolled(projectID, userID string) (store.Enrolled, error) {
	var en store.Enrolled
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
func (tx txn) SessionExists(id string) (bool, error) {
	return tx.bucket(bucketSessions).Get([]byte(id)) != nil, nil
}

// PutSession stores a session, indexed under its user and by its expiry.
// Rewriting an existing session (a step-up's proof) drops it from the
// session cache once tx commits; a new one was in no cache.
func (tx txn) PutSession(s *store.Session) error {
	if err := tx.bucket(bucketUserSessions).Put(compound(s.UserID, s.ID), nil); err != nil {
		return err
	}
	if tx.bucket(bucketSessions).Get([]byte(s.ID)) != nil {
		tx.sessionChanged([]byte(s.ID))
	}
	return tx.putExpiring(&expiries[store.ExpiringSessions], []byte(s.ID), encodeSession(s), s.ExpiresAt)
}

// DeleteSession removes one session and its index entries.
func (tx txn) DeleteSession(s *store.Session) error {
	if err := tx.deleteExpiring(&expiries[store.ExpiringSessions], []byte(s.ID)); err != nil {
		return err
	}
	// The user's index entry, should the row have been gone.
	return tx.del(bucketUserSessions, compound(s.UserID, s.ID))
}

// UserSessions returns the ids of userID's sessions.
func (tx txn) UserSessions(userID string) ([]string, error) {
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
func (tx txn) UserSessionRows(userID string) ([]*store.Session, error) {
	ids, err := tx.UserSessions(userID)
	if err != nil {
		return nil, err
	}
	out := make([]*store.Session, 0, len(ids))
	for _, id := range ids {
		s, err := tx.Session(id)
		if errors.Is(err, store.ErrNotFound) {
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
func (tx txn) TouchSession(id string, t time.Time, grace time.Duration) error {
	s, err := tx.Session(id)
	if errors.Is(err, store.ErrNotFound) {
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
func (tx txn) DeleteUserSessions(userID string) error {
	ids, err := tx.UserSessions(userID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := tx.deleteExpiring(&expiries[store.ExpiringSessions], []byte(id)); err != nil {
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
func (tx txn) RecentUserSessions(userID string, limit int) ([]*store.Session, bool, error) {
	out := []*store.Session{}
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
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, false, err
		}
		out = append(out, s)
	}
	return out, k != nil && bytes.HasPrefix(k, prefix), nil
}
