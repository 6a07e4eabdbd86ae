package postgres

import (
	"latchkey/store"
)

// The OpenID providers' authorization code flow (migration 0017;
// store.OIDCFlows): authorization requests in oidc_auth_requests and
// grants in oidc_grants, one row per (project, id), swept at their
// expiry (due, a generated column).

const oidcAuthRequestCols = `project_id, id, client_id, redirect_uri, scopes, state, nonce, response_type, response_mode,
	code_challenge, code_challenge_method, prompt, max_age, login_hint, ui_locales, hint_user_id, created_at,
	user_id, session_id, auth_time, amr, acr, done, code_hash, code_expires_at, grant_id, expires_at`

// oidcAuthRequestDest returns the scan destinations of
// oidcAuthRequestCols in r.
func oidcAuthRequestDest(r *store.OIDCAuthRequest) []any {
	return []any{&r.ProjectID, &r.ID, &r.ClientID, &r.RedirectURI, &r.Scopes, &r.State, &r.Nonce, &r.ResponseType,
		&r.ResponseMode, &r.CodeChallenge, &r.CodeChallengeMethod, &r.Prompt, &r.MaxAge, &r.LoginHint, &r.UILocales,
		&r.HintUserID, timeDest(&r.CreatedAt), &r.UserID, &r.SessionID, timeDest(&r.AuthTime), &r.AMR, &r.ACR, &r.Done,
		&r.CodeHash, timeDest(&r.CodeExpiresAt), &r.GrantID, timeDest(&r.ExpiresAt)}
}

const oidcGrantCols = `project_id, id, client_id, user_id, session_id, scopes, amr, acr, auth_time, created_at,
	expires_at, revoked_at, revoked_for`

// oidcGrantDest returns the scan destinations of oidcGrantCols in g.
func oidcGrantDest(g *store.OIDCGrant) []any {
	return []any{&g.ProjectID, &g.ID, &g.ClientID, &g.UserID, &g.SessionID, &g.Scopes, &g.AMR, &g.ACR,
		timeDest(&g.AuthTime), timeDest(&g.CreatedAt), timeDest(&g.ExpiresAt), timeDest(&g.RevokedAt), &g.RevokedFor}
}

const (
	sqlOIDCAuthRequest    = `SELECT ` + oidcAuthRequestCols + ` FROM oidc_auth_requests WHERE project_id = $1 AND id = $2`
	sqlPutOIDCAuthRequest = `INSERT INTO oidc_auth_requests (` + oidcAuthRequestCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
			$23, $24, $25, $26, $27)
		ON CONFLICT (project_id, id) DO UPDATE SET client_id = excluded.client_id, redirect_uri = excluded.redirect_uri,
			scopes = excluded.scopes, state = excluded.state, nonce = excluded.nonce,
			response_type = excluded.response_type, response_mode = excluded.response_mode,
			code_challenge = excluded.code_challenge, code_challenge_method = excluded.code_challenge_method,
			prompt = excluded.prompt, max_age = excluded.max_age, login_hint = excluded.login_hint,
			ui_locales = excluded.ui_locales, hint_user_id = excluded.hint_user_id, created_at = excluded.created_at,
			user_id = excluded.user_id, session_id = excluded.session_id, auth_time = excluded.auth_time,
			amr = excluded.amr, acr = excluded.acr, done = excluded.done, code_hash = excluded.code_hash,
			code_expires_at = excluded.code_expires_at, grant_id = excluded.grant_id, expires_at = excluded.expires_at`
	sqlDeleteOIDCAuthRequest = `DELETE FROM oidc_auth_requests WHERE project_id = $1 AND id = $2`
	sqlOIDCGrant             = `SELECT ` + oidcGrantCols + ` FROM oidc_grants WHERE project_id = $1 AND id = $2`
	sqlOIDCSessionGrants     = `SELECT ` + oidcGrantCols + ` FROM oidc_grants WHERE project_id = $1 AND session_id = $2 ORDER BY id`
	sqlOIDCClientGrants      = `SELECT ` + oidcGrantCols + ` FROM oidc_grants WHERE project_id = $1 AND client_id = $2 ORDER BY id`
	sqlPutOIDCGrant          = `INSERT INTO oidc_grants (` + oidcGrantCols + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
		ON CONFLICT (project_id, id) DO UPDATE SET client_id = excluded.client_id, user_id = excluded.user_id,
			session_id = excluded.session_id, scopes = excluded.scopes, amr = excluded.amr, acr = excluded.acr,
			auth_time = excluded.auth_time, created_at = excluded.created_at, expires_at = excluded.expires_at,
			revoked_at = excluded.revoked_at, revoked_for = excluded.revoked_for`
)

// OIDCAuthRequest returns projectID's authorization request id.
func (tx *txn) OIDCAuthRequest(projectID, id string) (*store.OIDCAuthRequest, error) {
	if !storable(projectID, id) {
		return nil, store.ErrNotFound
	}
	r := &store.OIDCAuthRequest{}
	if err := tx.one(sqlOIDCAuthRequest, []any{projectID, id}, oidcAuthRequestDest(r)...); err != nil {
		return nil, err
	}
	return r, nil
}

// PutOIDCAuthRequest creates or replaces the request (r.ProjectID, r.ID).
func (tx *txn) PutOIDCAuthRequest(r *store.OIDCAuthRequest) error {
	_, err := tx.exec(sqlPutOIDCAuthRequest, r.ProjectID, r.ID, r.ClientID, r.RedirectURI, r.Scopes, r.State, r.Nonce,
		r.ResponseType, r.ResponseMode, r.CodeChallenge, r.CodeChallengeMethod, r.Prompt, r.MaxAge, r.LoginHint,
		r.UILocales, r.HintUserID, timeArg(r.CreatedAt), r.UserID, r.SessionID, timeArg(r.AuthTime), r.AMR, r.ACR,
		r.Done, r.CodeHash, timeArg(r.CodeExpiresAt), r.GrantID, timeArg(r.ExpiresAt))
	return err
}

// DeleteOIDCAuthRequest removes projectID's request id.
func (tx *txn) DeleteOIDCAuthRequest(projectID, id string) error {
	if !storable(projectID, id) {
		return nil
	}
	_, err := tx.exec(sqlDeleteOIDCAuthRequest, projectID, id)
	return err
}

// OIDCGrant returns projectID's grant id.
func (tx *txn) OIDCGrant(projectID, id string) (*store.OIDCGrant, error) {
	if !storable(projectID, id) {
		return nil, store.ErrNotFound
	}
	g := &store.OIDCGrant{}
	if err := tx.one(sqlOIDCGrant, []any{projectID, id}, oidcGrantDest(g)...); err != nil {
		return nil, err
	}
	return g, nil
}

// PutOIDCGrant creates or replaces the grant (g.ProjectID, g.ID).
func (tx *txn) PutOIDCGrant(g *store.OIDCGrant) error {
	_, err := tx.exec(sqlPutOIDCGrant, g.ProjectID, g.ID, g.ClientID, g.UserID, g.SessionID, g.Scopes, g.AMR, g.ACR,
		timeArg(g.AuthTime), timeArg(g.CreatedAt), timeArg(g.ExpiresAt), timeArg(g.RevokedAt), g.RevokedFor)
	return err
}

// OIDCUserGrants returns projectID's grants of userID in ID byte order
// (the index oidc_grants_user); never nil.
func (tx *txn) OIDCUserGrants(projectID, userID string) ([]*store.OIDCGrant, error) {
	if !storable(projectID, userID) {
		return []*store.OIDCGrant{}, nil
	}
	out, err := scanAll(tx, `SELECT `+oidcGrantCols+` FROM oidc_grants WHERE project_id = $1 AND user_id = $2 ORDER BY id`,
		[]any{projectID, userID}, oidcGrantDest)
	if out == nil {
		out = []*store.OIDCGrant{}
	}
	return out, err
}

// OIDCSessionGrants returns projectID's grants under session sessionID
// (index oidc_grants_session), in id order.
func (tx *txn) OIDCSessionGrants(projectID, sessionID string) ([]*store.OIDCGrant, error) {
	if !validText(projectID) || !validText(sessionID) {
		return []*store.OIDCGrant{}, nil
	}
	out, err := scanAll(tx, sqlOIDCSessionGrants, []any{projectID, sessionID}, oidcGrantDest)
	if out == nil {
		out = []*store.OIDCGrant{}
	}
	return out, err
}

// OIDCClientGrants returns projectID's grants to client clientID
// (index oidc_grants_client), in id order.
func (tx *txn) OIDCClientGrants(projectID, clientID string) ([]*store.OIDCGrant, error) {
	if !validText(projectID) || !validText(clientID) {
		return []*store.OIDCGrant{}, nil
	}
	out, err := scanAll(tx, sqlOIDCClientGrants, []any{projectID, clientID}, oidcGrantDest)
	if out == nil {
		out = []*store.OIDCGrant{}
	}
	return out, err
}
