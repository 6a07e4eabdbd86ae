-- Whether the operator vouched for a user's address (users.go,
-- store.User.Vouched): an import wrote the user and its address has not
-- changed since. NULL in rows written before the column existed; the
-- service settles those when it needs to know.
ALTER TABLE users ADD COLUMN vouched boolean;
