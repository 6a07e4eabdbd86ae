-- The users' consents to the OpenID providers' third-party clients
-- (oidcconsent.go; store.OIDCConsent), one row per (project, user,
-- client): the user's consents are one range of the primary key, a
-- client's are read through oidc_consents_client (DeleteOIDCClient).
-- The grants get an index by user (OIDCUserGrants: revoking a consent
-- revokes the user's grants to that client).
CREATE TABLE oidc_consents (
	project_id text COLLATE "C" NOT NULL,
	user_id    text COLLATE "C" NOT NULL,
	client_id  text COLLATE "C" NOT NULL,
	scopes     text[],                    -- NULL: nil
	granted_at bigint,
	updated_at bigint,
	PRIMARY KEY (project_id, user_id, client_id)
);
CREATE INDEX oidc_consents_client ON oidc_consents (project_id, client_id);

CREATE INDEX oidc_grants_user ON oidc_grants (project_id, user_id, id);
