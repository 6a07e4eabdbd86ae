package bolt

import (
	"bytes"
	"slices"
	"time"

	"latchkey/store"
)

// The projects' OpenID providers: signing keys in bucketOIDCKeys, keyed
// by (project, kid), and clients in bucketOIDCClients, keyed by
// (project, id), so a project's rows of each are one prefix (the
// listings, DeleteProject).

// OIDCKeys returns projectID's keys, oldest CreatedAt first (equal
// times in ID byte order); never nil.
func (tx txn) OIDCKeys(projectID string) ([]*store.OIDCKey, error) {
	out := []*store.OIDCKey{}
	if !isText(projectID) {
		return out, nil
	}
	prefix := compound(projectID, "")
	c := tx.bucket(bucketOIDCKeys).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var key store.OIDCKey
		if err := jsonDecode(v, &key); err != nil {
			return nil, err
		}
		out = append(out, &key)
	}
	// The cursor gave them in kid order: a stable sort keeps it among
	// equal times.
	slices.SortStableFunc(out, func(a, b *store.OIDCKey) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// AddOIDCKey creates the key (k.ProjectID, k.ID); ErrConflict when the
// project has that kid, or, for an active key, an active key of k.Alg.
// Writers run one at a time: the read of the project's keys is the
// whole check.
func (tx txn) AddOIDCKey(k *store.OIDCKey) error {
	keys, err := tx.OIDCKeys(k.ProjectID)
	if err != nil {
		return err
	}
	for _, o := range keys {
		if o.ID == k.ID || k.RetiredAt.IsZero() && o.RetiredAt.IsZero() && o.Alg == k.Alg {
			return store.ErrConflict
		}
	}
	return tx.put(bucketOIDCKeys, compound(k.ProjectID, k.ID), k)
}

// RetireOIDCKey sets the RetiredAt of an active key to at.
func (tx txn) RetireOIDCKey(projectID, id string, at time.Time) error {
	if !isText(projectID) || !isText(id) {
		return store.ErrNotFound
	}
	key := compound(projectID, id)
	var k store.OIDCKey
	if err := tx.get(bucketOIDCKeys, key, &k); err != nil {
		return err
	}
	if !k.RetiredAt.IsZero() {
		return nil
	}
	k.RetiredAt = at
	return tx.put(bucketOIDCKeys, key, &k)
}

// Clients in bucketOIDCClients, keyed by (project, id).

// OIDCClient returns projectID's client id.
func (tx txn) OIDCClient(projectID, id string) (*store.OIDCClient, error) {
	if !isText(projectID) || !isText(id) {
		return nil, store.ErrNotFound
	}
	v := tx.bucket(bucketOIDCClients).Get(compound(projectID, id))
	if v == nil {
		return nil, store.ErrNotFound
	}
	return oidcClientMemo.decode(v)
}

// OIDCClients returns projectID's clients in ID byte order; never nil.
func (tx txn) OIDCClients(projectID string) ([]*store.OIDCClient, error) {
	out := []*store.OIDCClient{}
	if !isText(projectID) {
		return out, nil
	}
	prefix := compound(projectID, "")
	c := tx.bucket(bucketOIDCClients).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var cl store.OIDCClient
		if err := jsonDecode(v, &cl); err != nil {
			return nil, err
		}
		out = append(out, &cl)
	}
	return out, nil
}

// PutOIDCClient creates or replaces the client (c.ProjectID, c.ID).
func (tx txn) PutOIDCClient(c *store.OIDCClient) error {
	return tx.put(bucketOIDCClients, compound(c.ProjectID, c.ID), c)
}

// DeleteOIDCClient removes projectID's client id and the consents to
// it.
func (tx txn) DeleteOIDCClient(projectID, id string) error {
	if !isText(projectID) || !isText(id) {
		return nil
	}
	if err := tx.deleteClientConsents(projectID, id); err != nil {
		return err
	}
	return tx.del(bucketOIDCClients, compound(projectID, id))
}
