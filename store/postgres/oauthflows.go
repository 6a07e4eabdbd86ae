package postgres

import (
	"latchkey/store"
)

// Sign-ins with providers in flight (oauth_flows, migration 0013;
// store.OAuthFlow). The payload is bytea, kept byte for byte.

const (
	sqlOAuthFlow    = `SELECT project_id, kind, payload, expires_at FROM oauth_flows WHERE id = $1`
	sqlPutOAuthFlow = `INSERT INTO oauth_flows (id, project_id, kind, payload, expires_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, kind = excluded.kind,
			payload = excluded.payload, expires_at = excluded.expires_at`
	sqlDeleteOAuthFlow = `DELETE FROM oauth_flows WHERE id = $1`
)

// OAuthFlow returns the flow with id, expired or not.
func (tx *txn) OAuthFlow(id string) (*store.OAuthFlow, error) {
	if !storable(id) {
		return nil, store.ErrNotFound
	}
	f := &store.OAuthFlow{ID: id}
	if err := tx.one(sqlOAuthFlow, []any{id}, &f.ProjectID, &f.Kind, &f.Payload, timeDest(&f.ExpiresAt)); err != nil {
		return nil, err
	}
	return f, nil
}

// PutOAuthFlow creates or replaces the flow f.ID.
func (tx *txn) PutOAuthFlow(f *store.OAuthFlow) error {
	_, err := tx.exec(sqlPutOAuthFlow, f.ID, f.ProjectID, f.Kind, f.Payload, timeArg(f.ExpiresAt))
	return err
}

// DeleteOAuthFlow removes the flow with id.
func (tx *txn) DeleteOAuthFlow(id string) error {
	if !storable(id) {
		return nil
	}
	_, err := tx.exec(sqlDeleteOAuthFlow, id)
	return err
}
