package httpapi

import (
	"container/list"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/julienschmidt/httprouter"
	"github.com/rs/cors"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
)

// Each project's OpenID provider, mounted under its issuer
// <base URL>/oidc/<project id> (docs/oidc.md). zitadel/oidc's op does
// the protocol: one op.Provider per project, with a static issuer, made
// on first use and kept in a bounded cache; its router serves the
// project's paths once the prefix is stripped. Only the routes that
// work are registered (explicitly, so that metrics name each and op's
// /healthz and /ready stay unexposed): so far discovery, which latchkey
// writes from op's document, and the JWKS.

// oidcPrefix starts every path of the providers.
const oidcPrefix = "/oidc/"

// maxProviders bounds the providers kept in memory (each some tens of
// KiB); the least recently used goes first.
const maxProviders = 1000

// oidcCORS is the CORS policy of the providers' endpoints: any origin,
// without credentials (no endpoint of theirs reads a cookie), so that
// a single-page app can read discovery and the keys.
var oidcCORS = cors.Options{
	AllowedOrigins: []string{"*"},
	AllowedMethods: []string{http.MethodGet, http.MethodPost},
	AllowedHeaders: []string{"Authorization", "Content-Type"},
}

// oidcRoutes registers the providers' endpoints: GET and the CORS
// preflight (OPTIONS) of each.
func (s *Server) oidcRoutes() {
	for _, p := range []string{"/oidc/:project/.well-known/openid-configuration", "/oidc/:project/keys"} {
		s.router.GET(p, s.serveOIDC)
		s.router.OPTIONS(p, s.serveOIDC)
	}
}

// projectOP is one project's provider.
type projectOP struct {
	issuer    string
	provider  *op.Provider
	storage   *auth.OIDCStorage
	handler   http.Handler // op's router, behind the stripped prefix
	discovery http.Handler // latchkey's discovery document, with CORS
}

// serveOIDC answers a provider endpoint of an existing project: 404
// PROJECT_NOT_FOUND otherwise (a deleted project's provider, still
// cached, is never reached).
func (s *Server) serveOIDC(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id := ps.ByName("project")
	p, err := s.projectOP(r, id)
	if err != nil {
		// Readable from any origin, as the answers of op's endpoints.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		s.writeError(w, err)
		return
	}
	r = r.WithContext(op.ContextWithIssuer(r.Context(), p.issuer))
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, oidc.DiscoveryEndpoint) {
		p.discovery.ServeHTTP(w, r)
		return
	}
	p.handler.ServeHTTP(w, r)
}

// projectOP returns project id's provider, when the project exists.
func (s *Server) projectOP(r *http.Request, id string) (*projectOP, error) {
	if _, err := s.auth.Project(r.Context(), id); err != nil {
		return nil, err
	}
	p, err := s.providers.get(id, func() (*projectOP, error) { return s.newProjectOP(id) })
	if err != nil {
		return nil, auth.ErrInternal.Because(err)
	}
	return p, nil
}

// newProjectOP makes project id's provider.
func (s *Server) newProjectOP(id string) (*projectOP, error) {
	issuer := s.auth.OIDCIssuer(id)
	storage := s.auth.OIDCStorage(id)
	cfg := &op.Config{
		CodeMethodS256:        true,
		AuthMethodPost:        true,
		GrantTypeRefreshToken: true,
		SupportedScopes:       auth.ProviderScopes,
	}
	corsOpts := oidcCORS
	opts := []op.Option{
		op.WithCrypto(noCrypto{}),
		op.WithCORSOptions(&corsOpts),
	}
	if strings.HasPrefix(issuer, "http://") {
		// A base URL without TLS (on loopback, for development): op
		// refuses such an issuer unless told.
		opts = append(opts, op.WithAllowInsecure())
	}
	prov, err := op.NewProvider(cfg, storage, op.StaticIssuer(issuer), opts...)
	if err != nil {
		return nil, err
	}
	p := &projectOP{issuer: issuer, provider: prov, storage: storage,
		handler: http.StripPrefix(oidcPrefix+id, op.CreateRouter(prov))}
	p.discovery = cors.New(corsOpts).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.oidcDiscovery(w, r, p)
	}))
	return p, nil
}

// oidcClaims are the claims the providers' tokens and user info carry.
var oidcClaims = []string{"iss", "sub", "aud", "azp", "exp", "iat", "auth_time", "nonce", "sid", "amr", "acr",
	"email", "email_verified", "name", "given_name", "preferred_username", "groups"}

// oidcDiscovery writes the project's discovery document: op's, with
// what latchkey offers instead of op's defaults. op lists the implicit
// flow and the JWT bearer grant, which latchkey does not offer, PKCE's
// plain method, which it refuses, and has no field for RFC 9207's
// issuer in authorization responses, which latchkey adds.
func (s *Server) oidcDiscovery(w http.ResponseWriter, r *http.Request, p *projectOP) {
	cfg := op.CreateDiscoveryConfig(r.Context(), p.provider, p.storage)
	cfg.ScopesSupported = auth.ProviderScopes
	cfg.ResponseTypesSupported = []string{string(oidc.ResponseTypeCode)}
	cfg.ResponseModesSupported = []string{"query", "form_post"}
	// Only the authorization and token endpoints, which discovery
	// requires, are named before they are served; the others, and the
	// grants beyond the code, join the document with their flows.
	cfg.GrantTypesSupported = []oidc.GrantType{oidc.GrantTypeCode}
	cfg.UserinfoEndpoint, cfg.IntrospectionEndpoint, cfg.RevocationEndpoint = "", "", ""
	cfg.EndSessionEndpoint, cfg.DeviceAuthorizationEndpoint = "", ""
	cfg.SubjectTypesSupported = []string{"public"}
	cfg.CodeChallengeMethodsSupported = []oidc.CodeChallengeMethod{oidc.CodeChallengeMethodS256}
	cfg.TokenEndpointAuthMethodsSupported = []oidc.AuthMethod{oidc.AuthMethodNone, oidc.AuthMethodBasic, oidc.AuthMethodPost}
	cfg.TokenEndpointAuthSigningAlgValuesSupported = nil
	cfg.IntrospectionEndpointAuthMethodsSupported = nil
	cfg.IntrospectionEndpointAuthSigningAlgValuesSupported = nil
	cfg.RevocationEndpointAuthMethodsSupported = nil
	cfg.RevocationEndpointAuthSigningAlgValuesSupported = nil
	cfg.RequestObjectSigningAlgValuesSupported = nil
	cfg.RequestParameterSupported = false
	cfg.CheckSessionIframe = ""
	cfg.ClaimsSupported = oidcClaims
	raw, err := json.Marshal(cfg)
	if err != nil {
		s.writeError(w, auth.ErrInternal.Because(err))
		return
	}
	doc := map[string]any{}
	if err := json.Unmarshal(raw, &doc); err != nil {
		s.writeError(w, auth.ErrInternal.Because(err))
		return
	}
	doc["authorization_response_iss_parameter_supported"] = true
	writeJSON(w, http.StatusOK, doc)
}

// noCrypto is the providers' op.Crypto until the token flows are
// built: nothing is encrypted or decrypted (op's default would use a
// key of zeros).
type noCrypto struct{}

func (noCrypto) Encrypt(string) (string, error) { return "", errors.New("oidc: no tokens yet") }
func (noCrypto) Decrypt(string) (string, error) { return "", errors.New("oidc: no tokens yet") }

// oidcProviders is the cache of providers by project id: at most
// maxProviders, the least recently used dropped first. A provider's
// configuration depends only on its project's id and the base URL, so
// a cached one never goes stale.
type oidcProviders struct {
	mu    sync.Mutex
	max   int
	byID  map[string]*list.Element
	order *list.List // of *cachedOP, most recently used first
}

// cachedOP is an entry of oidcProviders.
type cachedOP struct {
	id string
	op *projectOP
}

// get returns project id's provider, made by build on first use.
func (c *oidcProviders) get(id string, build func() (*projectOP, error)) (*projectOP, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID, c.order = map[string]*list.Element{}, list.New()
	}
	if e, ok := c.byID[id]; ok {
		c.order.MoveToFront(e)
		return e.Value.(*cachedOP).op, nil
	}
	p, err := build()
	if err != nil {
		return nil, err
	}
	c.byID[id] = c.order.PushFront(&cachedOP{id: id, op: p})
	limit := c.max
	if limit <= 0 {
		limit = maxProviders
	}
	for c.order.Len() > limit {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, last.Value.(*cachedOP).id)
	}
	return p, nil
}

// len returns how many providers are kept.
func (c *oidcProviders) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID)
}
