-- Sessions that slide: refresh tokens (refresh.go, store.RefreshToken)
-- and the projects' idle and maximum session times (projects.go).
--
-- A session's refresh tokens are its family, keyed by (session, keyed
-- hash of the token). They go with their session whichever way it goes
-- (logout, revocation, its user or project deleted, the sweep): the
-- foreign key deletes them in the same statement. The primary key's
-- session_id leads, so that deletion finds them by index. due is
-- expires_at, as in the other expiring tables.
CREATE TABLE refresh_tokens (
	session_id text COLLATE "C" NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	hash       bytea NOT NULL,
	project_id text COLLATE "C" NOT NULL,
	created_at bigint,
	used_at    bigint,
	expires_at bigint,
	due        bigint NOT NULL,
	PRIMARY KEY (session_id, hash)
);
CREATE INDEX refresh_tokens_due ON refresh_tokens (due);

-- How long a session may go unrefreshed, and how long after its sign-in
-- it may still be refreshed, in seconds. 0, the value of the projects
-- this adds them to, means the default.
ALTER TABLE projects
	ADD COLUMN session_idle_seconds bigint NOT NULL DEFAULT 0 CHECK (session_idle_seconds >= 0),
	ADD COLUMN session_max_seconds  bigint NOT NULL DEFAULT 0 CHECK (session_max_seconds >= 0);
