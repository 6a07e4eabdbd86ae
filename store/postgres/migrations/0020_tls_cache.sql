-- The cache of automatic HTTPS (tlscache.go; store.TLSCacheEntry): the
-- certificates with their keys, the ACME account key and the challenge
-- answers in flight, by name, sealed by the caller. Shared by the
-- replicas, so one order serves them all.
CREATE TABLE tls_cache (
	key  text COLLATE "C" PRIMARY KEY,
	data bytea NOT NULL
);
