package postgres

import (
	"latchkey/store"
)

// API keys: one row each in api_keys, keyed by prefix; project_id is ''
// for a key whose project was deleted.

const apiKeyCols = `prefix, hash, project_id, mode, expires_at, revoked, created_at`

// apiKeyDest returns the scan destinations of apiKeyCols in k.
func apiKeyDest(k *store.APIKey) []any {
	return []any{&k.Prefix, &k.Hash, &k.ProjectID, &k.Mode, timePtrDest(&k.ExpiresAt), &k.Revoked, timeDest(&k.CreatedAt)}
}

// APIKey returns the key whose Prefix is prefix.
func (tx *txn) APIKey(prefix string) (*store.APIKey, error) {
	if !validText(prefix) {
		return nil, store.ErrNotFound
	}
	k := &store.APIKey{}
	if err := tx.one(`SELECT `+apiKeyCols+` FROM api_keys WHERE prefix = $1`, []any{prefix}, apiKeyDest(k)...); err != nil {
		return nil, err
	}
	return k, nil
}

// PutAPIKey creates or replaces the key k.Prefix.
func (tx *txn) PutAPIKey(k *store.APIKey) error {
	_, err := tx.exec(`INSERT INTO api_keys (`+apiKeyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (prefix) DO UPDATE SET hash = excluded.hash, project_id = excluded.project_id,
			mode = excluded.mode, expires_at = excluded.expires_at, revoked = excluded.revoked,
			created_at = excluded.created_at`,
		k.Prefix, k.Hash, k.ProjectID, k.Mode, timePtrArg(k.ExpiresAt), k.Revoked, timeArg(k.CreatedAt))
	if err != nil {
		return err
	}
	// Replicas (rep-sync): other replicas' caches drop the key (feed.go).
	return tx.changed(store.ChangeAPIKey, k.Prefix)
}

// APIKeys returns, in Prefix byte order, every key when projectID is
// empty, else projectID's keys.
func (tx *txn) APIKeys(projectID string) ([]*store.APIKey, error) {
	if projectID == "" {
		return scanAll(tx, `SELECT `+apiKeyCols+` FROM api_keys ORDER BY prefix`, nil, apiKeyDest)
	}
	if !validText(projectID) {
		return nil, nil
	}
	return scanAll(tx, `SELECT `+apiKeyCols+` FROM api_keys WHERE project_id = $1 ORDER BY prefix`, []any{projectID}, apiKeyDest)
}
