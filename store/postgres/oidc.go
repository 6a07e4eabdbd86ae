package postgres

import (
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"latchkey/store"
)

// The projects' OpenID providers (migration 0013): signing keys in
// oidc_keys, one row per (project, kid), at most one active key per
// (project, alg) (the partial unique index oidc_keys_active).

const oidcKeyCols = `project_id, id, alg, private_key, public_jwk, created_at, retired_at`

// oidcKeyDest returns the scan destinations of oidcKeyCols in k.
func oidcKeyDest(k *store.OIDCKey) []any {
	return []any{&k.ProjectID, &k.ID, &k.Alg, &k.PrivateKey, &k.PublicJWK, timeDest(&k.CreatedAt), timeDest(&k.RetiredAt)}
}

// OIDCKeys returns projectID's keys, oldest CreatedAt first (equal
// times in ID byte order; the zero time, NULL, first); never nil.
func (tx *txn) OIDCKeys(projectID string) ([]*store.OIDCKey, error) {
	if !validText(projectID) {
		return []*store.OIDCKey{}, nil
	}
	out, err := scanAll(tx, `SELECT `+oidcKeyCols+` FROM oidc_keys WHERE project_id = $1
		ORDER BY created_at NULLS FIRST, id`, []any{projectID}, oidcKeyDest)
	if out == nil {
		out = []*store.OIDCKey{}
	}
	return out, err
}

// AddOIDCKey creates the key (k.ProjectID, k.ID), or answers
// ErrConflict: the project has that kid, or k is active and the project
// has an active key of k.Alg. One statement: the check and the insert
// read the same snapshot, so a conflict this transaction can see never
// reaches the unique indexes, which would abort the transaction. A
// unique violation then comes from a concurrent transaction that added
// the kid or an active key of the algorithm after this one's snapshot:
// retried as a serialization failure, the rerun answers ErrConflict.
func (tx *txn) AddOIDCKey(k *store.OIDCKey) error {
	var taken bool
	err := tx.one(`WITH taken AS (
			SELECT 1 FROM oidc_keys
			WHERE project_id = $1 AND (id = $2 OR ($7::bigint IS NULL AND retired_at IS NULL AND alg = $3))
			LIMIT 1
		), put AS (
			INSERT INTO oidc_keys (`+oidcKeyCols+`)
			SELECT $1, $2, $3, $4::bytea, $5::bytea, $6::bigint, $7::bigint
			WHERE NOT EXISTS (SELECT 1 FROM taken)
		)
		SELECT EXISTS (SELECT 1 FROM taken)`,
		[]any{k.ProjectID, k.ID, k.Alg, k.PrivateKey, k.PublicJWK, timeArg(k.CreatedAt), timeArg(k.RetiredAt)}, &taken)
	if uniqueViolation(err) && tx.err == nil {
		tx.err = &pgconn.PgError{Code: "40001", Message: "a concurrent transaction added the project's signing key: " + err.Error()}
	}
	if err != nil {
		return err
	}
	if taken {
		return store.ErrConflict
	}
	return nil
}

// RetireOIDCKey sets the RetiredAt of an active key to at.
func (tx *txn) RetireOIDCKey(projectID, id string, at time.Time) error {
	if !validText(projectID) || !validText(id) {
		return store.ErrNotFound
	}
	var found bool
	err := tx.one(`WITH u AS (UPDATE oidc_keys SET retired_at = $3 WHERE project_id = $1 AND id = $2 AND retired_at IS NULL)
		SELECT EXISTS (SELECT 1 FROM oidc_keys WHERE project_id = $1 AND id = $2)`, []any{projectID, id, timeArg(at)}, &found)
	if err != nil {
		return err
	}
	if !found {
		return store.ErrNotFound
	}
	return nil
}
