package auth

import "latchkey/store"

// Replicas on one database (docs/replicas.md, "Consistency across
// replicas"). The store's invalidation
// feed (store.DB.Watch) tells this service of the changes every replica
// commits, its own included; it drops its cached copies as it does after
// its own commits, so a revoked key or a changed or deleted project is
// seen by every replica within the feed's delay (250 ms by default, well
// within the 1 second promised). What the service caches across requests:
//
//   - API keys (apiKeys) and projects (projects): dropped by
//     ChangeAPIKey and ChangeProject;
//   - the allowed origins of every project (origins): rebuilt after a
//     ChangeProject;
//   - the texts of projects' hosted pages (pageTexts): dropped by
//     ChangeTemplates and ChangeProject;
//   - verified tokens (tokens): the signature check only; the session
//     row is checked on every call (the store keeps that check cheap and
//     coherent), and the project through the project cache;
//   - projects' signing and public keys (signers, publicKeys): keyed by
//     project and key id, never changed, so never stale;
//   - OpenID Connect discovery (oidc): by provider id, for DiscoveryTTL
//     (which bounds how old an issuer's document may be). Providers are
//     never changed in place (removed and added again, one has a new
//     id), so an entry always matches its provider's settings; the
//     replica that removes a provider drops its entry, the others let
//     it expire.
//
// While the feed cannot be read (ChangeStale) the caches are emptied and
// filled by nobody: every request reads the store (which may then answer
// 503) until ChangeFresh. On a bbolt file the feed is silent.

// watch subscribes the service to the store's changes; Close ends it.
func (s *Service) watch() {
	s.unwatch = s.db.Watch(s.onChange)
}

// onChange drops what change c makes stale. It runs on the feed's
// goroutine: quick, and no store call.
func (s *Service) onChange(c store.Change) {
	switch c.Kind {
	case store.ChangeAPIKey:
		s.apiKeys.invalidate(c.ID)
	case store.ChangeProject:
		s.projects.invalidate(c.ID)
		s.oidcKeySets.invalidate(c.ID)
		s.pageTexts.invalidate(c.ID)
		s.projectsChanged()
	case store.ChangeTemplates:
		s.pageTexts.invalidate(c.ID)
	case store.ChangeStale, store.ChangeFresh:
		freeze := c.Kind == store.ChangeStale
		s.originsFrozen.Store(freeze)
		s.apiKeys.reset(freeze)
		s.projects.reset(freeze)
		s.oidcKeySets.reset(freeze)
		s.pageTexts.reset(freeze)
		s.projectsChanged()
	}
}
