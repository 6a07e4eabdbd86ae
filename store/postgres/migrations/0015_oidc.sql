-- The projects' OpenID providers (oidc.go): their signing keys
-- (store.OIDCKey) and their clients (store.OIDCClient). Each primary
-- key's prefix is the project (the listings, DeleteProject). No foreign
-- key: DeleteProject removes these rows itself, as it does the other
-- rows of a project.
CREATE TABLE oidc_keys (
	project_id  text COLLATE "C" NOT NULL,
	id          text COLLATE "C" NOT NULL,
	alg         text COLLATE "C" NOT NULL,
	private_key bytea,
	public_jwk  bytea,
	created_at  bigint,
	retired_at  bigint,            -- NULL: active
	PRIMARY KEY (project_id, id)
);
-- At most one active key of each algorithm per project: two replicas
-- that create a project's first keys at once cannot both succeed.
CREATE UNIQUE INDEX oidc_keys_active ON oidc_keys (project_id, alg) WHERE retired_at IS NULL;

CREATE TABLE oidc_clients (
	project_id                 text COLLATE "C" NOT NULL,
	id                         text COLLATE "C" NOT NULL,
	name                       text NOT NULL,
	type                       text NOT NULL,
	secret_hash                bytea,          -- NULL: none (public)
	redirect_uris              text[],         -- NULL: nil
	post_logout_redirect_uris  text[],
	backchannel_logout_uri     text NOT NULL,
	grant_types                text[],
	scopes                     text[],
	first_party                boolean NOT NULL,
	require_mfa                boolean NOT NULL,
	id_token_alg               text NOT NULL,
	access_token_lifetime      bigint NOT NULL,  -- seconds
	refresh_token_lifetime     bigint NOT NULL,
	refresh_token_idle         bigint NOT NULL,
	claims                     text,           -- a JSON object; NULL: none
	created_at                 bigint,
	updated_at                 bigint,
	PRIMARY KEY (project_id, id)
);
