package auth

import (
	"context"
	"errors"
	"slices"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"latchkey/store"
)

// OIDCTokenTypeRefresh is the token_type of a refresh token's
// introspection.
const OIDCTokenTypeRefresh = "refresh_token"

// OIDCIsRefreshToken reports whether token has the form of the
// providers' refresh tokens (its introspection is
// IntrospectRefreshToken's; op introspects only its JWTs).
func OIDCIsRefreshToken(token string) bool { return isOIDCRefreshToken(token) }

// IntrospectRefreshToken answers the introspection (RFC 7662) of
// refresh token token by client clientID, whose secret the caller has
// checked: active while the token may be refreshed (the live one of
// its family, not idle, its grant neither revoked nor expired, its
// session there) and only for the client it was issued to, with its
// scope, client_id, sub, exp (the earlier of the token's idle end and
// its grant's end), iat, iss, aud, auth_time and token_type
// refresh_token; any other answer is inactive and says nothing more. A
// rotated token is inactive: introspection is no use of it, so it
// revokes nothing (only a refresh that presents it does).
func (p *OIDCStorage) IntrospectRefreshToken(ctx context.Context, clientID, token string) (*oidc.IntrospectionResponse, error) {
	inactive := &oidc.IntrospectionResponse{}
	rt, g, err := p.refreshTokenAndGrant(ctx, token)
	if errors.Is(err, store.ErrNotFound) {
		return inactive, nil
	} else if err != nil {
		return nil, err
	}
	now := p.s.now()
	if rt.ClientID != clientID || g.ClientID != clientID || !rt.RotatedAt.IsZero() || !g.RevokedAt.IsZero() ||
		!now.Before(g.ExpiresAt) || !now.Before(rt.ExpiresAt) {
		return inactive, nil
	}
	st, err := p.s.db.SessionState(ctx, g.SessionID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && st.UserID != g.UserID) {
		return inactive, nil
	} else if err != nil {
		return nil, err
	}
	exp := rt.ExpiresAt
	if g.ExpiresAt.Before(exp) {
		exp = g.ExpiresAt
	}
	return &oidc.IntrospectionResponse{
		Active:     true,
		Scope:      slices.Clone(rt.Scopes),
		ClientID:   clientID,
		TokenType:  OIDCTokenTypeRefresh,
		Expiration: oidc.FromTime(exp),
		IssuedAt:   oidc.FromTime(rt.CreatedAt),
		Issuer:     p.s.OIDCIssuer(p.projectID),
		Audience:   []string{clientID},
		Subject:    g.UserID,
		AuthTime:   oidc.FromTime(g.AuthTime),
	}, nil
}
