-- A project's forward-auth (projects.go): the cookie domain and the
-- access rules, as the JSON of store.Project.ForwardAuth. NULL: none.
ALTER TABLE projects ADD COLUMN forward_auth bytea;
