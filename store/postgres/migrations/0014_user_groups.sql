-- A user's groups (store.User.Groups: slugs) and what the app keeps
-- about the user (store.User.Metadata: a JSON object), users.go. NULL
-- when the user has none; an empty array or object is kept as such.
-- metadata is json, not jsonb: it reads back byte for byte as written.
-- Adding columns without a default rewrites no row.
ALTER TABLE users
	ADD COLUMN groups   text[],
	ADD COLUMN metadata json;
