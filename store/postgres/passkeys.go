package postgres

import (
	"encoding/json"

	"latchkey/store"
)

// WebAuthn credentials (passkeys) and pending ceremonies (challenges).
// json.RawMessage fields are stored as bytea, byte for byte.

const (
	sqlPasskey = `SELECT user_id, credential, created_at, last_used_at
		FROM passkeys WHERE project_id = $1 AND id = $2`
	sqlPutPasskey = `INSERT INTO passkeys (project_id, id, user_id, credential, created_at, last_used_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (project_id, id) DO UPDATE SET user_id = excluded.user_id,
			credential = excluded.credential, created_at = excluded.created_at,
			last_used_at = excluded.last_used_at`
	sqlDeletePasskey = `DELETE FROM passkeys WHERE project_id = $1 AND id = $2`
	// sqlUserPasskeys lists through passkeys_user, in its order.
	sqlUserPasskeys = `SELECT id, credential, created_at, last_used_at
		FROM passkeys WHERE user_id = $1 AND project_id = $2
		ORDER BY created_at NULLS FIRST, id`
	sqlChallenge = `SELECT project_id, kind, user_id, email, session, expires_at
		FROM challenges WHERE id = $1`
	sqlPutChallenge = `INSERT INTO challenges (id, project_id, kind, user_id, email, session, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, kind = excluded.kind,
			user_id = excluded.user_id, email = excluded.email, session = excluded.session,
			expires_at = excluded.expires_at`
	sqlDeleteChallenge = `DELETE FROM challenges WHERE id = $1`
)

// Passkey returns projectID's credential whose ID is id.
func (tx *txn) Passkey(projectID, id string) (*store.Passkey, error) {
	if !storable(projectID, id) {
		return nil, store.ErrNotFound
	}
	pk := &store.Passkey{ID: id, ProjectID: projectID}
	var cred []byte
	err := tx.one(sqlPasskey, []any{projectID, id}, &pk.UserID, &cred, timeDest(&pk.CreatedAt), timePtrDest(&pk.LastUsedAt))
	if err != nil {
		return nil, err
	}
	pk.Credential = json.RawMessage(cred)
	return pk, nil
}

// PutPasskey creates or replaces the credential (pk.ProjectID, pk.ID),
// listed under pk.UserID (a credential moved to another user leaves the
// old user's list).
func (tx *txn) PutPasskey(pk *store.Passkey) error {
	_, err := tx.exec(sqlPutPasskey, pk.ProjectID, pk.ID, pk.UserID, []byte(pk.Credential),
		timeArg(pk.CreatedAt), timePtrArg(pk.LastUsedAt))
	return err
}

// DeletePasskey removes the credential (pk.ProjectID, pk.ID), whichever
// user it is listed under.
func (tx *txn) DeletePasskey(pk *store.Passkey) error {
	if !storable(pk.ProjectID, pk.ID) {
		return nil
	}
	_, err := tx.exec(sqlDeletePasskey, pk.ProjectID, pk.ID)
	return err
}

// UserPasskeys returns userID's credentials in projectID, oldest
// CreatedAt first (equal times in ID byte order); never nil.
func (tx *txn) UserPasskeys(projectID, userID string) ([]*store.Passkey, error) {
	if !storable(projectID, userID) {
		return []*store.Passkey{}, nil
	}
	rows, err := tx.query(sqlUserPasskeys, userID, projectID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*store.Passkey{}
	for rows.Next() {
		pk := &store.Passkey{UserID: userID, ProjectID: projectID}
		var cred []byte
		if err := rows.Scan(&pk.ID, &cred, timeDest(&pk.CreatedAt), timePtrDest(&pk.LastUsedAt)); err != nil {
			return nil, tx.note(err)
		}
		pk.Credential = json.RawMessage(cred)
		out = append(out, pk)
	}
	if err := rows.Err(); err != nil {
		return nil, tx.note(unavailable(err))
	}
	return out, nil
}

// Challenge returns the ceremony with id, expired or not.
func (tx *txn) Challenge(id string) (*store.Challenge, error) {
	if !storable(id) {
		return nil, store.ErrNotFound
	}
	c := &store.Challenge{ID: id}
	var session []byte
	err := tx.one(sqlChallenge, []any{id}, &c.ProjectID, &c.Kind, &c.UserID, &c.Email, &session, timeDest(&c.ExpiresAt))
	if err != nil {
		return nil, err
	}
	c.Session = json.RawMessage(session)
	return c, nil
}

// PutChallenge creates or replaces the ceremony c.ID.
func (tx *txn) PutChallenge(c *store.Challenge) error {
	_, err := tx.exec(sqlPutChallenge, c.ID, c.ProjectID, c.Kind, c.UserID, c.Email, []byte(c.Session), timeArg(c.ExpiresAt))
	return err
}

// DeleteChallenge removes the ceremony with id.
func (tx *txn) DeleteChallenge(id string) error {
	if !storable(id) {
		return nil
	}
	_, err := tx.exec(sqlDeleteChallenge, id)
	return err
}
