package bolt

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"latchkey/store"
)

// isText reports whether s is valid UTF-8 without NUL bytes: what both
// backends store as text, and what keeps compound keys unambiguous.
func isText(s string) bool { return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 }

// identityKeyOK reports whether these key fields can name an identity:
// each is non-empty text.
func identityKeyOK(projectID, issuer, subject string) bool {
	for _, s := range []string{projectID, issuer, subject} {
		if s == "" || !isText(s) {
			return false
		}
	}
	return true
}

// identityKey is the key of (projectID, issuer, subject) in
// bucketIdentities: a project's identities are one prefix (DeleteProject).
func identityKey(projectID, issuer, subject string) []byte {
	return compound(projectID, issuer, subject)
}

// Identity returns projectID's link of (issuer, subject).
func (tx txn) Identity(projectID, issuer, subject string) (*store.Identity, error) {
	if !identityKeyOK(projectID, issuer, subject) {
		return nil, store.ErrNotFound
	}
	var id store.Identity
	if err := tx.get(bucketIdentities, identityKey(projectID, issuer, subject), &id); err != nil {
		return nil, err
	}
	return &id, nil
}

// PutIdentity creates or replaces the link (id.ProjectID, id.Issuer,
// id.Subject) and keeps its entry under its user: a link that moves to
// another user leaves the former's list.
func (tx txn) PutIdentity(id *store.Identity) error {
	if !identityKeyOK(id.ProjectID, id.Issuer, id.Subject) || id.UserID == "" || !isText(id.UserID) || !isText(id.Provider) {
		return store.ErrBadIdentity
	}
	key := identityKey(id.ProjectID, id.Issuer, id.Subject)
	old, err := tx.Identity(id.ProjectID, id.Issuer, id.Subject)
	if err != nil && err != store.ErrNotFound {
		return err
	}
	if old != nil && old.UserID != id.UserID {
		if err := tx.del(bucketUserIdentities, compound(old.UserID, string(key))); err != nil {
			return err
		}
	}
	if err := tx.bucket(bucketUserIdentities).Put(compound(id.UserID, string(key)), []byte{}); err != nil {
		return err
	}
	return tx.put(bucketIdentities, key, id)
}

// UserIdentities returns userID's links in (project, issuer, subject)
// byte order; never nil.
func (tx txn) UserIdentities(userID string) ([]*store.Identity, error) {
	out := []*store.Identity{}
	prefix := compound(userID, "")
	c := tx.bucket(bucketUserIdentities).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var id store.Identity
		err := tx.get(bucketIdentities, k[len(prefix):], &id)
		if err == store.ErrNotFound {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, &id)
	}
	return out, nil
}

// deleteUserIdentities removes userID's links and their entries under
// it (DeleteUser).
func (tx txn) deleteUserIdentities(userID string) error {
	prefix := compound(userID, "")
	c := tx.bucket(bucketUserIdentities).Cursor()
	var keys [][]byte
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := tx.del(bucketIdentities, k[len(prefix):]); err != nil {
			return err
		}
		if err := tx.del(bucketUserIdentities, k); err != nil {
			return err
		}
	}
	return nil
}

// deleteProjectIdentities removes projectID's links, with their entries
// under their users, that DeleteUser left (a link whose user row was
// gone).
func (tx txn) deleteProjectIdentities(projectID string) error {
	prefix := compound(projectID, "")
	var ids []store.Identity
	c := tx.bucket(bucketIdentities).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var id store.Identity
		if err := jsonDecode(v, &id); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		key := identityKey(id.ProjectID, id.Issuer, id.Subject)
		if err := tx.del(bucketUserIdentities, compound(id.UserID, string(key))); err != nil {
			return err
		}
		if err := tx.del(bucketIdentities, key); err != nil {
			return err
		}
	}
	return nil
}
