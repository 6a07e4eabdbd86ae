-- The OpenID grants by session (oidcflow.go OIDCSessionGrants): when a
-- session ends, the grants made under it name the clients that get a
-- back-channel logout token.
CREATE INDEX oidc_grants_session ON oidc_grants (project_id, session_id);
