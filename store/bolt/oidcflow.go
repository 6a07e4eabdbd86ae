package bolt

import (
	"bytes"
	"encoding/json"
	"errors"

	"latchkey/store"
)

// The OpenID providers' authorization code flow (store.OIDCFlows):
// authorization requests in bucketOIDCAuthRequests and grants in
// bucketOIDCGrants, JSON rows keyed by (project, id), each with its
// expiry index (expiries[store.ExpiringOIDCAuthRequests] and
// [store.ExpiringOIDCGrants]); grants have an entry under their user in
// bucketOIDCUserGrants too, keyed by (project, user, grant id), and one
// under their session in bucketOIDCSessionGrants, keyed by (project,
// session, grant id), and one under their client in
// bucketOIDCClientGrants, keyed by (project, client, grant id), which go
// with the grant (the expiry's remove).

// OIDCAuthRequest returns projectID's authorization request id.
func (tx txn) OIDCAuthRequest(projectID, id string) (*store.OIDCAuthRequest, error) {
	if !isText(projectID) || !isText(id) {
		return nil, store.ErrNotFound
	}
	v := tx.bucket(bucketOIDCAuthRequests).Get(compound(projectID, id))
	if v == nil {
		return nil, store.ErrNotFound
	}
	return oidcAuthRequestMemo.decode(v)
}

// PutOIDCAuthRequest stores r; the sweep deletes it at its ExpiresAt.
func (tx txn) PutOIDCAuthRequest(r *store.OIDCAuthRequest) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringOIDCAuthRequests], compound(r.ProjectID, r.ID), v, r.ExpiresAt)
}

// DeleteOIDCAuthRequest removes projectID's request id.
func (tx txn) DeleteOIDCAuthRequest(projectID, id string) error {
	if !isText(projectID) || !isText(id) {
		return nil
	}
	return tx.deleteExpiring(&expiries[store.ExpiringOIDCAuthRequests], compound(projectID, id))
}

// OIDCGrant returns projectID's grant id.
func (tx txn) OIDCGrant(projectID, id string) (*store.OIDCGrant, error) {
	if !isText(projectID) || !isText(id) {
		return nil, store.ErrNotFound
	}
	var g store.OIDCGrant
	if err := tx.get(bucketOIDCGrants, compound(projectID, id), &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// PutOIDCGrant stores g and its entries under its user, its session
// and its client; the sweep deletes them at its ExpiresAt.
func (tx txn) PutOIDCGrant(g *store.OIDCGrant) error {
	v, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if err := tx.bucket(bucketOIDCUserGrants).Put(compound(g.ProjectID, g.UserID, g.ID), []byte{}); err != nil {
		return err
	}
	key := compound(g.ProjectID, g.ID)
	if old := tx.bucket(bucketOIDCGrants).Get(key); old != nil {
		var was store.OIDCGrant
		if err := jsonDecode(old, &was); err != nil {
			return err
		}
		if was.SessionID != g.SessionID {
			if err := tx.del(bucketOIDCSessionGrants, sessionGrantKey(&was)); err != nil {
				return err
			}
		}
		if was.ClientID != g.ClientID {
			if err := tx.del(bucketOIDCClientGrants, clientGrantKeyOf(&was)); err != nil {
				return err
			}
		}
	}
	if err := tx.bucket(bucketOIDCSessionGrants).Put(sessionGrantKey(g), nil); err != nil {
		return err
	}
	if err := tx.bucket(bucketOIDCClientGrants).Put(clientGrantKeyOf(g), nil); err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringOIDCGrants], key, v, g.ExpiresAt)
}

// sessionGrantKey is g's key in bucketOIDCSessionGrants.
func sessionGrantKey(g *store.OIDCGrant) []byte {
	return compound(g.ProjectID, g.SessionID, g.ID)
}

// clientGrantKeyOf is g's key in bucketOIDCClientGrants.
func clientGrantKeyOf(g *store.OIDCGrant) []byte {
	return compound(g.ProjectID, g.ClientID, g.ID)
}

// clientGrantKey returns the entry under its client of the grant row v.
func clientGrantKey(v []byte) ([]byte, error) {
	var g store.OIDCGrant
	if err := jsonDecode(v, &g); err != nil {
		return nil, err
	}
	return clientGrantKeyOf(&g), nil
}

// OIDCClientGrants returns projectID's grants to client clientID: a
// seek in bucketOIDCClientGrants, then each grant.
func (tx txn) OIDCClientGrants(projectID, clientID string) ([]*store.OIDCGrant, error) {
	if !isText(projectID) || !isText(clientID) {
		return []*store.OIDCGrant{}, nil
	}
	return tx.indexedGrants(bucketOIDCClientGrants, projectID, compound(projectID, clientID, ""))
}

// indexedGrants returns projectID's grants whose entries in the index
// bucket start with prefix (the grant id follows it), in ID byte order;
// an entry whose grant is gone is skipped.
func (tx txn) indexedGrants(index []byte, projectID string, prefix []byte) ([]*store.OIDCGrant, error) {
	out := []*store.OIDCGrant{}
	c := tx.bucket(index).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		g, err := tx.OIDCGrant(projectID, string(k[len(prefix):]))
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// OIDCSessionGrants returns projectID's grants under session sessionID:
// a seek in bucketOIDCSessionGrants, then each grant.
func (tx txn) OIDCSessionGrants(projectID, sessionID string) ([]*store.OIDCGrant, error) {
	if !isText(projectID) || !isText(sessionID) {
		return []*store.OIDCGrant{}, nil
	}
	return tx.indexedGrants(bucketOIDCSessionGrants, projectID, compound(projectID, sessionID, ""))
}

// OIDCUserGrants returns projectID's grants of userID in ID byte order;
// never nil. It reads the user's entries and their rows only.
func (tx txn) OIDCUserGrants(projectID, userID string) ([]*store.OIDCGrant, error) {
	out := []*store.OIDCGrant{}
	if !isText(projectID) || !isText(userID) {
		return out, nil
	}
	prefix := compound(projectID, userID, "")
	c := tx.bucket(bucketOIDCUserGrants).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		g, err := tx.OIDCGrant(projectID, string(k[len(prefix):]))
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// userGrantKey returns the entry under its user of the grant row v.
func userGrantKey(v []byte) ([]byte, error) {
	var g store.OIDCGrant
	if err := jsonDecode(v, &g); err != nil {
		return nil, err
	}
	return compound(g.ProjectID, g.UserID, g.ID), nil
}

// indexGrants fills the grants' index bucket (bucketOIDCUserGrants,
// bucketOIDCClientGrants) with each stored grant's entry (entry of its
// row) when the bucket was just made (fresh): a file written before
// the index had grants without their entries. Grants live at most a
// client's refresh token lifetime, so they are few.
func indexGrants(tx txn, fresh bool, bucket []byte, entry func(v []byte) ([]byte, error)) error {
	if !fresh {
		return nil
	}
	index := tx.bucket(bucket)
	return tx.bucket(bucketOIDCGrants).ForEach(func(_, v []byte) error {
		k, err := entry(v)
		if err != nil {
			return err
		}
		return index.Put(k, []byte{})
	})
}
