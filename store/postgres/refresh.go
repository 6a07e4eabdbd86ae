package postgres

import (
	"bytes"

	"latchkey/store"
)

// Refresh tokens in refresh_tokens, keyed by (session_id, hash). No
// foreign key ties them to their session (migration 0027): its check
// read sessions on every sign-in, and under SERIALIZABLE those reads
// made concurrent sign-ins fail to serialize. So the store does what the
// key did: every way a session goes (DeleteSession, DeleteUserSessions,
// a user's or a project's deletion, the sweep: goWith) deletes its
// tokens in the same statement, and PutRefreshToken stores a token only
// for a stored session.

const (
	sqlRefreshToken = `SELECT project_id, created_at, used_at, expires_at
		FROM refresh_tokens WHERE session_id = $1 AND hash = $2`
	// sqlPutRefreshToken stores a token of a session this transaction
	// stored (PutSession): the session is there without a read of
	// sessions.
	sqlPutRefreshToken = `INSERT INTO refresh_tokens (session_id, hash, project_id, created_at, used_at, expires_at, due)
		VALUES ($1, $2, $3, $4, $5, $6, $7)` + sqlRefreshUpsert
	// sqlPutRefreshTokenChecked stores it when its session exists: a
	// token of a session that is not stored is not stored either
	// (INSERT ... SELECT finds no row).
	sqlPutRefreshTokenChecked = `INSERT INTO refresh_tokens (session_id, hash, project_id, created_at, used_at, expires_at, due)
		SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1)` + sqlRefreshUpsert
	sqlRefreshUpsert = `
		ON CONFLICT (session_id, hash) DO UPDATE SET project_id = excluded.project_id,
			created_at = excluded.created_at, used_at = excluded.used_at,
			expires_at = excluded.expires_at, due = excluded.due`
)

// RefreshToken returns session sessionID's token whose Hash is hash:
// one probe of the primary key.
func (tx *txn) RefreshToken(sessionID string, hash []byte) (*store.RefreshToken, error) {
	if !validText(sessionID) {
		return nil, store.ErrNotFound
	}
	r := &store.RefreshToken{SessionID: sessionID, Hash: bytes.Clone(hash)}
	err := tx.one(sqlRefreshToken, []any{sessionID, hash},
		&r.ProjectID, timeDest(&r.CreatedAt), timePtrDest(&r.UsedAt), timeDest(&r.ExpiresAt))
	if err != nil {
		return nil, err
	}
	return r, nil
}

// PutRefreshToken creates or replaces the token (t.SessionID, t.Hash)
// when its session is stored, with the transaction's next statement or
// its commit (no round trip of its own). A session this transaction
// stored (a sign-in's, a refresh's) is not read again: the read would
// take a predicate lock on sessions' index, where concurrent sign-ins
// insert, and fail them to serialize.
func (tx *txn) PutRefreshToken(t *store.RefreshToken) error {
	if !validText(t.SessionID) {
		return nil // no session has that id
	}
	hash := t.Hash
	if hash == nil {
		hash = []byte{} // the key's column is NOT NULL; nil and empty are alike
	}
	sql := sqlPutRefreshTokenChecked
	if t.SessionID == tx.putSession {
		sql = sqlPutRefreshToken
	}
	tx.later(sql, t.SessionID, hash, t.ProjectID, timeArg(t.CreatedAt), timePtrArg(t.UsedAt),
		timeArg(t.ExpiresAt), dueNanos(t.ExpiresAt))
	return nil
}
