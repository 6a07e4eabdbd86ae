-- One-time codes, send and failure histories, magic links, factors,
-- backup codes, external-method registrations and their grants,
-- passkeys and WebAuthn ceremonies.
--
-- Times are bigint Unix nanoseconds, NULL for the zero time. Rows the
-- sweep deletes have a NOT NULL, indexed "due" column: when they are
-- due, in Unix nanoseconds, the zero time (NULL) as the smallest bigint,
-- due at once. No foreign keys to users or projects: DeleteUser and
-- DeleteProject remove these rows themselves.

-- Pending one-time codes and replay marks, one per (project, kind,
-- subject); project_id may be an external method's id (replay marks).
-- The subject is bytea: it holds caller-supplied strings byte for byte
-- (a NUL byte too), and is only ever compared for equality.
CREATE TABLE codes (
	project_id text COLLATE "C" NOT NULL,
	kind       text COLLATE "C" NOT NULL,
	subject    bytea NOT NULL,
	phone      text NOT NULL,
	email      text NOT NULL,
	hash       bytea,
	attempts   bigint NOT NULL,
	created_at bigint,
	expires_at bigint,
	due        bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED,
	PRIMARY KEY (project_id, kind, subject)
);
CREATE INDEX codes_due ON codes (due);

-- Send and failure histories, keyed like codes. due is ThrottleIdle
-- after the newest entry or keep_until, whichever is later (computed by
-- the writer). A history without entries is not stored.
CREATE TABLE throttles (
	project_id text COLLATE "C" NOT NULL,
	kind       text COLLATE "C" NOT NULL,
	subject    bytea NOT NULL,
	sends      bigint[] NOT NULL CHECK (cardinality(sends) > 0),
	keep_until bigint,
	due        bigint NOT NULL,
	PRIMARY KEY (project_id, kind, subject)
);
CREATE INDEX throttles_due ON throttles (due);

-- Magic links by the keyed hash of their token.
CREATE TABLE magic_links (
	hash         bytea PRIMARY KEY,
	project_id   text COLLATE "C" NOT NULL,
	email        text COLLATE "C" NOT NULL,
	redirect_url text NOT NULL,
	created_at   bigint,
	expires_at   bigint,
	used_at      bigint,
	due          bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED
);
CREATE INDEX magic_links_project_email ON magic_links (project_id, email);
CREATE INDEX magic_links_due ON magic_links (due);

-- Step-up factors, one per (user, kind).
CREATE TABLE factors (
	user_id      text COLLATE "C" NOT NULL,
	kind         text COLLATE "C" NOT NULL CHECK (kind IN ('totp', 'sms')),
	project_id   text COLLATE "C" NOT NULL,
	status       text NOT NULL,
	secret       bytea,
	phone        text NOT NULL,
	last_step    bigint NOT NULL,
	failures     bigint NOT NULL,
	locked_until bigint,
	created_at   bigint,
	enrolled_at  bigint,
	PRIMARY KEY (user_id, kind)
);
CREATE INDEX factors_project ON factors (project_id);

-- A user's current batch of backup codes (keyed hashes, and which were
-- used).
CREATE TABLE backup_codes (
	user_id    text COLLATE "C" PRIMARY KEY,
	project_id text COLLATE "C" NOT NULL,
	hashes     bytea[],
	used       boolean[],
	created_at bigint
);
CREATE INDEX backup_codes_project ON backup_codes (project_id);

-- External-method registrations (BYOAM). (project_id, method) is not
-- unique in the store's contract: a lookup by name takes the lowest id.
CREATE TABLE external_methods (
	id         text COLLATE "C" PRIMARY KEY,
	project_id text COLLATE "C" NOT NULL,
	method     text COLLATE "C" NOT NULL,
	pattern    text NOT NULL,
	status     text NOT NULL,
	secret     bytea,
	created_at bigint
);
CREATE INDEX external_methods_project ON external_methods (project_id, method, id);

-- Pattern B grants by the keyed hash of (registration, reference). No
-- foreign key to external_methods: a grant names its method only for
-- the caller.
CREATE TABLE grants (
	hash             bytea PRIMARY KEY,
	method_id        text COLLATE "C" NOT NULL,
	project_id       text COLLATE "C" NOT NULL,
	external_user_id text COLLATE "C" NOT NULL,
	email            text NOT NULL,
	created_at       bigint,
	expires_at       bigint,
	used_at          bigint,
	due              bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED
);
CREATE INDEX grants_project_user ON grants (project_id, external_user_id);
CREATE INDEX grants_due ON grants (due);

-- WebAuthn credentials, per project, listed under their user oldest
-- first.
CREATE TABLE passkeys (
	project_id   text COLLATE "C" NOT NULL,
	id           text COLLATE "C" NOT NULL,
	user_id      text COLLATE "C" NOT NULL,
	credential   bytea,
	created_at   bigint,
	last_used_at bigint,
	PRIMARY KEY (project_id, id)
);
CREATE INDEX passkeys_user ON passkeys (user_id, project_id, created_at NULLS FIRST, id);

-- Pending WebAuthn ceremonies.
CREATE TABLE challenges (
	id         text COLLATE "C" PRIMARY KEY,
	project_id text COLLATE "C" NOT NULL,
	kind       text NOT NULL,
	user_id    text NOT NULL,
	email      text NOT NULL,
	session    bytea,
	expires_at bigint,
	due        bigint NOT NULL GENERATED ALWAYS AS (coalesce(expires_at, '-9223372036854775808'::bigint)) STORED
);
CREATE INDEX challenges_project ON challenges (project_id);
CREATE INDEX challenges_due ON challenges (due);
