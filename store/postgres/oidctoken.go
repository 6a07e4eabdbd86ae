package postgres

import (
	"latchkey/store"
)

// The OpenID providers' tokens (migration 0018; store.OIDCTokens):
// refresh tokens in oidc_refresh_tokens, one row per (project, keyed
// hash), and revoked access tokens in oidc_revoked_tokens, one row per
// (project, jti), swept at their expiry (due, a generated column).

const oidcRefreshCols = `project_id, hash, grant_id, client_id, scopes, created_at, rotated_at, expires_at`

// oidcRefreshDest returns the scan destinations of oidcRefreshCols in t.
func oidcRefreshDest(t *store.OIDCRefreshToken) []any {
	return []any{&t.ProjectID, &t.Hash, &t.GrantID, &t.ClientID, &t.Scopes, timeDest(&t.CreatedAt), timeDest(&t.RotatedAt),
		timeDest(&t.ExpiresAt)}
}

const oidcRevokedCols = `project_id, jti, client_id, revoked_at, expires_at`

// oidcRevokedDest returns the scan destinations of oidcRevokedCols in r.
func oidcRevokedDest(r *store.OIDCRevokedToken) []any {
	return []any{&r.ProjectID, &r.JTI, &r.ClientID, timeDest(&r.RevokedAt), timeDest(&r.ExpiresAt)}
}

const (
	sqlOIDCRefreshToken    = `SELECT ` + oidcRefreshCols + ` FROM oidc_refresh_tokens WHERE project_id = $1 AND hash = $2`
	sqlPutOIDCRefreshToken = `INSERT INTO oidc_refresh_tokens (` + oidcRefreshCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (project_id, hash) DO UPDATE SET grant_id = excluded.grant_id, client_id = excluded.client_id,
			scopes = excluded.scopes, created_at = excluded.created_at, rotated_at = excluded.rotated_at,
			expires_at = excluded.expires_at`
	sqlOIDCRevokedToken    = `SELECT ` + oidcRevokedCols + ` FROM oidc_revoked_tokens WHERE project_id = $1 AND jti = $2`
	sqlPutOIDCRevokedToken = `INSERT INTO oidc_revoked_tokens (` + oidcRevokedCols + `)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (project_id, jti) DO UPDATE SET client_id = excluded.client_id, revoked_at = excluded.revoked_at,
			expires_at = excluded.expires_at`
)

// OIDCRefreshToken returns projectID's refresh token whose keyed hash is
// hash: one probe of the primary key.
func (tx *txn) OIDCRefreshToken(projectID string, hash []byte) (*store.OIDCRefreshToken, error) {
	if !storable(projectID) {
		return nil, store.ErrNotFound
	}
	if hash == nil {
		hash = []byte{} // the key's column is NOT NULL; nil and empty are alike
	}
	t := &store.OIDCRefreshToken{}
	if err := tx.one(sqlOIDCRefreshToken, []any{projectID, hash}, oidcRefreshDest(t)...); err != nil {
		return nil, err
	}
	return t, nil
}

// PutOIDCRefreshToken creates or replaces the token (t.ProjectID,
// t.Hash).
func (tx *txn) PutOIDCRefreshToken(t *store.OIDCRefreshToken) error {
	hash := t.Hash
	if hash == nil {
		hash = []byte{}
	}
	_, err := tx.exec(sqlPutOIDCRefreshToken, t.ProjectID, hash, t.GrantID, t.ClientID, t.Scopes, timeArg(t.CreatedAt),
		timeArg(t.RotatedAt), timeArg(t.ExpiresAt))
	return err
}

// OIDCRevokedToken returns projectID's revoked access token jti.
func (tx *txn) OIDCRevokedToken(projectID, jti string) (*store.OIDCRevokedToken, error) {
	if !storable(projectID, jti) {
		return nil, store.ErrNotFound
	}
	r := &store.OIDCRevokedToken{}
	if err := tx.one(sqlOIDCRevokedToken, []any{projectID, jti}, oidcRevokedDest(r)...); err != nil {
		return nil, err
	}
	return r, nil
}

// PutOIDCRevokedToken creates or replaces the row (r.ProjectID, r.JTI).
func (tx *txn) PutOIDCRevokedToken(r *store.OIDCRevokedToken) error {
	_, err := tx.exec(sqlPutOIDCRevokedToken, r.ProjectID, r.JTI, r.ClientID, timeArg(r.RevokedAt), timeArg(r.ExpiresAt))
	return err
}
