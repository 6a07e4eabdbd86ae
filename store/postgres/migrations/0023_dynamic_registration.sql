-- Dynamic client registration (RFC 7591), and the passkey proofs of sessions.
--
-- A project's clientRegistration ("open", or '' for closed: projects.go),
-- and whether a client registered itself (oidc.go): registrations are
-- counted per project over the last hour from these rows.
ALTER TABLE projects ADD COLUMN client_registration text NOT NULL DEFAULT '';
ALTER TABLE oidc_clients ADD COLUMN registered boolean NOT NULL DEFAULT false;

-- Which of a session's proofs are passkeys that were synced (backup
-- eligible), side by side with proof_methods; NULL when none is
-- (store.Proof.Synced: amr swk rather than hwk).
ALTER TABLE sessions ADD COLUMN proof_synced boolean[];
