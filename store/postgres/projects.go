package postgres

import (
	"encoding/json"

	"latchkey/store"
)

// Projects: one row each in projects; deleting one cascades through its
// users, their sessions and factors, its remembered devices, the rows of
// the other domains (deleteProjectAuthRows, deleteProjectWebhooks), and
// detaches its API keys.

const projectCols = `id, name, company_id, allowed_origins, rp_id, session_ttl_seconds,
	rate_limit_per_minute, deny_cidrs, created_at, email_change, signing_key_id, signing_key, public_key, providers,
	session_rate_limit_per_minute, session_idle_seconds, session_max_seconds, forward_auth, client_registration,
	display_name, logo_url, accent_color`

// projectDest returns the scan destinations of projectCols in p.
func projectDest(p *store.Project) []any {
	return []any{&p.ID, &p.Name, &p.CompanyID, &p.AllowedOrigins, &p.RPID, &p.SessionTTLSeconds,
		&p.RateLimitPerMinute, &p.DenyCIDRs, timeDest(&p.CreatedAt), &p.EmailChange, &p.SigningKeyID, &p.SigningKey, &p.PublicKey, (*providersCol)(&p.Providers),
		&p.SessionRateLimitPerMinute, &p.SessionIdleSeconds, &p.SessionMaxSeconds, &forwardAuthCol{&p.ForwardAuth},
		&p.ClientRegistration, &p.DisplayName, &p.LogoURL, &p.AccentColor}
}

// forwardAuthCol scans Project.ForwardAuth from its JSON (NULL: none).
type forwardAuthCol struct{ dst **store.ForwardAuth }

// ScanBytes implements pgtype.BytesScanner.
func (c *forwardAuthCol) ScanBytes(v []byte) error {
	*c.dst = nil
	if v == nil {
		return nil
	}
	f := &store.ForwardAuth{}
	if err := json.Unmarshal(v, f); err != nil {
		return err
	}
	*c.dst = f
	return nil
}

// forwardAuthArg is the forward_auth column's value of f: NULL for nil.
func forwardAuthArg(f *store.ForwardAuth) ([]byte, error) {
	if f == nil {
		return nil, nil
	}
	return json.Marshal(f)
}

// providersCol is Project.Providers scanned from its JSON (NULL: none).
type providersCol []store.Provider

// ScanBytes implements pgtype.BytesScanner.
func (c *providersCol) ScanBytes(v []byte) error {
	*c = nil
	if v == nil {
		return nil
	}
	return json.Unmarshal(v, (*[]store.Provider)(c))
}

// providersArg is the providers column's value of ps: NULL when empty.
func providersArg(ps []store.Provider) ([]byte, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	return json.Marshal(ps)
}

// Project returns the project with id.
func (tx *txn) Project(id string) (*store.Project, error) {
	if !validText(id) {
		return nil, store.ErrNotFound
	}
	p := &store.Project{}
	if err := tx.one(`SELECT `+projectCols+` FROM projects WHERE id = $1`, []any{id}, projectDest(p)...); err != nil {
		return nil, err
	}
	return p, nil
}

// PutProject creates or replaces the project p.ID.
func (tx *txn) PutProject(p *store.Project) error {
	providers, err := providersArg(p.Providers)
	if err != nil {
		return err
	}
	forwardAuth, err := forwardAuthArg(p.ForwardAuth)
	if err != nil {
		return err
	}
	_, err = tx.exec(`INSERT INTO projects (`+projectCols+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
		ON CONFLICT (id) DO UPDATE SET name = excluded.name, company_id = excluded.company_id,
			allowed_origins = excluded.allowed_origins, rp_id = excluded.rp_id,
			session_ttl_seconds = excluded.session_ttl_seconds, rate_limit_per_minute = excluded.rate_limit_per_minute,
			deny_cidrs = excluded.deny_cidrs, created_at = excluded.created_at, email_change = excluded.email_change,
			signing_key_id = excluded.signing_key_id, signing_key = excluded.signing_key, public_key = excluded.public_key,
			providers = excluded.providers, session_rate_limit_per_minute = excluded.session_rate_limit_per_minute,
			session_idle_seconds = excluded.session_idle_seconds, session_max_seconds = excluded.session_max_seconds,
			forward_auth = excluded.forward_auth, client_registration = excluded.client_registration,
			display_name = excluded.display_name, logo_url = excluded.logo_url, accent_color = excluded.accent_color`,
		p.ID, p.Name, p.CompanyID, p.AllowedOrigins, p.RPID, p.SessionTTLSeconds,
		p.RateLimitPerMinute, p.DenyCIDRs, timeArg(p.CreatedAt), p.EmailChange, p.SigningKeyID, p.SigningKey, p.PublicKey, providers,
		p.SessionRateLimitPerMinute, p.SessionIdleSeconds, p.SessionMaxSeconds, forwardAuth, p.ClientRegistration,
		p.DisplayName, p.LogoURL, p.AccentColor)
	if err != nil {
		return err
	}
	// Replicas (rep-sync): other replicas' caches drop the project
	// (feed.go).
	return tx.changed(store.ChangeProject, p.ID)
}

// Projects returns every project in id byte order.
func (tx *txn) Projects() ([]*store.Project, error) {
	return scanAll(tx, `SELECT `+projectCols+` FROM projects ORDER BY id`, nil, projectDest)
}

// DeleteProject removes project id and everything that belongs to it
// (see store.Tx), and returns the prefixes of the API keys it detached.
//
// Round trips: one to delete the project row and read its users' ids,
// one for the external methods' ids (projectMethodIDs), one for the
// users' factors (deleteUserFactors), what the other domains' helpers take,
// and one for the users, their sessions and provider links, the devices,
// the templates, the OpenID provider's signing keys and clients and the
// API keys.
func (tx *txn) DeleteProject(id string) (detached []string, err error) {
	tx.forgetUsers()
	tx.changedTemplates(id)
	if !validText(id) {
		return nil, store.ErrNotFound
	}
	var found bool
	var userIDs []string
	err = tx.one(`WITH p AS (DELETE FROM projects WHERE id = $1 RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM p), ARRAY(SELECT id FROM users WHERE project_id = $1)`,
		[]any{id}, &found, &userIDs)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, store.ErrNotFound
	}
	// The external methods' ids scope their replay marks: read them
	// before deleteProjectAuthRows deletes the methods.
	methodIDs, err := tx.projectMethodIDs(id)
	if err != nil {
		return nil, err
	}
	if err := tx.deleteUserFactors(userIDs...); err != nil {
		return nil, err
	}
	if err := tx.deleteProjectAuthRows(id, methodIDs); err != nil {
		return nil, err
	}
	if err := tx.deleteProjectWebhooks(id); err != nil {
		return nil, err
	}
	detached = []string{}
	// The sessions' refresh tokens go with them (refresh.go: no foreign
	// key).
	tx.putSession = ""
	err = tx.one(`WITH s AS (DELETE FROM sessions WHERE user_id = ANY($2) RETURNING id),
			st AS (DELETE FROM refresh_tokens WHERE session_id = ANY (ARRAY(SELECT id FROM s))),
			u AS (DELETE FROM users WHERE project_id = $1),
			d AS (DELETE FROM devices WHERE project_id = $1),
			t AS (DELETE FROM mail_templates WHERE project_id = $1),
			i AS (DELETE FROM identities WHERE project_id = $1),
			o AS (DELETE FROM oidc_keys WHERE project_id = $1),
			c AS (DELETE FROM oidc_clients WHERE project_id = $1),
			ar AS (DELETE FROM oidc_auth_requests WHERE project_id = $1),
			g AS (DELETE FROM oidc_grants WHERE project_id = $1),
			rt AS (DELETE FROM oidc_refresh_tokens WHERE project_id = $1),
			rv AS (DELETE FROM oidc_revoked_tokens WHERE project_id = $1),
			oc AS (DELETE FROM oidc_consents WHERE project_id = $1),
			da AS (DELETE FROM oidc_device_auths WHERE project_id = $1),
			k AS (UPDATE api_keys SET project_id = '' WHERE project_id = $1 RETURNING prefix)
		SELECT ARRAY(SELECT prefix FROM k)`, []any{id, userIDs}, &detached)
	if len(detached) == 0 {
		detached = nil
	}
	if err != nil {
		return nil, err
	}
	// Replicas (rep-sync): other replicas' caches drop the project, its
	// sessions and its detached keys (feed.go). Last, so the feed's row
	// commits soon after it is written.
	cs := []store.Change{{Kind: store.ChangeProject, ID: id}}
	for _, prefix := range detached {
		cs = append(cs, store.Change{Kind: store.ChangeAPIKey, ID: prefix})
	}
	return detached, tx.changes(cs...)
}
