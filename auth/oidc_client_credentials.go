package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/store"
)

// The client_credentials grant (RFC 6749, section 4.4) of the projects'
// OpenID providers (docs/oidc.md): a confidential client whose
// grantTypes include client_credentials exchanges its own secret for an
// access token about itself, with no user, session, ID token or refresh
// token. The token is a JWT like the others (RFC 9068, typ at+jwt,
// RS256) whose sub and client_id are the client's id; nothing is stored
// for it. Its jti is "cc:<client id>.<exp>.<random>", so that a check
// reaches its client with no row: it works until it expires, unless it
// is revoked (RFC 7009) or its client is deleted or loses the grant.
// Userinfo refuses it (it names no user).

// ccPrefix starts the jti of a client_credentials access token.
const ccPrefix = "cc:"

// ccUserScopes are the scopes a client_credentials token never carries:
// they ask for a user's sign-in (openid) and a refresh token
// (offline_access), which this grant does not give; a request naming
// them gets the others.
var ccUserScopes = []string{oidc.ScopeOpenID, oidc.ScopeOfflineAccess}

// oidcClientRequest is a client_credentials token request as op sees it
// (op.TokenRequest): its subject and audience are the client.
type oidcClientRequest struct {
	c      *store.OIDCClient
	scopes []string
}

var _ op.TokenRequest = (*oidcClientRequest)(nil)

func (r *oidcClientRequest) GetSubject() string    { return r.c.ID }
func (r *oidcClientRequest) GetAudience() []string { return []string{r.c.ID} }
func (r *oidcClientRequest) GetScopes() []string   { return r.scopes }

var _ op.ClientCredentialsStorage = (*OIDCStorage)(nil)

// ClientCredentials authenticates a confidential client by its secret
// (keyed hash, constant-time compare) for the client_credentials grant;
// op then checks the client has the grant (unauthorized_client). Any
// failure is the same plain error, which op answers invalid_client.
func (p *OIDCStorage) ClientCredentials(ctx context.Context, clientID, secret string) (op.Client, error) {
	var c *store.OIDCClient
	err := p.s.db.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.OIDCClient(p.projectID, clientID)
		return err
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if err != nil || !p.s.CheckClientSecret(c, secret) {
		return nil, errors.New("invalid client credentials")
	}
	return &oidcClient{c: c, issuer: p.s.OIDCIssuer(p.projectID)}, nil
}

// ClientCredentialsTokenRequest returns the token request of an
// authenticated client for scopes: each must be one of the client's
// (invalid_scope otherwise); without any, the client's. openid and
// offline_access are left out either way (ccUserScopes).
func (p *OIDCStorage) ClientCredentialsTokenRequest(ctx context.Context, clientID string, scopes []string) (op.TokenRequest, error) {
	var c *store.OIDCClient
	err := p.s.db.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.OIDCClient(p.projectID, clientID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, oidc.ErrInvalidClient().WithDescription("Unknown client.")
	} else if err != nil {
		return nil, oidc.ErrServerError().WithParent(err)
	}
	if len(scopes) == 0 {
		scopes = c.Scopes
	}
	out := []string{}
	for _, sc := range scopes {
		if !slices.Contains(c.Scopes, sc) {
			return nil, oidc.ErrInvalidScope().WithDescription("The client may not ask for the scope %q.", clip(sc))
		}
		if !slices.Contains(ccUserScopes, sc) && !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return &oidcClientRequest{c: c, scopes: out}, nil
}

// mintClientToken signs the access token of a client_credentials
// request, living the client's access token lifetime (iat and exp by
// the wall clock, the jti's expiry by the service's, as
// mintAccessToken).
func (p *OIDCStorage) mintClientToken(ctx context.Context, r *oidcClientRequest) (string, time.Time, error) {
	set, err := p.s.OIDCKeys(ctx, p.projectID)
	if err != nil {
		return "", time.Time{}, oidc.ErrServerError().WithParent(err)
	}
	ttl := time.Duration(r.c.AccessTokenLifetimeSeconds) * time.Second
	wall := time.Now()
	exp := wall.Add(ttl)
	claims := map[string]any{
		"iss": p.s.OIDCIssuer(p.projectID), "sub": r.c.ID, "aud": []string{r.c.ID}, "client_id": r.c.ID,
		"iat": wall.Unix(), "exp": exp.Unix(),
		"jti":   ccPrefix + r.c.ID + "." + strconv.FormatInt(p.s.now().Add(ttl).Unix(), 10) + "." + randomString(base62, 12),
		"scope": strings.Join(r.scopes, " "),
	}
	tok, err := signOIDC(accessTokenKey(set, r.c), "at+jwt", claims)
	if err != nil {
		return "", time.Time{}, oidc.ErrServerError().WithParent(err)
	}
	return tok, exp, nil
}

// parseClientJTI returns the client id and expiry of a
// client_credentials token's jti; false for any other jti.
func parseClientJTI(jti string) (string, time.Time, bool) {
	rest, ok := strings.CutPrefix(jti, ccPrefix)
	if !ok {
		return "", time.Time{}, false
	}
	return parseJTI(rest)
}

// clientToken checks a verified client_credentials token's jti on the
// service's clock: not expired, not revoked, its client still there
// with the grant. It returns the client and the token's expiry; any
// failure is the same refusal.
func (p *OIDCStorage) clientToken(ctx context.Context, jti, subject string) (*store.OIDCClient, time.Time, error) {
	refused := errors.New("invalid access token")
	cid, exp, ok := parseClientJTI(jti)
	if !ok || cid != subject || !p.s.now().Before(exp) {
		return nil, time.Time{}, refused
	}
	var c *store.OIDCClient
	revoked := false
	err := p.s.db.View(ctx, func(tx store.Tx) (err error) {
		if c, err = tx.OIDCClient(p.projectID, cid); err != nil {
			return err
		}
		_, err = tx.OIDCRevokedToken(p.projectID, jti)
		if revoked = err == nil; errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return err
	})
	if err != nil || revoked || !slices.Contains(c.GrantTypes, GrantClientCredentials) {
		return nil, time.Time{}, refused
	}
	return c, exp, nil
}

// introspectClientToken answers the introspection, by client clientID,
// of a client_credentials token (clientToken's checks; only its own
// client may ask): its scope (from the token, which the provider's
// handler noted and op has verified), client_id, sub, aud, exp, iss and
// jti; no user claims.
func (p *OIDCStorage) introspectClientToken(ctx context.Context, resp *oidc.IntrospectionResponse, jti, subject, clientID string) error {
	c, exp, err := p.clientToken(ctx, jti, subject)
	if err != nil {
		return err
	}
	if c.ID != clientID {
		return errors.New("another client's token")
	}
	scope, err := notedScope(ctx, jti)
	if err != nil {
		return err
	}
	resp.Scope = scope
	resp.ClientID = c.ID
	resp.Subject = c.ID
	resp.TokenType = oidc.BearerToken
	resp.Expiration = oidc.FromTime(exp)
	resp.Issuer = p.s.OIDCIssuer(p.projectID)
	resp.JWTID = jti
	resp.Audience = []string{c.ID}
	return nil
}

// OIDCNoteToken notes in ctx (OIDCRequestContext) the token a request
// presents for introspection: op passes the storage its jti alone, and
// a client_credentials token's scopes are in the token only.
func OIDCNoteToken(ctx context.Context, token string) {
	if sc := scratchOf(ctx); sc != nil {
		sc.token = token
	}
}

// notedScope returns the scopes of the token OIDCNoteToken noted, which
// op has verified and whose jti must be jti.
func notedScope(ctx context.Context, jti string) ([]string, error) {
	sc := scratchOf(ctx)
	if sc == nil {
		return nil, errors.New("no token noted")
	}
	parts := strings.Split(sc.token, ".")
	if len(parts) != 3 {
		return nil, errors.New("no token noted")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, err
	}
	var claims struct {
		JTI   string `json:"jti"`
		Scope string `json:"scope"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil || claims.JTI != jti {
		return nil, errors.New("the noted token is not the one introspected")
	}
	return strings.Fields(claims.Scope), nil
}

// revokeClientToken denies, for client clientID, a client_credentials
// token's jti until it expires (RFC 7009); another client's token is
// refused (unauthorized_client), an expired one is no error.
func (p *OIDCStorage) revokeClientToken(tx store.Tx, jti, clientID string, now time.Time) error {
	cid, exp, ok := parseClientJTI(jti)
	if !ok || !now.Before(exp) {
		return nil
	}
	if cid != clientID {
		return errNotYourToken
	}
	return tx.PutOIDCRevokedToken(&store.OIDCRevokedToken{ProjectID: p.projectID, JTI: jti, ClientID: clientID,
		RevokedAt: now, ExpiresAt: exp})
}
