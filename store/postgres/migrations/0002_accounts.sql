-- Accounts: projects, API keys, users, sessions and remembered devices
-- (projects.go, apikeys.go, users.go, sessions.go, devices.go).
--
-- Times are bigint Unix nanoseconds, NULL for the zero time. A "due"
-- column is when the sweep deletes the row (Unix nanoseconds; 0 for a
-- time before 1970, the zero time too), indexed for the sweep. Ids and
-- every string compared or ordered by byte order are COLLATE "C". Strings
-- that arrive from HTTP headers unchecked (a session's IP and user agent,
-- possibly cut inside a UTF-8 sequence) are bytea, which takes any bytes.

CREATE TABLE projects (
	id                    text COLLATE "C" PRIMARY KEY,
	name                  text NOT NULL,
	company_id            text NOT NULL,
	allowed_origins       text[],          -- NULL: nil
	rp_id                 text NOT NULL,
	session_ttl_seconds   bigint NOT NULL,
	rate_limit_per_minute bigint NOT NULL,
	deny_cidrs            text[],          -- NULL: nil
	created_at            bigint,
	email_change          text NOT NULL CHECK (email_change IN ('', 'verify', 'direct')),
	signing_key_id        text NOT NULL,
	signing_key           bytea,
	public_key            bytea
);

CREATE TABLE api_keys (
	prefix     text COLLATE "C" PRIMARY KEY,
	hash       bytea,
	project_id text COLLATE "C" NOT NULL,  -- '' once detached
	mode       text NOT NULL CHECK (mode IN ('live', 'test')),
	expires_at bigint,                     -- NULL: never (nil)
	revoked    boolean NOT NULL,
	created_at bigint
);
CREATE INDEX api_keys_project ON api_keys (project_id, prefix);

CREATE TABLE users (
	id               text COLLATE "C" PRIMARY KEY,
	project_id       text COLLATE "C" NOT NULL,
	email            text COLLATE "C" NOT NULL,
	external_user_id text COLLATE "C" CHECK (external_user_id <> ''),  -- NULL: unset
	first_name       text NOT NULL,
	company_id       text NOT NULL,
	disabled         boolean NOT NULL,
	email_verified   boolean,                                           -- NULL: nil
	created_at       bigint,
	updated_at       bigint,
	-- The lookups by email and external id, and the listing in email
	-- order (Users).
	CONSTRAINT users_email UNIQUE (project_id, email),
	CONSTRAINT users_external_id UNIQUE (project_id, external_user_id)
);

-- Sessions name their user without a foreign key: store.Tx.PutSession
-- stores a session for any user id, and DeleteUser deletes them itself.
-- TouchSession rewrites last_seen_at, not indexed: room on the page for
-- heap-only updates.
CREATE TABLE sessions (
	id            text COLLATE "C" PRIMARY KEY,
	user_id       text COLLATE "C" NOT NULL,
	project_id    text COLLATE "C" NOT NULL,
	method        text NOT NULL,
	issued_at     bigint,
	expires_at    bigint,
	stepped_up_at bigint,
	last_seen_at  bigint,
	ip            bytea NOT NULL,
	user_agent    bytea NOT NULL,
	due           bigint NOT NULL  -- expires_at
) WITH (fillfactor = 90);
CREATE INDEX sessions_user ON sessions (user_id, id);
CREATE INDEX sessions_due ON sessions (due);

CREATE TABLE devices (
	key          bytea PRIMARY KEY,
	hash         bytea,
	user_id      text COLLATE "C" NOT NULL,
	project_id   text COLLATE "C" NOT NULL,
	created_at   bigint,
	last_used_at bigint,
	due          bigint NOT NULL  -- last_used_at + store.DeviceLifetime
);
CREATE INDEX devices_project ON devices (project_id);
CREATE INDEX devices_due ON devices (due);
