package bolt

import (
	"bytes"
	"fmt"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// Refresh tokens (store.RefreshTokens) in bucketRefresh, keyed by
// (session id, hash) (compound): a session's tokens are the keys under
// its id, so the session's deletion (the sessions' expiry remove hook,
// whichever way the session goes) finds them with one seek.

// refreshKey is the key of session sessionID's token hash.
func refreshKey(sessionID string, hash []byte) []byte { return compound(sessionID, string(hash)) }

// RefreshToken returns session sessionID's token whose hash is hash.
func (tx txn) RefreshToken(sessionID string, hash []byte) (*store.RefreshToken, error) {
	k := refreshKey(sessionID, hash)
	v := tx.bucket(bucketRefresh).Get(k)
	if v == nil {
		return nil, store.ErrNotFound
	}
	return decodeRefresh(k, v)
}

// PutRefreshToken stores t, due for the sweep at its ExpiresAt, when its
// session is stored; nothing otherwise.
func (tx txn) PutRefreshToken(t *store.RefreshToken) error {
	if !tx.tx.Writable() {
		return bbolt.ErrTxNotWritable
	}
	if tx.bucket(bucketSessions).Get([]byte(t.SessionID)) == nil {
		return nil
	}
	return tx.putExpiring(&expiries[store.ExpiringRefreshTokens], refreshKey(t.SessionID, t.Hash), encodeRefresh(t), t.ExpiresAt)
}

// deleteSessionRefresh deletes session id's tokens with their expiry
// index entries: one seek, then the session's keys. (It cannot go
// through expiries, whose sessions' entry calls it.)
func (tx txn) deleteSessionRefresh(id string) error {
	prefix := compound(id, "")
	rows, index := tx.bucket(bucketRefresh), tx.bucket(bucketRefreshExpiry)
	type row struct{ key, index []byte }
	var found []row
	c := rows.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		r, err := decodeRefresh(k, v)
		if err != nil {
			return err
		}
		found = append(found, row{clone(k), dueKey(r.ExpiresAt, k)})
	}
	for _, r := range found {
		if err := index.Delete(r.index); err != nil {
			return err
		}
		if err := rows.Delete(r.key); err != nil {
			return err
		}
	}
	return nil
}

// checkRefresh verifies that every refresh token's session is stored:
// tokens go with their session (for tests, through Check).
func (tx txn) checkRefresh() error {
	sessions := tx.bucket(bucketSessions)
	return tx.bucket(bucketRefresh).ForEach(func(k, _ []byte) error {
		id, _, ok := bytes.Cut(k, []byte{0})
		if !ok {
			return fmt.Errorf("refresh token %q: key without a session id", k)
		}
		if sessions.Get(id) == nil {
			return fmt.Errorf("refresh token %q: its session %s is gone", k, id)
		}
		return nil
	})
}
