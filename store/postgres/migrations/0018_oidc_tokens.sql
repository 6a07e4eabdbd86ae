-- The OpenID providers' tokens beyond the code flow (oidctoken.go):
-- refresh tokens, keyed by (project, keyed hash of the token)
-- (store.OIDCRefreshToken), and the access tokens revoked before their
-- expiry, keyed by (project, jti) (store.OIDCRevokedToken). Each primary
-- key's prefix is the project (DeleteProject); both are swept at their
-- expiry like the other expiring rows (due).
CREATE TABLE oidc_refresh_tokens (
	project_id text COLLATE "C" NOT NULL,
	hash       bytea NOT NULL,
	grant_id   text NOT NULL,
	client_id  text NOT NULL,
	scopes     text[],                    -- NULL: nil
	created_at bigint,
	rotated_at bigint,                    -- NULL: the live token
	expires_at bigint,
	due        bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED,
	PRIMARY KEY (project_id, hash)
);
CREATE INDEX oidc_refresh_tokens_due ON oidc_refresh_tokens (due);

CREATE TABLE oidc_revoked_tokens (
	project_id text COLLATE "C" NOT NULL,
	jti        text COLLATE "C" NOT NULL,
	client_id  text NOT NULL,
	revoked_at bigint,
	expires_at bigint,
	due        bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED,
	PRIMARY KEY (project_id, jti)
);
CREATE INDEX oidc_revoked_tokens_due ON oidc_revoked_tokens (due);
