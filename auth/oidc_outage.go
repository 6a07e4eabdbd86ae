package auth

import (
	"context"
	"errors"

	"latchkey/store"
)

// A store outage during a provider request (docs/oidc.md, "When the
// store fails"). op turns the errors of the storage into protocol
// answers of its own (a failed code lookup is invalid_grant, a failed
// write server_error), which would tell a client to drop a code or a
// refresh token that is still good. The service's store notes, in the
// request's scratch (OIDCRequestContext), that a call found the store
// out of reach or could not commit (store.ErrUnavailable,
// store.ErrWriteFailed); the HTTP layer then answers 503 with
// Retry-After instead of op's refusal (OIDCStoreOutage).

// outageDB is the service's store: the engine's, whose failures of
// reach or commit are noted in the provider request's scratch. Outside
// a provider request it adds one nil check per call.
type outageDB struct{ store.DB }

// View runs the engine's View and notes an outage.
func (d outageDB) View(ctx context.Context, fn func(store.Tx) error) error {
	return noteOutage(ctx, d.DB.View(ctx, fn))
}

// Update runs the engine's Update and notes an outage.
func (d outageDB) Update(ctx context.Context, fn func(store.Tx) error) error {
	return noteOutage(ctx, d.DB.Update(ctx, fn))
}

// Batch runs the engine's Batch and notes an outage.
func (d outageDB) Batch(ctx context.Context, fn func(store.Tx) error) error {
	return noteOutage(ctx, d.DB.Batch(ctx, fn))
}

// SessionState runs the engine's SessionState and notes an outage.
func (d outageDB) SessionState(ctx context.Context, id string) (*store.SessionState, error) {
	st, err := d.DB.SessionState(ctx, id)
	if err != nil {
		noteOutage(ctx, err)
	}
	return st, err
}

// noteOutage notes in ctx's provider scratch that err is a store
// outage, and returns err.
func noteOutage(ctx context.Context, err error) error {
	if err != nil && (errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrWriteFailed)) {
		if sc := scratchOf(ctx); sc != nil {
			sc.outage.Store(true)
		}
	}
	return err
}

// OIDCStoreOutage reports whether a store call of the provider request
// whose context is ctx (OIDCRequestContext) found the store out of
// reach or could not commit: nothing that call would have written was
// kept, and the request may succeed later.
func OIDCStoreOutage(ctx context.Context) bool {
	sc := scratchOf(ctx)
	return sc != nil && sc.outage.Load()
}
