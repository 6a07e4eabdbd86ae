package auth

import (
	"context"

	"latchkey/store"
)

// What one HTTP request to a provider reads more than once, read once
// (docs/performance.md). op asks its storage for the client up to four
// times in one request (the authorization request, its callback, the
// token endpoint's client authentication), and for the user and the
// client again to fill the ID token after the code's exchange read
// them: each ask was a read transaction, a round trip or more on
// PostgreSQL. The request's notes (oidcScratch, OIDCRequestContext)
// keep what the request read, and the later asks of the same request
// take it from there. Nothing outlives the HTTP request, so nothing can
// go stale beyond it; a write transaction still reads what it decides
// on (the code's request, the session, the client) inside itself.

// notedClient returns the project's client id when this request read
// it already.
func (p *OIDCStorage) notedClient(ctx context.Context, id string) *store.OIDCClient {
	if sc := scratchOf(ctx); sc != nil && sc.client != nil && sc.client.ProjectID == p.projectID && sc.client.ID == id {
		return sc.client
	}
	return nil
}

// noteClient keeps c for the request's later asks.
func noteClient(ctx context.Context, c *store.OIDCClient) {
	if sc := scratchOf(ctx); sc != nil && c != nil {
		sc.client = c
	}
}

// clientOf returns the project's client id: from the request's notes,
// or read (store.ErrNotFound when unknown) and noted.
func (p *OIDCStorage) clientOf(ctx context.Context, id string) (*store.OIDCClient, error) {
	if c := p.notedClient(ctx, id); c != nil {
		return c, nil
	}
	var c *store.OIDCClient
	err := p.s.db.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.OIDCClient(p.projectID, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	noteClient(ctx, c)
	return c, nil
}

// notedUser returns user id when this request's code exchange read it
// (for the ID token's claims).
func (p *OIDCStorage) notedUser(ctx context.Context, id string) *store.User {
	if sc := scratchOf(ctx); sc != nil && sc.user != nil && sc.user.ProjectID == p.projectID && sc.user.ID == id {
		return sc.user
	}
	return nil
}

// notedAuthRequest returns projectID's authorization request id when
// this request found it live already (the callback's check,
// OIDCCallbackAllowed).
func notedAuthRequest(ctx context.Context, projectID, id string) *store.OIDCAuthRequest {
	if sc := scratchOf(ctx); sc != nil && sc.request != nil && sc.request.ProjectID == projectID && sc.request.ID == id {
		return sc.request
	}
	return nil
}
