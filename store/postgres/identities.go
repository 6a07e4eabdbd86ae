package postgres

import (
	"latchkey/store"
)

// Links of users to their accounts at sign-in providers (identities,
// migration 0010): one row per (project, issuer, subject), listed by
// user through identities_user.

const identityCols = `project_id, issuer, subject, user_id, provider, created_at`

// identityDest returns the scan destinations of identityCols in id.
func identityDest(id *store.Identity) []any {
	return []any{&id.ProjectID, &id.Issuer, &id.Subject, &id.UserID, &id.Provider, timeDest(&id.CreatedAt)}
}

// Identity returns projectID's link of (issuer, subject).
func (tx *txn) Identity(projectID, issuer, subject string) (*store.Identity, error) {
	if projectID == "" || issuer == "" || subject == "" || !storable(projectID, issuer, subject) {
		return nil, store.ErrNotFound
	}
	id := &store.Identity{}
	err := tx.one(`SELECT `+identityCols+` FROM identities WHERE project_id = $1 AND issuer = $2 AND subject = $3`,
		[]any{projectID, issuer, subject}, identityDest(id)...)
	if err != nil {
		return nil, err
	}
	return id, nil
}

// PutIdentity creates or replaces the link (id.ProjectID, id.Issuer,
// id.Subject).
func (tx *txn) PutIdentity(id *store.Identity) error {
	if id.ProjectID == "" || id.Issuer == "" || id.Subject == "" || id.UserID == "" ||
		!storable(id.ProjectID, id.Issuer, id.Subject, id.UserID, id.Provider) {
		return store.ErrBadIdentity
	}
	_, err := tx.exec(`INSERT INTO identities (`+identityCols+`) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (project_id, issuer, subject) DO UPDATE SET user_id = excluded.user_id,
			provider = excluded.provider, created_at = excluded.created_at`,
		id.ProjectID, id.Issuer, id.Subject, id.UserID, id.Provider, timeArg(id.CreatedAt))
	return err
}

// UserIdentities returns userID's links in (project, issuer, subject)
// byte order; never nil.
func (tx *txn) UserIdentities(userID string) ([]*store.Identity, error) {
	if !validText(userID) {
		return []*store.Identity{}, nil
	}
	ids, err := scanAll(tx, `SELECT `+identityCols+` FROM identities WHERE user_id = $1
		ORDER BY project_id, issuer, subject`, []any{userID}, identityDest)
	if ids == nil && err == nil {
		ids = []*store.Identity{}
	}
	return ids, err
}
