package bolt

import (
	"bytes"
	"fmt"

	"latchkey/store"
)

// The users' consents to the OpenID providers' third-party clients
// (store.OIDCConsents): JSON rows in bucketOIDCConsents keyed by
// (project, user, client), so a user's consents are one prefix, and an
// entry under the client in bucketOIDCClientConsents, keyed by
// (project, client, user), so DeleteOIDCClient reads only the client's.

// OIDCConsent returns userID's consent to projectID's client clientID.
func (tx txn) OIDCConsent(projectID, userID, clientID string) (*store.OIDCConsent, error) {
	if !isText(projectID) || !isText(userID) || !isText(clientID) {
		return nil, store.ErrNotFound
	}
	var c store.OIDCConsent
	if err := tx.get(bucketOIDCConsents, compound(projectID, userID, clientID), &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// OIDCUserConsents returns userID's consents in projectID, in ClientID
// byte order; never nil.
func (tx txn) OIDCUserConsents(projectID, userID string) ([]*store.OIDCConsent, error) {
	out := []*store.OIDCConsent{}
	if !isText(projectID) || !isText(userID) {
		return out, nil
	}
	prefix := compound(projectID, userID, "")
	c := tx.bucket(bucketOIDCConsents).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var oc store.OIDCConsent
		if err := jsonDecode(v, &oc); err != nil {
			return nil, err
		}
		out = append(out, &oc)
	}
	return out, nil
}

// PutOIDCConsent creates or replaces the consent (c.ProjectID, c.UserID,
// c.ClientID) and its entry under the client.
func (tx txn) PutOIDCConsent(c *store.OIDCConsent) error {
	if err := tx.bucket(bucketOIDCClientConsents).Put(compound(c.ProjectID, c.ClientID, c.UserID), []byte{}); err != nil {
		return err
	}
	return tx.put(bucketOIDCConsents, compound(c.ProjectID, c.UserID, c.ClientID), c)
}

// DeleteOIDCConsent removes userID's consent to projectID's client
// clientID and its entry under the client.
func (tx txn) DeleteOIDCConsent(projectID, userID, clientID string) error {
	if !isText(projectID) || !isText(userID) || !isText(clientID) {
		return nil
	}
	if err := tx.del(bucketOIDCClientConsents, compound(projectID, clientID, userID)); err != nil {
		return err
	}
	return tx.del(bucketOIDCConsents, compound(projectID, userID, clientID))
}

// deleteUserConsents removes every consent of projectID's user userID.
func (tx txn) deleteUserConsents(projectID, userID string) error {
	consents, err := tx.OIDCUserConsents(projectID, userID)
	if err != nil {
		return err
	}
	for _, c := range consents {
		if err := tx.DeleteOIDCConsent(c.ProjectID, c.UserID, c.ClientID); err != nil {
			return err
		}
	}
	return nil
}

// deleteClientConsents removes every consent to projectID's client
// clientID, reading the client's entries only.
func (tx txn) deleteClientConsents(projectID, clientID string) error {
	prefix := compound(projectID, clientID, "")
	var users []string
	c := tx.bucket(bucketOIDCClientConsents).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		users = append(users, string(k[len(prefix):]))
	}
	for _, u := range users {
		if err := tx.DeleteOIDCConsent(projectID, u, clientID); err != nil {
			return err
		}
	}
	return nil
}

// checkOIDCIndexes verifies that every grant has its entries under its
// user and its client and every consent its entry under its client,
// and that no entry is left without its row (for tests, through
// Check).
func (tx txn) checkOIDCIndexes() error {
	for _, ix := range []struct {
		name        string
		rows, index []byte
		entry       func(v []byte) ([]byte, error)
	}{
		{"grant by user", bucketOIDCGrants, bucketOIDCUserGrants, userGrantKey},
		{"grant by client", bucketOIDCGrants, bucketOIDCClientGrants, clientGrantKey},
		{"consent by client", bucketOIDCConsents, bucketOIDCClientConsents, func(v []byte) ([]byte, error) {
			var c store.OIDCConsent
			if err := jsonDecode(v, &c); err != nil {
				return nil, err
			}
			return compound(c.ProjectID, c.ClientID, c.UserID), nil
		}},
	} {
		index, n := tx.bucket(ix.index), 0
		err := tx.bucket(ix.rows).ForEach(func(k, v []byte) error {
			e, err := ix.entry(v)
			if err != nil {
				return fmt.Errorf("%s: row %q: %w", ix.name, k, err)
			}
			if index.Get(e) == nil {
				return fmt.Errorf("%s: row %q has no index entry", ix.name, k)
			}
			n++
			return nil
		})
		if err != nil {
			return err
		}
		if got := keyCount(index); got != n {
			return fmt.Errorf("%s: %d index entries for %d rows", ix.name, got, n)
		}
	}
	return nil
}
