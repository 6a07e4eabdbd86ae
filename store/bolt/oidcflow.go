package bolt

import (
	"encoding/json"

	"latchkey/store"
)

// The OpenID providers' authorization code flow (store.OIDCFlows):
// authorization requests in bucketOIDCAuthRequests and grants in
// bucketOIDCGrants, JSON rows keyed by (project, id), each with its
// expiry index (expiries[store.ExpiringOIDCAuthRequests] and
// [store.ExpiringOIDCGrants]).

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

// PutOIDCGrant stores g; the sweep deletes it at its ExpiresAt.
func (tx txn) PutOIDCGrant(g *store.OIDCGrant) error {
	v, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringOIDCGrants], compound(g.ProjectID, g.ID), v, g.ExpiresAt)
}
