package postgres

import (
	"latchkey/store"
)

// The users' consents to the OpenID providers' third-party clients
// (migration 0021; store.OIDCConsents): oidc_consents, one row per
// (project, user, client).

const oidcConsentCols = `project_id, user_id, client_id, scopes, granted_at, updated_at`

// oidcConsentDest returns the scan destinations of oidcConsentCols in c.
func oidcConsentDest(c *store.OIDCConsent) []any {
	return []any{&c.ProjectID, &c.UserID, &c.ClientID, &c.Scopes, timeDest(&c.GrantedAt), timeDest(&c.UpdatedAt)}
}

// OIDCConsent returns userID's consent to projectID's client clientID.
func (tx *txn) OIDCConsent(projectID, userID, clientID string) (*store.OIDCConsent, error) {
	if !storable(projectID, userID, clientID) {
		return nil, store.ErrNotFound
	}
	c := &store.OIDCConsent{}
	err := tx.one(`SELECT `+oidcConsentCols+` FROM oidc_consents WHERE project_id = $1 AND user_id = $2 AND client_id = $3`,
		[]any{projectID, userID, clientID}, oidcConsentDest(c)...)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// OIDCUserConsents returns userID's consents in projectID, in ClientID
// byte order; never nil.
func (tx *txn) OIDCUserConsents(projectID, userID string) ([]*store.OIDCConsent, error) {
	if !storable(projectID, userID) {
		return []*store.OIDCConsent{}, nil
	}
	out, err := scanAll(tx, `SELECT `+oidcConsentCols+` FROM oidc_consents WHERE project_id = $1 AND user_id = $2
		ORDER BY client_id`, []any{projectID, userID}, oidcConsentDest)
	if out == nil {
		out = []*store.OIDCConsent{}
	}
	return out, err
}

// PutOIDCConsent creates or replaces the consent (c.ProjectID, c.UserID,
// c.ClientID).
func (tx *txn) PutOIDCConsent(c *store.OIDCConsent) error {
	_, err := tx.exec(`INSERT INTO oidc_consents (`+oidcConsentCols+`) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (project_id, user_id, client_id) DO UPDATE SET scopes = excluded.scopes,
			granted_at = excluded.granted_at, updated_at = excluded.updated_at`,
		c.ProjectID, c.UserID, c.ClientID, c.Scopes, timeArg(c.GrantedAt), timeArg(c.UpdatedAt))
	return err
}

// DeleteOIDCConsent removes userID's consent to projectID's client
// clientID.
func (tx *txn) DeleteOIDCConsent(projectID, userID, clientID string) error {
	if !storable(projectID, userID, clientID) {
		return nil
	}
	_, err := tx.exec(`DELETE FROM oidc_consents WHERE project_id = $1 AND user_id = $2 AND client_id = $3`,
		projectID, userID, clientID)
	return err
}
