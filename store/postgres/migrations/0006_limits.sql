-- Limits shared by replicas (limits.go) and dashboard sessions
-- (dashboard.go).
--
-- Times are bigint Unix nanoseconds, as in every table.

-- The risk engine's velocity counts: one row per key (a keyed hash of a
-- project and an address or account). buckets holds the failures of the
-- last ten minutes, bucket i (1-based) for the Unix minutes m with
-- m % 10 = i - 1, each packed as (minute << 16) + count, so one row
-- holds the whole count and a single INSERT ... ON CONFLICT DO UPDATE
-- checks and counts under the row's lock. inflight counts the slots held
-- by verifications being evaluated; inflight_at is when the newest was
-- taken (all are dropped once it is older than the hold: their process
-- died). last is the newest change, for the sweep.
CREATE TABLE velocity (
	key           bytea PRIMARY KEY,
	buckets       bigint[] NOT NULL,
	inflight      integer NOT NULL,
	inflight_at   bigint NOT NULL,
	blocked_until bigint NOT NULL,
	last          bigint NOT NULL
);
CREATE INDEX velocity_last ON velocity (last);

-- Request counts of the approximate rate limits (API keys, sessions,
-- admin addresses), per key, slot (Unix seconds / 6) and replica: each
-- replica writes only its own rows, so replicas never wait on each
-- other's; a replica reads the others' rows of the keys it serves.
CREATE TABLE rate_counts (
	key     text COLLATE "C" NOT NULL,
	slot    bigint NOT NULL,
	replica text COLLATE "C" NOT NULL,
	n       integer NOT NULL,
	PRIMARY KEY (key, slot, replica)
);
CREATE INDEX rate_counts_slot ON rate_counts (slot);

-- Signed-in dashboard sessions, by the keyed hash of the cookie's value;
-- flash is sealed by the keyring (the next page's notice, a secret shown
-- once).
CREATE TABLE dash_sessions (
	hash       bytea PRIMARY KEY,
	expires_at bigint NOT NULL,
	flash      bytea
);
CREATE INDEX dash_sessions_expires ON dash_sessions (expires_at);
