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
// [store.ExpiringOIDCGrants]); grants are indexed by session too
// (bucketOIDCSessionGrants), the entry going with its grant.

// OIDCAuthRequest returns projectID's authorization request id.
func (tx txn) OIDCAuthRequest(projectID, id string) (*store.OIDCAuthRequest, error) {
	if !isText(projectID) || !isText(id) {
		return nil, store.ErrNotFound
	}
	var r store.OIDCAuthRequest
	if err := tx.get(bucketOIDCAuthRequests, compound(projectID, id), &r); err != nil {
		return nil, err
	}
	return &r, nil
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

// PutOIDCGrant stores g, under its session too; the sweep deletes it
// at its ExpiresAt.
func (tx txn) PutOIDCGrant(g *store.OIDCGrant) error {
	v, err := json.Marshal(g)
	if err != nil {
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
	}
	if err := tx.bucket(bucketOIDCSessionGrants).Put(sessionGrantKey(g), nil); err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringOIDCGrants], key, v, g.ExpiresAt)
}

// sessionGrantKey is g's key in bucketOIDCSessionGrants.
func sessionGrantKey(g *store.OIDCGrant) []byte {
	return compound(g.ProjectID, g.SessionID, g.ID)
}

// OIDCSessionGrants returns projectID's grants under session sessionID:
// a seek in bucketOIDCSessionGrants, then each grant.
func (tx txn) OIDCSessionGrants(projectID, sessionID string) ([]*store.OIDCGrant, error) {
	out := []*store.OIDCGrant{}
	if !isText(projectID) || !isText(sessionID) {
		return out, nil
	}
	prefix := compound(projectID, sessionID, "")
	c := tx.bucket(bucketOIDCSessionGrants).Cursor()
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
