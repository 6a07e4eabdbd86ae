package postgres

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"latchkey/store"
)

// The projects' OpenID providers (migration 0013): signing keys in
// oidc_keys, one row per (project, kid), at most one active key per
// (project, alg) (the partial unique index oidc_keys_active); clients in
// oidc_clients.

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

// Clients in oidc_clients, one row per (project, id); Claims as JSON
// text (NULL when empty).

const oidcClientCols = `project_id, id, name, type, secret_hash, redirect_uris, post_logout_redirect_uris,
	backchannel_logout_uri, grant_types, scopes, first_party, require_mfa, id_token_alg, access_token_lifetime,
	refresh_token_lifetime, refresh_token_idle, claims, created_at, updated_at, registered`

// oidcClientDest returns the scan destinations of oidcClientCols in c.
func oidcClientDest(c *store.OIDCClient) []any {
	return []any{&c.ProjectID, &c.ID, &c.Name, &c.Type, &c.SecretHash, &c.RedirectURIs, &c.PostLogoutRedirectURIs,
		&c.BackchannelLogoutURI, &c.GrantTypes, &c.Scopes, &c.FirstParty, &c.RequireMFA, &c.IDTokenAlg,
		&c.AccessTokenLifetimeSeconds, &c.RefreshTokenLifetimeSeconds, &c.RefreshTokenIdleSeconds,
		(*claimsCol)(&c.Claims), timeDest(&c.CreatedAt), timeDest(&c.UpdatedAt), &c.Registered}
}

// claimsCol is OIDCClient.Claims scanned from its JSON (NULL: none).
type claimsCol map[string]string

// ScanText implements pgtype.TextScanner.
func (c *claimsCol) ScanText(v pgtype.Text) error {
	*c = nil
	if !v.Valid {
		return nil
	}
	return json.Unmarshal([]byte(v.String), (*map[string]string)(c))
}

// claimsArg is the claims column's value of m: NULL when empty.
func claimsArg(m map[string]string) (pgtype.Text, error) {
	if len(m) == 0 {
		return pgtype.Text{}, nil
	}
	b, err := json.Marshal(m)
	return pgtype.Text{String: string(b), Valid: true}, err
}

// OIDCClient returns projectID's client id.
func (tx *txn) OIDCClient(projectID, id string) (*store.OIDCClient, error) {
	if !validText(projectID) || !validText(id) {
		return nil, store.ErrNotFound
	}
	c := &store.OIDCClient{}
	err := tx.one(`SELECT `+oidcClientCols+` FROM oidc_clients WHERE project_id = $1 AND id = $2`,
		[]any{projectID, id}, oidcClientDest(c)...)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// OIDCClients returns projectID's clients in ID byte order; never nil.
func (tx *txn) OIDCClients(projectID string) ([]*store.OIDCClient, error) {
	if !validText(projectID) {
		return []*store.OIDCClient{}, nil
	}
	out, err := scanAll(tx, `SELECT `+oidcClientCols+` FROM oidc_clients WHERE project_id = $1 ORDER BY id`,
		[]any{projectID}, oidcClientDest)
	if out == nil {
		out = []*store.OIDCClient{}
	}
	return out, err
}

// PutOIDCClient creates or replaces the client (c.ProjectID, c.ID).
func (tx *txn) PutOIDCClient(c *store.OIDCClient) error {
	claims, err := claimsArg(c.Claims)
	if err != nil {
		return err
	}
	_, err = tx.exec(`INSERT INTO oidc_clients (`+oidcClientCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
		ON CONFLICT (project_id, id) DO UPDATE SET name = excluded.name, type = excluded.type,
			secret_hash = excluded.secret_hash, redirect_uris = excluded.redirect_uris,
			post_logout_redirect_uris = excluded.post_logout_redirect_uris,
			backchannel_logout_uri = excluded.backchannel_logout_uri, grant_types = excluded.grant_types,
			scopes = excluded.scopes, first_party = excluded.first_party, require_mfa = excluded.require_mfa,
			id_token_alg = excluded.id_token_alg, access_token_lifetime = excluded.access_token_lifetime,
			refresh_token_lifetime = excluded.refresh_token_lifetime, refresh_token_idle = excluded.refresh_token_idle,
			claims = excluded.claims, created_at = excluded.created_at, updated_at = excluded.updated_at,
			registered = excluded.registered`,
		c.ProjectID, c.ID, c.Name, c.Type, c.SecretHash, c.RedirectURIs, c.PostLogoutRedirectURIs,
		c.BackchannelLogoutURI, c.GrantTypes, c.Scopes, c.FirstParty, c.RequireMFA, c.IDTokenAlg,
		c.AccessTokenLifetimeSeconds, c.RefreshTokenLifetimeSeconds, c.RefreshTokenIdleSeconds,
		claims, timeArg(c.CreatedAt), timeArg(c.UpdatedAt), c.Registered)
	return err
}

// DeleteOIDCClient removes projectID's client id and the consents to
// it.
func (tx *txn) DeleteOIDCClient(projectID, id string) error {
	if !validText(projectID) || !validText(id) {
		return nil
	}
	_, err := tx.exec(`WITH c AS (DELETE FROM oidc_consents WHERE project_id = $1 AND client_id = $2)
		DELETE FROM oidc_clients WHERE project_id = $1 AND id = $2`, projectID, id)
	return err
}
