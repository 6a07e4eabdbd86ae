package auth

import (
	"context"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// OIDCStorage is one project's storage for its OpenID provider
// (zitadel/oidc's op.Storage): every method is scoped to its project, so
// projects never share keys, clients, codes or tokens by construction.
// So far it serves what discovery and the JWKS need (the signing keys);
// the methods of the flows (authorization requests, codes, tokens,
// clients, user info) answer a server error until they are built.
type OIDCStorage struct {
	s         *Service
	projectID string
}

var _ op.Storage = (*OIDCStorage)(nil)

// OIDCStorage returns projectID's provider storage. It does not check
// that the project exists: its calls do.
func (s *Service) OIDCStorage(projectID string) *OIDCStorage {
	return &OIDCStorage{s: s, projectID: projectID}
}

// OIDCSignatureAlgorithms are the algorithms of the providers' signing
// keys, in the order discovery lists them.
var OIDCSignatureAlgorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256}

// oidcSigningKey is an op.SigningKey.
type oidcSigningKey struct{ k *OIDCSigningKey }

func (k oidcSigningKey) SignatureAlgorithm() jose.SignatureAlgorithm {
	return jose.SignatureAlgorithm(k.k.Alg)
}
func (k oidcSigningKey) Key() any   { return k.k.Private }
func (k oidcSigningKey) ID() string { return k.k.ID }

// oidcPublicKey is an op.Key of the JWKS.
type oidcPublicKey struct{ k OIDCPublicKey }

func (k oidcPublicKey) ID() string                         { return k.k.ID }
func (k oidcPublicKey) Algorithm() jose.SignatureAlgorithm { return jose.SignatureAlgorithm(k.k.Alg) }
func (k oidcPublicKey) Use() string                        { return "sig" }
func (k oidcPublicKey) Key() any                           { return k.k.Key }

// SigningKey returns the project's active RS256 key (making the
// project's keys on first use). The ID token of a client that asks for
// ES256 will be signed with the other key once the token flows are
// built.
func (p *OIDCStorage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	set, err := p.s.OIDCKeys(ctx, p.projectID)
	if err != nil {
		return nil, err
	}
	return oidcSigningKey{set.Active[AlgRS256]}, nil
}

// SignatureAlgorithms returns RS256 and ES256: discovery's
// id_token_signing_alg_values_supported.
func (p *OIDCStorage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return OIDCSignatureAlgorithms, nil
}

// KeySet returns the public keys of the project's JWKS (making the
// project's keys on first use): the active keys, then the retired keys
// still published.
func (p *OIDCStorage) KeySet(ctx context.Context) ([]op.Key, error) {
	set, err := p.s.OIDCKeys(ctx, p.projectID)
	if err != nil {
		return nil, err
	}
	out := make([]op.Key, 0, len(set.Published))
	for _, k := range set.Published {
		out = append(out, oidcPublicKey{k})
	}
	return out, nil
}

// Health reports whether the store is usable.
func (p *OIDCStorage) Health(ctx context.Context) error { return p.s.db.Usable(ctx) }

// errNotYet answers the calls of the flows not built yet: op turns it
// into a server_error answer.
func errNotYet() error {
	return oidc.ErrServerError().WithDescription("This endpoint is not available yet.")
}

// The flows' methods, not built yet.

// CreateAuthRequest is not available yet.
func (p *OIDCStorage) CreateAuthRequest(context.Context, *oidc.AuthRequest, string) (op.AuthRequest, error) {
	return nil, errNotYet()
}

// AuthRequestByID is not available yet.
func (p *OIDCStorage) AuthRequestByID(context.Context, string) (op.AuthRequest, error) {
	return nil, errNotYet()
}

// AuthRequestByCode is not available yet.
func (p *OIDCStorage) AuthRequestByCode(context.Context, string) (op.AuthRequest, error) {
	return nil, errNotYet()
}

// SaveAuthCode is not available yet.
func (p *OIDCStorage) SaveAuthCode(context.Context, string, string) error { return errNotYet() }

// DeleteAuthRequest is not available yet.
func (p *OIDCStorage) DeleteAuthRequest(context.Context, string) error { return errNotYet() }

// CreateAccessToken is not available yet.
func (p *OIDCStorage) CreateAccessToken(context.Context, op.TokenRequest) (string, time.Time, error) {
	return "", time.Time{}, errNotYet()
}

// CreateAccessAndRefreshTokens is not available yet.
func (p *OIDCStorage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errNotYet()
}

// TokenRequestByRefreshToken is not available yet.
func (p *OIDCStorage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errNotYet()
}

// TerminateSession is not available yet.
func (p *OIDCStorage) TerminateSession(context.Context, string, string) error { return errNotYet() }

// RevokeToken is not available yet.
func (p *OIDCStorage) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrServerError().WithDescription("This endpoint is not available yet.")
}

// GetRefreshTokenInfo is not available yet.
func (p *OIDCStorage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

// GetClientByClientID is not available yet.
func (p *OIDCStorage) GetClientByClientID(context.Context, string) (op.Client, error) {
	return nil, errNotYet()
}

// AuthorizeClientIDSecret is not available yet.
func (p *OIDCStorage) AuthorizeClientIDSecret(context.Context, string, string) error {
	return errNotYet()
}

// SetUserinfoFromScopes is not available yet.
func (p *OIDCStorage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return errNotYet()
}

// SetUserinfoFromToken is not available yet.
func (p *OIDCStorage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errNotYet()
}

// SetIntrospectionFromToken is not available yet.
func (p *OIDCStorage) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errNotYet()
}

// GetPrivateClaimsFromScopes is not available yet.
func (p *OIDCStorage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, errNotYet()
}

// GetKeyByIDAndClientID always fails: latchkey takes no client key
// (no private_key_jwt client authentication, no JWT bearer grant).
func (p *OIDCStorage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, oidc.ErrInvalidClient().WithDescription("Client keys are not accepted.")
}

// ValidateJWTProfileScopes always fails: there is no JWT bearer grant.
func (p *OIDCStorage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, oidc.ErrUnauthorizedClient().WithDescription("The JWT bearer grant is not supported.")
}
