package auth

import (
	"context"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// Refusals op rewords (docs/oidc.md): op answers some of the storage's
// refusals in words of its own, dropping what latchkey said: any
// failure of a device code's lookup becomes access_denied (an unknown
// device code is invalid_grant, RFC 8628), and a refused refresh token
// loses its error_description. The storage notes its refusal in the
// request's scratch (OIDCRequestContext); the HTTP layer answers it
// instead of op's when op refuses the request.

// noteRefusal notes e as the refusal of ctx's provider request and
// returns it.
func noteRefusal(ctx context.Context, e *oidc.Error) error {
	if sc := scratchOf(ctx); sc != nil {
		sc.refusal.Store(e)
	}
	return e
}

// OIDCNotedRefusal returns the refusal the storage noted during the
// provider request whose context is ctx, nil without one: when op
// refuses that request, this is the answer (its error code and
// description).
func OIDCNotedRefusal(ctx context.Context) *oidc.Error {
	if sc := scratchOf(ctx); sc != nil {
		return sc.refusal.Load()
	}
	return nil
}
