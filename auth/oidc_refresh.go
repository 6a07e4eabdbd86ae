package auth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/store"
)

// Refresh tokens of the projects' OpenID providers (docs/oidc.md).
//
// A code exchange gives a refresh token when the client has the
// refresh_token grant and the request's scopes have offline_access,
// which a first-party client always gets (requestScopes). A grant's
// refresh tokens are its family: one is live, and each refresh rotates
// it (the token presented is kept, rotated, and a new one returned).
// Presenting a rotated token again means two parties held it: the
// whole family, its grant, is revoked, and with it every access token
// of the grant. A refresh token lives the client's idle time from its
// issue and never past its grant, which lives the client's refresh
// token lifetime from the code's exchange and never past the session's
// maximum. A refresh slides the latchkey session the grant was signed
// in with, as POST /api/v1/session/refresh does, and fails once that
// session has ended: revoking a session revokes every token issued
// under it.
//
// Tokens are "lkrt_" and 43 base62 characters (256 bits); only their
// keyed hash is stored.

const (
	// oidcRefreshPrefix starts every refresh token.
	oidcRefreshPrefix = "lkrt_"
	// oidcRefreshRandom is the number of base62 characters after it.
	oidcRefreshRandom = 43
	// oidcRefreshDomain is the keyed-hash domain of refresh tokens.
	oidcRefreshDomain = "oidc-refresh"
	// methodOIDC is the authentication events' (and metrics') method of
	// the providers' token refreshes.
	methodOIDC = "oidc"
)

// requestScopes returns the scopes an authorization request of c keeps
// of asked, in order and once each: openid, and those c may ask for.
// offline_access is kept only for a client with the refresh_token grant
// (it asks for a refresh token), and is added for a first-party client
// with that grant, which always gets one.
func requestScopes(c *store.OIDCClient, asked []string) []string {
	refresh := slices.Contains(c.GrantTypes, GrantRefreshToken)
	var out []string
	for _, sc := range asked {
		if sc == oidc.ScopeOfflineAccess && !refresh {
			continue
		}
		if (sc == oidc.ScopeOpenID || slices.Contains(c.Scopes, sc)) && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	if refresh && c.FirstParty && !slices.Contains(out, oidc.ScopeOfflineAccess) {
		out = append(out, oidc.ScopeOfflineAccess)
	}
	return out
}

// refreshTimes returns c's refresh token lifetime (of its grant, from
// the code's exchange) and idle time (of each token, from its issue):
// its settings, or the defaults for a client that has none.
func refreshTimes(c *store.OIDCClient) (lifetime, idle time.Duration) {
	lifetime, idle = DefaultRefreshLifetime*time.Second, DefaultRefreshIdle*time.Second
	if c.RefreshTokenLifetimeSeconds > 0 {
		lifetime = time.Duration(c.RefreshTokenLifetimeSeconds) * time.Second
	}
	if c.RefreshTokenIdleSeconds > 0 {
		idle = time.Duration(c.RefreshTokenIdleSeconds) * time.Second
	}
	return lifetime, min(idle, lifetime)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// isOIDCRefreshToken reports whether tok has the form of a refresh
// token: the prefix and 43 base62 characters.
func isOIDCRefreshToken(tok string) bool {
	rest, ok := strings.CutPrefix(tok, oidcRefreshPrefix)
	if !ok || len(rest) != oidcRefreshRandom {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(base62, rest[i]) < 0 {
			return false
		}
	}
	return true
}

// newOIDCRefreshToken returns a new refresh token of g for scopes,
// issued at now, and stores its keyed hash in tx: live for c's idle
// time, never past g.
func (s *Service) newOIDCRefreshToken(tx store.Tx, g *store.OIDCGrant, c *store.OIDCClient, scopes []string, now time.Time) (string, error) {
	tok := oidcRefreshPrefix + randomString(base62, oidcRefreshRandom)
	h := s.keys.HashString(oidcRefreshDomain, tok)
	_, idle := refreshTimes(c)
	return tok, tx.PutOIDCRefreshToken(&store.OIDCRefreshToken{ProjectID: g.ProjectID, Hash: h[:], GrantID: g.ID,
		ClientID: c.ID, Scopes: slices.Clone(scopes), CreatedAt: now, ExpiresAt: earlier(now.Add(idle), g.ExpiresAt)})
}

// oidcRefreshRequest is a refresh token presented at the token endpoint
// as op sees it (op.RefreshTokenRequest): its grant, and the scopes the
// new tokens get (the token's, or fewer when the client asks).
type oidcRefreshRequest struct {
	rt     *store.OIDCRefreshToken
	g      *store.OIDCGrant
	scopes []string
}

var _ op.RefreshTokenRequest = (*oidcRefreshRequest)(nil)

func (r *oidcRefreshRequest) GetAMR() []string            { return r.g.AMR }
func (r *oidcRefreshRequest) GetAudience() []string       { return []string{r.g.ClientID} }
func (r *oidcRefreshRequest) GetAuthTime() time.Time      { return r.g.AuthTime }
func (r *oidcRefreshRequest) GetClientID() string         { return r.g.ClientID }
func (r *oidcRefreshRequest) GetScopes() []string         { return r.scopes }
func (r *oidcRefreshRequest) GetSubject() string          { return r.g.UserID }
func (r *oidcRefreshRequest) SetCurrentScopes(s []string) { r.scopes = s }

// The refused refreshes (op answers each invalid_grant).
var (
	errRefreshTokenUnknown = oidc.ErrInvalidGrant().WithDescription("Unknown refresh token.")
	errRefreshTokenEnded   = oidc.ErrInvalidGrant().WithDescription("This refresh token has expired or was revoked: sign in again.")
	errRefreshSessionEnded = oidc.ErrInvalidGrant().WithDescription("The sign-in session has ended: sign in again.")
	errRefreshTokenReused  = oidc.ErrInvalidGrant().WithDescription("This refresh token was already used, so every token of its grant has been revoked: sign in again.")
)

// TokenRequestByRefreshToken returns the grant of a refresh token
// presented at the token endpoint, when it may be refreshed: the
// token is of the project and of the client that authenticated (any
// other changes nothing), live (not rotated, not idle), its grant
// neither revoked nor expired, its session there. A rotated token is
// reuse: the grant is revoked (every token of its family) and the
// token refused. op answers a refusal invalid_grant without its
// description: the refusal is noted for the HTTP layer, which gives it
// back (OIDCNotedRefusal).
func (p *OIDCStorage) TokenRequestByRefreshToken(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	req, err := p.refreshRequest(ctx, token)
	if e := (*oidc.Error)(nil); errors.As(err, &e) && e.ErrorType == oidc.InvalidGrant {
		noteRefusal(ctx, e)
	}
	return req, err
}

// refreshTokenAndGrant reads refresh token token and its grant in one
// read transaction; store.ErrNotFound when token is not one of this
// project's refresh tokens (or not shaped as one).
func (p *OIDCStorage) refreshTokenAndGrant(ctx context.Context, token string) (rt *store.OIDCRefreshToken, g *store.OIDCGrant, err error) {
	if !isOIDCRefreshToken(token) {
		return nil, nil, store.ErrNotFound
	}
	h := p.s.keys.HashString(oidcRefreshDomain, token)
	err = p.s.db.View(ctx, func(tx store.Tx) (err error) {
		if rt, err = tx.OIDCRefreshToken(p.projectID, h[:]); err != nil {
			return err
		}
		g, err = tx.OIDCGrant(p.projectID, rt.GrantID)
		return err
	})
	return rt, g, err
}

// refreshRequest is TokenRequestByRefreshToken.
func (p *OIDCStorage) refreshRequest(ctx context.Context, token string) (op.RefreshTokenRequest, error) {
	rt, g, err := p.refreshTokenAndGrant(ctx, token)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errRefreshTokenUnknown
	} else if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if sc := scratchOf(ctx); sc == nil || sc.clientID != rt.ClientID || g.ClientID != rt.ClientID {
		return nil, errRefreshTokenUnknown
	}
	if !rt.RotatedAt.IsZero() {
		if err := p.s.revokeOIDCGrant(ctx, p.projectID, g.ID, "refresh token reused"); err != nil {
			return nil, oidc.ErrServerError().WithParent(err)
		}
		p.s.countRefresh(CatAlreadyUsed)
		return nil, errRefreshTokenReused
	}
	now := p.s.now()
	if !g.RevokedAt.IsZero() || !now.Before(g.ExpiresAt) || !now.Before(rt.ExpiresAt) {
		return nil, errRefreshTokenEnded
	}
	if st, err := p.s.db.SessionState(ctx, g.SessionID); err != nil || st.UserID != g.UserID {
		return nil, errRefreshSessionEnded
	}
	return &oidcRefreshRequest{rt: rt, g: g, scopes: slices.Clone(rt.Scopes)}, nil
}

// countRefresh counts one refresh of a provider's token (metrics:
// method oidc, action token_refreshed), failure its category ("" for
// a success).
func (s *Service) countRefresh(failure string) {
	if s.obs != nil {
		s.obs.AuthEvent(methodOIDC, "token_refreshed", failure)
	}
}

// CreateAccessAndRefreshTokens answers a code exchange that gets a
// refresh token (exchangeCode), a device's (exchangeDevice) or a
// refresh (refreshTokens).
func (p *OIDCStorage) CreateAccessAndRefreshTokens(ctx context.Context, request op.TokenRequest, current string) (string, string, time.Time, error) {
	switch r := request.(type) {
	case oidcAuthRequest:
		return p.exchangeCode(ctx, r, true)
	case *oidcRefreshRequest:
		return p.refreshTokens(ctx, r, current)
	case *op.DeviceAuthorizationState:
		return p.exchangeDevice(ctx, true)
	}
	return "", "", time.Time{}, oidc.ErrUnsupportedGrantType()
}

// refreshTokens rotates refresh token current of req, in one
// transaction: the token is marked rotated (kept for the idle time, or
// its grant's end, to tell a reuse), a new one stored with the scopes
// asked for (the grant's narrow to them), and the grant's session slid
// (its row's expiry to min(now + the project's idle time, sign-in + its
// maximum), never earlier than it was). It is refused, changing
// nothing, when the token, its grant or its session ended meanwhile,
// and when the session's second factor is pending. A token rotated
// meanwhile (two refreshes at once) is reuse: the grant is revoked.
// The new access token lives the client's lifetime, never past its
// grant or its session.
func (p *OIDCStorage) refreshTokens(ctx context.Context, req *oidcRefreshRequest, current string) (string, string, time.Time, error) {
	h := p.s.keys.HashString(oidcRefreshDomain, current)
	var g *store.OIDCGrant
	var c *store.OIDCClient
	var refresh string
	var ttl time.Duration
	reused := false
	err := p.s.db.Update(ctx, func(tx store.Tx) error {
		g, c, refresh, reused = nil, nil, "", false
		now := p.s.now().UTC()
		rt, err := tx.OIDCRefreshToken(p.projectID, h[:])
		if errors.Is(err, store.ErrNotFound) {
			return errRefreshTokenUnknown
		} else if err != nil {
			return err
		}
		if g, err = tx.OIDCGrant(p.projectID, rt.GrantID); errors.Is(err, store.ErrNotFound) {
			return errRefreshTokenEnded
		} else if err != nil {
			return err
		}
		if rt.ClientID != req.rt.ClientID || g.ClientID != rt.ClientID {
			return errRefreshTokenUnknown
		}
		if !rt.RotatedAt.IsZero() {
			reused = true
			if !g.RevokedAt.IsZero() {
				return nil
			}
			g.RevokedAt, g.RevokedFor = now, "refresh token reused"
			p.s.oidcTokensChanged(tx)
			return tx.PutOIDCGrant(g)
		}
		if !g.RevokedAt.IsZero() || !now.Before(g.ExpiresAt) || !now.Before(rt.ExpiresAt) {
			return errRefreshTokenEnded
		}
		if c, err = tx.OIDCClient(p.projectID, g.ClientID); errors.Is(err, store.ErrNotFound) {
			return errRefreshTokenEnded
		} else if err != nil {
			return err
		}
		sess, en, err := tx.SessionEnrolled(g.SessionID)
		if errors.Is(err, store.ErrNotFound) ||
			(err == nil && (sess.UserID != g.UserID || sess.ProjectID != p.projectID || !now.Before(sess.ExpiresAt))) {
			return errRefreshSessionEnded
		} else if err != nil {
			return err
		}
		if secondFactorPending(sess.Proofs, en) {
			return errRefreshSessionEnded
		}
		proj, err := tx.Project(p.projectID)
		if err != nil {
			return err
		}
		_, idle := refreshTimes(c)
		rt.RotatedAt, rt.ExpiresAt = now, earlier(now.Add(idle), g.ExpiresAt)
		if err := tx.PutOIDCRefreshToken(rt); err != nil {
			return err
		}
		if !slices.Equal(req.scopes, g.Scopes) {
			g.Scopes = slices.Clone(req.scopes)
			p.s.oidcTokensChanged(tx)
			if err := tx.PutOIDCGrant(g); err != nil {
				return err
			}
		}
		sess.ExpiresAt = later(sess.ExpiresAt, sessionExpiry(proj, sess.IssuedAt, now.Truncate(time.Second)))
		if seen := now.Truncate(time.Second); seen.After(sess.LastSeenAt) {
			sess.LastSeenAt = seen
		}
		if err := tx.PutSession(sess); err != nil {
			return err
		}
		if refresh, err = p.s.newOIDCRefreshToken(tx, g, c, req.scopes, now); err != nil {
			return err
		}
		ttl = min(time.Duration(c.AccessTokenLifetimeSeconds)*time.Second, g.ExpiresAt.Sub(now), sess.ExpiresAt.Sub(now)).Truncate(time.Second)
		tx.OnCommit(func() { p.s.countRefresh("") })
		return nil
	})
	if err != nil {
		return "", "", time.Time{}, oidcStoreError(err)
	}
	if reused {
		p.s.countRefresh(CatAlreadyUsed)
		return "", "", time.Time{}, errRefreshTokenReused
	}
	at, exp, err := p.mintAccessToken(ctx, g, c, req.scopes, max(ttl, time.Second))
	if err != nil {
		return "", "", time.Time{}, err
	}
	return at, refresh, exp, nil
}

// GetRefreshTokenInfo tells the revocation endpoint of a refresh token
// of the project: its user and "rt:<grant id>", which RevokeToken
// takes. Anything else is op.ErrInvalidRefreshToken (op then tries it
// as an access token).
func (p *OIDCStorage) GetRefreshTokenInfo(ctx context.Context, _ string, token string) (string, string, error) {
	if !isOIDCRefreshToken(token) {
		return "", "", op.ErrInvalidRefreshToken
	}
	h := p.s.keys.HashString(oidcRefreshDomain, token)
	var g *store.OIDCGrant
	err := p.s.db.View(ctx, func(tx store.Tx) error {
		rt, err := tx.OIDCRefreshToken(p.projectID, h[:])
		if err != nil {
			return err
		}
		g, err = tx.OIDCGrant(p.projectID, rt.GrantID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return "", "", op.ErrInvalidRefreshToken
	} else if err != nil {
		return "", "", err
	}
	return g.UserID, "rt:" + g.ID, nil
}

// errNotYourToken refuses a client's revocation of another client's
// token (RFC 7009, section 2.1).
var errNotYourToken = oidc.ErrUnauthorizedClient().WithDescription("This token was not issued to this client.")

// RevokeToken revokes, for client clientID, a token op found: a
// refresh token ("rt:<grant id>" from GetRefreshTokenInfo) revokes its
// whole family, its grant, and so every access token of the grant; an
// access token (its jti, op having checked its signature) is denied by
// its jti until it expires, its grant untouched. A token of another
// client is refused (unauthorized_client) and stays; a token that is
// unknown, expired or already revoked is no error (RFC 7009). A
// refresh token sent with token_type_hint=access_token reaches here
// as is, and is revoked as a refresh token. A client_credentials
// token is denied by its jti too (revokeClientToken).
func (p *OIDCStorage) RevokeToken(ctx context.Context, token, userID, clientID string) *oidc.Error {
	if userID == "" {
		if !isOIDCRefreshToken(token) {
			return nil // not a token of this provider: nothing to revoke
		}
		u, id, err := p.GetRefreshTokenInfo(ctx, clientID, token)
		if errors.Is(err, op.ErrInvalidRefreshToken) {
			return nil
		} else if err != nil {
			return oidc.ErrServerError().WithParent(err)
		}
		token, userID = id, u
	}
	now := p.s.now().UTC()
	err := p.s.db.Update(ctx, func(tx store.Tx) error {
		if gid, ok := strings.CutPrefix(token, "rt:"); ok {
			g, err := tx.OIDCGrant(p.projectID, gid)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			if g.ClientID != clientID {
				return errNotYourToken
			}
			if !g.RevokedAt.IsZero() {
				return nil
			}
			g.RevokedAt, g.RevokedFor = now, "refresh token revoked"
			p.s.oidcTokensChanged(tx)
			return tx.PutOIDCGrant(g)
		}
		if strings.HasPrefix(token, ccPrefix) {
			return p.revokeClientToken(tx, token, clientID, now)
		}
		gid, exp, ok := parseJTI(token)
		if !ok || !now.Before(exp) {
			return nil
		}
		g, err := tx.OIDCGrant(p.projectID, gid)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if g.ClientID != clientID {
			return errNotYourToken
		}
		if g.UserID != userID {
			return nil
		}
		p.s.oidcTokensChanged(tx)
		return tx.PutOIDCRevokedToken(&store.OIDCRevokedToken{ProjectID: p.projectID, JTI: token, ClientID: clientID,
			RevokedAt: now, ExpiresAt: exp})
	})
	var oe *oidc.Error
	if errors.As(err, &oe) {
		return oe
	} else if err != nil {
		return oidc.ErrServerError().WithParent(err)
	}
	return nil
}

// SetIntrospectionFromToken answers the introspection of a verified
// access token for client clientID (op has checked its secret): active
// while the token's grant and session live and it was not revoked
// (accessGrant), and only for the client it was issued to; any other
// is inactive. The answer has the token's scope, client_id, exp, iss,
// jti, aud, sub, auth_time, amr, sid and acr, and the user's claims of
// its scopes. A client_credentials token is answered by
// introspectClientToken.
func (p *OIDCStorage) SetIntrospectionFromToken(ctx context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	if strings.HasPrefix(tokenID, ccPrefix) {
		return p.introspectClientToken(ctx, resp, tokenID, subject, clientID)
	}
	g, exp, err := p.accessGrant(ctx, tokenID, subject)
	if err != nil {
		return err
	}
	if g.ClientID != clientID {
		return errors.New("another client's token")
	}
	info := &oidc.UserInfo{}
	if err := p.fillUserinfo(ctx, info, g.UserID, g.ClientID, g.Scopes, g.SessionID, g.ACR); err != nil {
		return err
	}
	resp.SetUserInfo(info)
	resp.Scope = g.Scopes
	resp.ClientID = g.ClientID
	resp.TokenType = oidc.BearerToken
	resp.Expiration = oidc.FromTime(exp)
	resp.Issuer = p.s.OIDCIssuer(p.projectID)
	resp.JWTID = tokenID
	resp.Audience = []string{g.ClientID}
	resp.AuthTime = oidc.FromTime(g.AuthTime)
	resp.AuthenticationMethodsReferences = g.AMR
	return nil
}
