package auth

import (
	"context"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// OIDCStorage is one project's storage for its OpenID provider
// (zitadel/oidc's op.Storage): every method is scoped to its project, so
// projects never share keys, clients, codes or tokens by construction.
// It serves the authorization code flow (oidc_flow.go), refresh tokens,
// revocation and introspection (oidc_refresh.go), the device flow
// (oidc_device.go) and the keys; the
// methods of the flows not built yet (end-session) answer an error.
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

// SigningKey returns the project's active key that signs ID tokens
// (making the project's keys on first use): the ES256 key for a client
// whose idTokenAlg is ES256, the RS256 key otherwise. op asks for the
// client (GetClientByClientID) before it signs an ID token in the same
// request, which notes the client's algorithm in the request's context
// (OIDCRequestContext).
func (p *OIDCStorage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	set, err := p.s.OIDCKeys(ctx, p.projectID)
	if err != nil {
		return nil, err
	}
	alg := AlgRS256
	if sc := scratchOf(ctx); sc != nil && sc.idTokenAlg == AlgES256 {
		alg = AlgES256
	}
	return oidcSigningKey{set.Active[alg]}, nil
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
// into a server_error answer (their endpoints are not routed, so no
// request reaches them).
func errNotYet() error {
	return oidc.ErrServerError().WithDescription("This endpoint is not available yet.")
}

// TerminateSession is not available yet.
func (p *OIDCStorage) TerminateSession(context.Context, string, string) error { return errNotYet() }

// GetPrivateClaimsFromScopes adds nothing: it serves only op's own JWT
// access tokens, which latchkey does not use (its access tokens are
// minted by CreateAccessToken).
func (p *OIDCStorage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
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
