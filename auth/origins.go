package auth

import (
	"context"
	"slices"

	"latchkey/store"
)

// originIndex is the set of every project's allowed origins, for CORS
// preflights, which carry no token to name a project. It is built from
// the store when first needed after a project change.
type originIndex struct {
	version uint64 // projectsVersion when the build began
	set     map[string]bool
}

// OriginAllowed reports whether origin (a request's Origin header) is
// one of the allowed origins of project projectID or, with projectID
// "", of any project. A project change is seen by the next call.
func (s *Service) OriginAllowed(ctx context.Context, origin, projectID string) bool {
	o, err := NormalizeOrigin(origin)
	if err != nil {
		return false // "null", or not an origin at all
	}
	if projectID != "" {
		p, err := s.project(ctx, projectID)
		return err == nil && slices.Contains(p.AllowedOrigins, o)
	}
	idx := s.origins.Load()
	if idx == nil || idx.version != s.projectsVersion.Load() {
		if idx, err = s.buildOriginIndex(ctx); err != nil {
			s.log.Error("load allowed origins", "err", err)
			return false
		}
	}
	return idx.set[o]
}

// buildOriginIndex reads every project's origins. The version is taken
// before the read: a change committed meanwhile bumps it after its
// commit, so an index that may have missed the change is never current.
func (s *Service) buildOriginIndex(ctx context.Context) (*originIndex, error) {
	idx := &originIndex{version: s.projectsVersion.Load(), set: map[string]bool{}}
	err := s.db.View(ctx, func(tx store.Tx) error {
		ps, err := tx.Projects()
		for _, p := range ps {
			for _, o := range p.AllowedOrigins {
				idx.set[o] = true
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !s.originsFrozen.Load() {
		s.origins.Store(idx)
	}
	return idx, nil
}

// projectsChanged is called after a commit that created, changed or
// deleted a project: the origin index is stale from now on.
func (s *Service) projectsChanged() { s.projectsVersion.Add(1) }
