-- Dynamic client registration (RFC 7591) and passkey amr (sessions.go).
--
-- A project's clientRegistration ("open", or '' for closed: projects.go),
-- and whether a client registered itself (oidc.go): registrations are
-- counted per project over the last hour from these rows.
ALTER TABLE projects ADD COLUMN client_registration text NOT NULL DEFAULT '';
ALTER TABLE oidc_clients ADD COLUMN registered boolean NOT NULL DEFAULT false;
