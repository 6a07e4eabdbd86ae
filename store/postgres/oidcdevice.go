package postgres

import (
	"github.com/jackc/pgx/v5/pgconn"

	"latchkey/store"
)

// The OpenID providers' device authorizations (migration 0021;
// store.OIDCDevices): oidc_device_auths, one row per (project, keyed
// hash of the device code), unique by (project, user code), swept at
// their expiry (due, a generated column).

const oidcDeviceCols = `project_id, hash, user_code, client_id, scopes, state, user_id, session_id, auth_time, amr, acr,
	grant_id, created_at, last_poll_at, expires_at`

// oidcDeviceDest returns the scan destinations of oidcDeviceCols in d.
func oidcDeviceDest(d *store.OIDCDeviceAuth) []any {
	return []any{&d.ProjectID, &d.Hash, &d.UserCode, &d.ClientID, &d.Scopes, &d.State, &d.UserID, &d.SessionID,
		timeDest(&d.AuthTime), &d.AMR, &d.ACR, &d.GrantID, timeDest(&d.CreatedAt), timeDest(&d.LastPollAt),
		timeDest(&d.ExpiresAt)}
}

const (
	sqlOIDCDeviceAuth           = `SELECT ` + oidcDeviceCols + ` FROM oidc_device_auths WHERE project_id = $1 AND hash = $2`
	sqlOIDCDeviceAuthByUserCode = `SELECT ` + oidcDeviceCols + ` FROM oidc_device_auths WHERE project_id = $1 AND user_code = $2`
	// One statement: the user code's check and the write read the same
	// snapshot, so a conflict this transaction can see never reaches
	// the unique index (which would abort the transaction).
	sqlPutOIDCDeviceAuth = `WITH taken AS (
			SELECT 1 FROM oidc_device_auths WHERE project_id = $1 AND user_code = $3 AND hash <> $2 LIMIT 1
		), put AS (
			INSERT INTO oidc_device_auths (` + oidcDeviceCols + `)
			SELECT $1, $2::bytea, $3, $4, $5::text[], $6, $7, $8, $9::bigint, $10::text[], $11, $12, $13::bigint, $14::bigint, $15::bigint
			WHERE NOT EXISTS (SELECT 1 FROM taken)
			ON CONFLICT (project_id, hash) DO UPDATE SET user_code = excluded.user_code, client_id = excluded.client_id,
				scopes = excluded.scopes, state = excluded.state, user_id = excluded.user_id,
				session_id = excluded.session_id, auth_time = excluded.auth_time, amr = excluded.amr, acr = excluded.acr,
				grant_id = excluded.grant_id, created_at = excluded.created_at, last_poll_at = excluded.last_poll_at,
				expires_at = excluded.expires_at
		)
		SELECT EXISTS (SELECT 1 FROM taken)`
)

// OIDCDeviceAuth returns projectID's device authorization whose device
// code's keyed hash is hash: one probe of the primary key.
func (tx *txn) OIDCDeviceAuth(projectID string, hash []byte) (*store.OIDCDeviceAuth, error) {
	if !storable(projectID) {
		return nil, store.ErrNotFound
	}
	if hash == nil {
		hash = []byte{} // the key's column is NOT NULL; nil and empty are alike
	}
	d := &store.OIDCDeviceAuth{}
	if err := tx.one(sqlOIDCDeviceAuth, []any{projectID, hash}, oidcDeviceDest(d)...); err != nil {
		return nil, err
	}
	return d, nil
}

// OIDCDeviceAuthByUserCode returns projectID's device authorization
// whose user code is userCode: one probe of the unique index.
func (tx *txn) OIDCDeviceAuthByUserCode(projectID, userCode string) (*store.OIDCDeviceAuth, error) {
	if !storable(projectID, userCode) {
		return nil, store.ErrNotFound
	}
	d := &store.OIDCDeviceAuth{}
	if err := tx.one(sqlOIDCDeviceAuthByUserCode, []any{projectID, userCode}, oidcDeviceDest(d)...); err != nil {
		return nil, err
	}
	return d, nil
}

// PutOIDCDeviceAuth creates or replaces the row (d.ProjectID, d.Hash),
// or answers ErrConflict when another row of the project has d.UserCode.
// A unique violation comes from a concurrent transaction that took the
// user code after this one's snapshot: retried as a serialization
// failure, the rerun answers ErrConflict.
func (tx *txn) PutOIDCDeviceAuth(d *store.OIDCDeviceAuth) error {
	hash := d.Hash
	if hash == nil {
		hash = []byte{}
	}
	var taken bool
	err := tx.one(sqlPutOIDCDeviceAuth, []any{d.ProjectID, hash, d.UserCode, d.ClientID, d.Scopes, d.State, d.UserID,
		d.SessionID, timeArg(d.AuthTime), d.AMR, d.ACR, d.GrantID, timeArg(d.CreatedAt), timeArg(d.LastPollAt),
		timeArg(d.ExpiresAt)}, &taken)
	if uniqueViolation(err) && tx.err == nil {
		tx.err = &pgconn.PgError{Code: "40001", Message: "a concurrent transaction took the device user code: " + err.Error()}
	}
	if err != nil {
		return err
	}
	if taken {
		return store.ErrConflict
	}
	return nil
}
