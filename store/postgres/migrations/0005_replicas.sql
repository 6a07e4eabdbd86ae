-- Replicas (docs/replicas.md): the invalidation feed and the leases of
-- background tasks (feed.go, lease.go, sessioncache.go).

-- The invalidation feed: one row per change that other replicas' caches
-- must follow (kinds: store.ChangeKind, and the backend's own
-- "sessions_swept"), written in the transaction of the change. Replicas
-- read it by seq; the sweep deletes rows by age (changes_at).
CREATE TABLE changes (
	seq  bigserial PRIMARY KEY,
	kind text NOT NULL,
	id   text COLLATE "C" NOT NULL,
	at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX changes_at ON changes (at);

-- Leases: a background task runs on the replica whose lease row names
-- it as holder until until (the database's clock). '-infinity': released.
CREATE TABLE leases (
	name   text COLLATE "C" PRIMARY KEY,
	holder text NOT NULL,
	until  timestamptz NOT NULL
);
