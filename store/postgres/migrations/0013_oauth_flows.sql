-- Sign-ins with providers in flight (oauthflows.go; store.OAuthFlow): the
-- state waiting for the provider's callback (kind "state") and the
-- one-time code waiting for the app's exchange (kind "code"), keyed by
-- their keyed hash, swept at their expiry like the other expiring rows.
-- Until this version they were rows of challenges (kinds "oauth_state"
-- and "oauth_code"); they move here with their id, project, payload (the
-- challenge's session, byte for byte) and expiry, so that a sign-in in
-- flight across the upgrade completes, and challenges keep only WebAuthn
-- ceremonies.
CREATE TABLE oauth_flows (
	id         text COLLATE "C" PRIMARY KEY,
	project_id text COLLATE "C" NOT NULL,
	kind       text NOT NULL,
	payload    bytea,
	expires_at bigint,
	due        bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED
);
-- DeleteProject.
CREATE INDEX oauth_flows_project ON oauth_flows (project_id);
-- The sweep (expiry.go).
CREATE INDEX oauth_flows_due ON oauth_flows (due);

INSERT INTO oauth_flows (id, project_id, kind, payload, expires_at)
	SELECT id, project_id, CASE kind WHEN 'oauth_state' THEN 'state' ELSE 'code' END, session, expires_at
	FROM challenges WHERE kind IN ('oauth_state', 'oauth_code');
DELETE FROM challenges WHERE kind IN ('oauth_state', 'oauth_code');
