-- OAuth 2.0 / OpenID Connect sign-in (docs/oauth.md): a project's
-- providers, as the JSON of store.Project.Providers (client secrets
-- sealed with the keyring); NULL when the project has none. The pending
-- sign-ins (state, nonce, PKCE verifier) and the one-time exchange codes
-- are challenges (kinds "oauth_state" and "oauth_code"), swept with them.
ALTER TABLE projects ADD COLUMN providers bytea;
