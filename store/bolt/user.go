package bolt

import (
	"bytes"

	"latchkey/store"
)

// User returns the user with id.
func (tx txn) User(id string) (*store.User, error) {
	v := tx.bucket(bucketUsers).Get([]byte(id))
	if v == nil {
		return nil, store.ErrNotFound
	}
	return decodeUser([]byte(id), v)
}

// UserByEmail returns projectID's user with the (normalized) email.
func (tx txn) UserByEmail(projectID, email string) (*store.User, error) {
	id := tx.bucket(bucketUsersByEmail).Get(compound(projectID, email))
	if id == nil {
		return nil, store.ErrNotFound
	}
	return tx.User(userIDOf(id))
}

// UserByExternalID returns projectID's user with the external id.
func (tx txn) UserByExternalID(projectID, ext string) (*store.User, error) {
	id := tx.bucket(bucketUsersByExt).Get(compound(projectID, ext))
	if id == nil {
		return nil, store.ErrNotFound
	}
	return tx.User(userIDOf(id))
}

// PutUser creates or updates u and keeps the email and external-id indexes
// in step. It returns ErrConflict, changing nothing, when another user of
// the project holds u's email or external id.
func (tx txn) PutUser(u *store.User) error {
	old, err := tx.User(u.ID)
	if err != nil && err != store.ErrNotFound {
		return err
	}
	byEmail, byExt := tx.bucket(bucketUsersByEmail), tx.bucket(bucketUsersByExt)
	emailKey := compound(u.ProjectID, u.Email)
	if id := byEmail.Get(emailKey); id != nil && userIDOf(id) != u.ID {
		return store.ErrConflict
	}
	var extKey []byte
	if u.ExternalUserID != "" {
		extKey = compound(u.ProjectID, u.ExternalUserID)
		if id := byExt.Get(extKey); id != nil && userIDOf(id) != u.ID {
			return store.ErrConflict
		}
	}
	if old != nil {
		if old.Email != u.Email {
			if err := byEmail.Delete(compound(old.ProjectID, old.Email)); err != nil {
				return err
			}
		}
		if old.ExternalUserID != "" && old.ExternalUserID != u.ExternalUserID {
			if err := byExt.Delete(compound(old.ProjectID, old.ExternalUserID)); err != nil {
				return err
			}
		}
	}
	ref := userRef(u.ID)
	if err := byEmail.Put(emailKey, ref); err != nil {
		return err
	}
	if extKey != nil {
		if err := byExt.Put(extKey, ref); err != nil {
			return err
		}
	}
	if old != nil {
		// The session cache keeps the user's address, name and groups.
		tx.factorsChanged(u.ID)
	}
	return tx.bucket(bucketUsers).Put([]byte(u.ID), encodeUser(u))
}

// DeleteUser removes the user, its indexes, its sessions, its factors
// and its links to sign-in providers.
func (tx txn) DeleteUser(u *store.User) error {
	if err := tx.DeleteUserSessions(u.ID); err != nil {
		return err
	}
	if err := tx.DeleteFactors(u); err != nil {
		return err
	}
	if err := tx.deleteUserIdentities(u.ID); err != nil {
		return err
	}
	if err := tx.deleteUserConsents(u.ProjectID, u.ID); err != nil {
		return err
	}
	if err := tx.del(bucketUsersByEmail, compound(u.ProjectID, u.Email)); err != nil {
		return err
	}
	if u.ExternalUserID != "" {
		if err := tx.del(bucketUsersByExt, compound(u.ProjectID, u.ExternalUserID)); err != nil {
			return err
		}
	}
	return tx.del(bucketUsers, []byte(u.ID))
}

// Users returns up to limit of projectID's users in email order, starting
// after the address after ("" from the first); with emailPrefix set, only
// those whose email starts with it. more reports whether others follow.
// It seeks once in the email index and reads limit rows, at any depth.
func (tx txn) Users(projectID, emailPrefix, after string, limit int) (users []*store.User, more bool, err error) {
	c := tx.bucket(bucketUsersByEmail).Cursor()
	prefix := compound(projectID, emailPrefix)
	k, v := c.Seek(prefix)
	if after != "" {
		if start := compound(projectID, after); bytes.Compare(start, prefix) >= 0 {
			if k, v = c.Seek(start); k != nil && bytes.Equal(k, start) {
				k, v = c.Next()
			}
		}
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if limit > 0 && len(users) >= limit {
			return users, true, nil
		}
		u, err := tx.User(userIDOf(v))
		if err != nil {
			return nil, false, err
		}
		users = append(users, u)
	}
	return users, false, nil
}

// userRef is the value of a user's index entries: 17 bytes (tagUUID and
// the 16 bytes) for a canonical UUID, else the id itself. Entries written
// before it hold the id as text; userIDOf reads both.
func userRef(id string) []byte {
	if u, ok := parseUUID(id); ok {
		return append([]byte{tagUUID}, u[:]...)
	}
	return []byte(id)
}

// userIDOf reads a value written by userRef (or the id as text).
func userIDOf(v []byte) string {
	if len(v) == 17 && v[0] == tagUUID {
		return formatUUID(v[1:])
	}
	return string(v)
}
