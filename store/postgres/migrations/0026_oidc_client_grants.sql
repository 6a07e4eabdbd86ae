-- The OpenID grants by client (oidcflow.go OIDCClientGrants): deleting
-- a client revokes every grant made to it, in the transaction that
-- deletes it, reading the client's grants only.
CREATE INDEX oidc_grants_client ON oidc_grants (project_id, client_id);
