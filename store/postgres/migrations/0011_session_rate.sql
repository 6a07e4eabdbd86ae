-- A project's per-session limit (projects.go): how many calls that
-- write or start a ceremony one session may make per rolling minute.
-- 0, the value of the projects this adds it to, means the default.
ALTER TABLE projects ADD COLUMN session_rate_limit_per_minute bigint NOT NULL DEFAULT 0
	CHECK (session_rate_limit_per_minute >= 0);
