package bolt

import (
	"encoding/json"

	"latchkey/store"
)

// The OpenID providers' tokens (store.OIDCTokens): refresh tokens in
// bucketOIDCRefresh, keyed by (project, keyed hash), and revoked access
// tokens in bucketOIDCRevoked, keyed by (project, jti); JSON rows, each
// with its expiry index (expiries[store.ExpiringOIDCRefreshTokens] and
// [store.ExpiringOIDCRevokedTokens]).

// OIDCRefreshToken returns projectID's refresh token whose keyed hash is
// hash.
func (tx txn) OIDCRefreshToken(projectID string, hash []byte) (*store.OIDCRefreshToken, error) {
	if !isText(projectID) {
		return nil, store.ErrNotFound
	}
	var t store.OIDCRefreshToken
	if err := tx.get(bucketOIDCRefresh, compound(projectID, string(hash)), &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// PutOIDCRefreshToken stores t; the sweep deletes it at its ExpiresAt.
func (tx txn) PutOIDCRefreshToken(t *store.OIDCRefreshToken) error {
	v, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringOIDCRefreshTokens], compound(t.ProjectID, string(t.Hash)), v, t.ExpiresAt)
}

// OIDCRevokedToken returns projectID's revoked access token jti.
func (tx txn) OIDCRevokedToken(projectID, jti string) (*store.OIDCRevokedToken, error) {
	if !isText(projectID) || !isText(jti) {
		return nil, store.ErrNotFound
	}
	var r store.OIDCRevokedToken
	if err := tx.get(bucketOIDCRevoked, compound(projectID, jti), &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// PutOIDCRevokedToken stores r; the sweep deletes it at its ExpiresAt.
func (tx txn) PutOIDCRevokedToken(r *store.OIDCRevokedToken) error {
	v, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringOIDCRevokedTokens], compound(r.ProjectID, r.JTI), v, r.ExpiresAt)
}
