-- The OpenID providers' authorization code flow (oidcflow.go): the
-- authorization requests in flight, with the code issued for each
-- (store.OIDCAuthRequest), and the grants the codes were exchanged for
-- (store.OIDCGrant). Each primary key's prefix is the project
-- (DeleteProject); both are swept at their expiry like the other
-- expiring rows (due).
CREATE TABLE oidc_auth_requests (
	project_id            text COLLATE "C" NOT NULL,
	id                    text COLLATE "C" NOT NULL,
	client_id             text NOT NULL,
	redirect_uri          text NOT NULL,
	scopes                text[],          -- NULL: nil
	state                 text NOT NULL,
	nonce                 text NOT NULL,
	response_type         text NOT NULL,
	response_mode         text NOT NULL,
	code_challenge        text NOT NULL,
	code_challenge_method text NOT NULL,
	prompt                text[],
	max_age               bigint,          -- seconds; NULL: none asked
	login_hint            text NOT NULL,
	ui_locales            text[],
	hint_user_id          text NOT NULL,
	created_at            bigint,
	user_id               text NOT NULL,
	session_id            text NOT NULL,
	auth_time             bigint,
	amr                   text[],
	acr                   text NOT NULL,
	done                  boolean NOT NULL,
	code_hash             bytea,           -- NULL: no code issued
	code_expires_at       bigint,
	grant_id              text NOT NULL,
	expires_at            bigint,
	due                   bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED,
	PRIMARY KEY (project_id, id)
);
CREATE INDEX oidc_auth_requests_due ON oidc_auth_requests (due);

CREATE TABLE oidc_grants (
	project_id  text COLLATE "C" NOT NULL,
	id          text COLLATE "C" NOT NULL,
	client_id   text NOT NULL,
	user_id     text NOT NULL,
	session_id  text NOT NULL,
	scopes      text[],
	amr         text[],
	acr         text NOT NULL,
	auth_time   bigint,
	created_at  bigint,
	expires_at  bigint,
	revoked_at  bigint,                    -- NULL: not revoked
	revoked_for text NOT NULL,
	due         bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED,
	PRIMARY KEY (project_id, id)
);
CREATE INDEX oidc_grants_due ON oidc_grants (due);
