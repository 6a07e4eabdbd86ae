package postgres

import (
	"bytes"

	"latchkey/store"
)

// Magic links in magic_links, by the keyed hash of their token.

const (
	sqlMagicLink = `SELECT project_id, email, redirect_url, created_at, expires_at, used_at
		FROM magic_links WHERE hash = $1`
	sqlPutMagicLink = `INSERT INTO magic_links (hash, project_id, email, redirect_url, created_at, expires_at, used_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (hash) DO UPDATE SET project_id = excluded.project_id, email = excluded.email,
			redirect_url = excluded.redirect_url, created_at = excluded.created_at,
			expires_at = excluded.expires_at, used_at = excluded.used_at`
	sqlDeleteMagicLinks = `DELETE FROM magic_links WHERE project_id = $1 AND email = $2`
)

// MagicLink returns the link whose Hash is hash, used or expired or not.
func (tx *txn) MagicLink(hash []byte) (*store.MagicLink, error) {
	m := &store.MagicLink{Hash: bytes.Clone(hash)}
	err := tx.one(sqlMagicLink, []any{hash},
		&m.ProjectID, &m.Email, &m.RedirectURL, timeDest(&m.CreatedAt), timeDest(&m.ExpiresAt), timePtrDest(&m.UsedAt))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// PutMagicLink creates or replaces the link m.Hash.
func (tx *txn) PutMagicLink(m *store.MagicLink) error {
	_, err := tx.exec(sqlPutMagicLink, m.Hash, m.ProjectID, m.Email, m.RedirectURL,
		timeArg(m.CreatedAt), timeArg(m.ExpiresAt), timePtrArg(m.UsedAt))
	return err
}

// DeleteMagicLinks removes projectID's links for email and returns how
// many it removed.
func (tx *txn) DeleteMagicLinks(projectID, email string) (int, error) {
	if !storable(projectID, email) {
		return 0, nil
	}
	tag, err := tx.exec(sqlDeleteMagicLinks, projectID, email)
	return int(tag.RowsAffected()), err
}
