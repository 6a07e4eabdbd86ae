-- Instance settings: one value each (admin token hash, first-start
-- marker, master key check).
CREATE TABLE meta (
	name  text PRIMARY KEY,
	value bytea NOT NULL
);
