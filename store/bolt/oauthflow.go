package bolt

import (
	"encoding/json"

	"latchkey/store"
)

// Sign-ins with providers in flight (store.OAuthFlow): JSON rows of
// bucketOAuthFlows keyed by the flow's id, with their expiry index
// (expiries[store.ExpiringOAuthFlows]). The payload is []byte, which
// JSON keeps byte for byte (base64).

// OAuthFlow returns the flow with id, expired or not.
func (tx txn) OAuthFlow(id string) (*store.OAuthFlow, error) {
	var f store.OAuthFlow
	if err := tx.get(bucketOAuthFlows, []byte(id), &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// PutOAuthFlow stores f; the sweep deletes it at its ExpiresAt.
func (tx txn) PutOAuthFlow(f *store.OAuthFlow) error {
	v, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringOAuthFlows], []byte(f.ID), v, f.ExpiresAt)
}

// DeleteOAuthFlow removes the flow with id.
func (tx txn) DeleteOAuthFlow(id string) error {
	return tx.deleteExpiring(&expiries[store.ExpiringOAuthFlows], []byte(id))
}
