-- Links of users to their accounts at sign-in providers (identities.go;
-- store.Identity): the provider's issuer and the subject it names the
-- account by, per project. The first sign-in with a provider stores
-- one; later sign-ins find their user by it before the address rules.
-- No foreign key: DeleteUser and DeleteProject remove these rows
-- themselves, as they do the other rows of a user.
CREATE TABLE identities (
	project_id text COLLATE "C" NOT NULL,
	issuer     text COLLATE "C" NOT NULL,
	subject    text COLLATE "C" NOT NULL,
	user_id    text COLLATE "C" NOT NULL,
	provider   text NOT NULL,
	created_at bigint,
	PRIMARY KEY (project_id, issuer, subject)
);
-- UserIdentities and DeleteUser.
CREATE INDEX identities_user ON identities (user_id, project_id, issuer, subject);
