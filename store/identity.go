package store

import (
	"bytes"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
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
func (tx boltTx) Identity(projectID, issuer, subject string) (*Identity, error) {
	if !identityKeyOK(projectID, issuer, subject) {
		return nil, ErrNotFound
	}
	var id Identity
	if err := tx.get(bucketIdentities, identityKey(projectID, issuer, subject), &id); err != nil {
		return nil, err
	}
	return &id, nil
}

// PutIdentity creates or replaces the link (id.ProjectID, id.Issuer,
// id.Subject) and keeps its entry under its user: a link that moves to
// another user leaves the former's list.
func (tx boltTx) PutIdentity(id *Identity) error {
	if !identityKeyOK(id.ProjectID, id.Issuer, id.Subject) || id.UserID == "" || !isText(id.UserID) || !isText(id.Provider) {
		return ErrBadIdentity
	}
	key := identityKey(id.ProjectID, id.Issuer, id.Subject)
	old, err := tx.Identity(id.ProjectID, id.Issuer, id.Subject)
	if err != nil && err != ErrNotFound {
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
func (tx boltTx) UserIdentities(userID string) ([]*Identity, error) {
	out := []*Identity{}
	prefix := compound(userID, "")
	c := tx.bucket(bucketUserIdentities).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		var id Identity
		err := tx.get(bucketIdentities, k[len(prefix):], &id)
		if err == ErrNotFound {
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
func (tx boltTx) deleteUserIdentities(userID string) error {
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
func (tx boltTx) deleteProjectIdentities(projectID string) error {
	prefix := compound(projectID, "")
	var ids []Identity
	c := tx.bucket(bucketIdentities).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var id Identity
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
