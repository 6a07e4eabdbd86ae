-- The OpenID providers' device authorizations (RFC 8628; oidcdevice.go):
-- one row per (project, keyed hash of the device code)
-- (store.OIDCDeviceAuth), its user code unique within the project. The
-- primary key's prefix is the project (DeleteProject); rows are swept
-- at their expiry like the other expiring rows (due).
CREATE TABLE oidc_device_auths (
	project_id   text COLLATE "C" NOT NULL,
	hash         bytea NOT NULL,
	user_code    text COLLATE "C" NOT NULL,
	client_id    text NOT NULL,
	scopes       text[],                  -- NULL: nil
	state        text NOT NULL,
	user_id      text NOT NULL,
	session_id   text NOT NULL,
	auth_time    bigint,
	amr          text[],
	acr          text NOT NULL,
	grant_id     text NOT NULL,
	created_at   bigint,
	last_poll_at bigint,
	expires_at   bigint,
	due          bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED,
	PRIMARY KEY (project_id, hash),
	UNIQUE (project_id, user_code)
);
CREATE INDEX oidc_device_auths_due ON oidc_device_auths (due);
