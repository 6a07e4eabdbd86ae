-- The projects' OpenID providers (oidc.go): their signing keys
-- (store.OIDCKey). The primary key's prefix is the project (OIDCKeys,
-- DeleteProject). No foreign key: DeleteProject removes these rows
-- itself, as it does the other rows of a project.
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
