package httpapi

import (
	"container/list"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/julienschmidt/httprouter"
	"github.com/rs/cors"
	httphelper "github.com/zitadel/oidc/v3/pkg/http"
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
// /healthz and /ready stay unexposed): discovery, which latchkey writes
// from op's document, the JWKS, the authorization code flow
// (authorize, its callback, token, userinfo), refresh, revocation and
// introspection (oidc_tokens.go), dynamic client registration
// (oidc_registration.go), the device flow (oidc_device.go), the hosted
// sign-in pages (oidc_pages.go) and sign-out, RP-initiated logout at
// <issuer>/logout (oidc_logout.go, routed with the forward-auth pages).

// oidcPrefix starts every path of the providers.
const oidcPrefix = "/oidc/"

// maxProviders bounds the providers kept in memory (each some tens of
// KiB); the least recently used goes first.
const maxProviders = 1000

// oidcCORS is the CORS policy of the providers' endpoints: any origin,
// without credentials (no endpoint a script calls reads a cookie), so
// that a single-page app can read discovery and the keys, exchange its
// code and read the user info.
var oidcCORS = cors.Options{
	AllowedOrigins: []string{"*"},
	AllowedMethods: []string{http.MethodGet, http.MethodPost},
	AllowedHeaders: []string{"Authorization", "Content-Type"},
}

// oidcRoutes registers the providers' endpoints and pages. The
// endpoints a script may call cross-origin (discovery, keys, token,
// userinfo, revocation) answer their CORS preflight (OPTIONS) too.
func (s *Server) oidcRoutes() {
	for _, p := range []string{"/oidc/:project/.well-known/openid-configuration", "/oidc/:project/keys"} {
		s.router.GET(p, s.serveOIDC)
		s.router.OPTIONS(p, s.serveOIDC)
	}
	for _, p := range []string{"/oidc/:project/authorize", "/oidc/:project/userinfo"} {
		s.router.GET(p, s.serveOIDC)
		s.router.POST(p, s.serveOIDC)
	}
	s.router.OPTIONS("/oidc/:project/userinfo", s.serveOIDC)
	for _, p := range []string{"/oidc/:project/oauth/token", "/oidc/:project/revoke"} {
		s.router.POST(p, s.serveOIDC)
		s.router.OPTIONS(p, s.serveOIDC)
	}
	s.router.POST("/oidc/:project/oauth/introspect", s.serveOIDC)
	s.router.POST("/oidc/:project"+oidcDeviceAuthorizationPath, s.serveOIDC)
	s.router.OPTIONS("/oidc/:project"+oidcDeviceAuthorizationPath, s.serveOIDC)
	s.router.GET("/oidc/:project/authorize/callback", s.serveOIDC)
	s.router.POST("/oidc/:project"+oidcRegisterPath, s.serveOIDC)
	s.router.OPTIONS("/oidc/:project"+oidcRegisterPath, s.serveOIDC)
	for p := range oidcPages {
		s.router.GET("/oidc/:project"+p, s.serveOIDC)
		s.router.POST("/oidc/:project"+p, s.serveOIDC)
	}
	s.oauthMetadataRoutes() // RFC 8414, oidc_metadata.go
}

// projectOP is one project's provider.
type projectOP struct {
	id        string
	issuer    string
	provider  *op.Provider
	lk        *lkProvider // what op's handlers are built on
	storage   *auth.OIDCStorage
	handler   http.Handler // op's router, behind the stripped prefix
	discovery http.Handler // latchkey's discovery document, with CORS
	cookies   pageCookies  // how the pages' cookies are named and scoped
	origin    string       // the issuer's origin, which the pages' forms post from
}

// lkProvider is a project's op.Provider whose authorization responses
// (codes and errors, by query or form_post) carry the issuer (RFC 9207,
// against mix-up attacks): op builds every handler of its router on the
// provider it is given, and calls its Encoder for those responses only.
type lkProvider struct {
	*op.Provider
	enc httphelper.Encoder
}

// Encoder returns the encoder that adds iss.
func (p *lkProvider) Encoder() httphelper.Encoder { return p.enc }

// issEncoder is op's encoder of authorization responses plus iss.
type issEncoder struct {
	inner  httphelper.Encoder
	issuer string
}

// Encode encodes src into dst, then adds iss.
func (e issEncoder) Encode(src any, dst map[string][]string) error {
	if err := e.inner.Encode(src, dst); err != nil {
		return err
	}
	dst["iss"] = []string{e.issuer}
	return nil
}

// serveOIDC answers a provider endpoint of an existing project: 404
// PROJECT_NOT_FOUND otherwise (a deleted project's provider, still
// cached, is never reached).
func (s *Server) serveOIDC(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	id := ps.ByName("project")
	sub := strings.TrimPrefix(r.URL.Path, oidcPrefix+id)
	p, err := s.projectOP(r, id)
	if err != nil {
		// Readable from any origin, as the answers of op's endpoints.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		switch {
		case !auth.AsError(err).Is(auth.ErrUnavailable):
			s.writeError(w, err)
		case oidcPagePath(sub):
			// The store out of reach before the project is known (its
			// record not cached): the error page, as later in a sign-in.
			s.oidcFail(w, err)
		default:
			writeOIDCUnavailable(w)
		}
		return
	}
	r = r.WithContext(auth.OIDCRequestContext(op.ContextWithIssuer(r.Context(), p.issuer)))
	w = s.oidcAnswerWriter(w, r, sub) // 503 in a store outage; refusals op rewords
	clientSecretPost(w, r, sub)       // client_secret_post where op reads only Basic
	if noStorePath(sub) {
		noStore(w)
	}
	switch {
	case r.Method == http.MethodGet && sub == oidc.DiscoveryEndpoint:
		p.discovery.ServeHTTP(w, r)
	case sub == "/authorize":
		s.oidcAuthorize(pageWriterOf(w, r, p.id), r, p)
	case sub == "/authorize/callback":
		s.oidcCallback(pageWriterOf(w, r, p.id), r, p)
	case sub == oidcRegisterPath:
		s.oidcRegister(w, r, p)
	case sub == "/userinfo" && r.Method != http.MethodOptions:
		s.oidcUserinfo(w, r, p)
	case sub == "/userinfo":
		// op answers a token it cannot verify with a bare 401, and one
		// the storage refuses (revoked, its session ended) with 403:
		// RFC 6750 wants 401 and WWW-Authenticate for both.
		p.handler.ServeHTTP(&bearerErrorWriter{ResponseWriter: w}, r)
	case sub == oidcDeviceAuthorizationPath:
		s.oidcDeviceAuthorization(w, r, p)
	case sub == "/oauth/introspect":
		// op hands the storage the token's jti alone; a
		// client_credentials token's scopes are in the token.
		if r.ParseForm() == nil {
			if s.oidcIntrospectRefresh(w, r, p) {
				return
			}
			auth.OIDCNoteToken(r.Context(), r.PostForm.Get("token"))
		}
		// op refuses a client it cannot authenticate in text/plain.
		p.handler.ServeHTTP(&clientErrorWriter{ResponseWriter: w}, r)
	case oidcPages[sub] != nil:
		oidcPages[sub](s, pageWriterOf(w, r, p.id), r, p)
	case sub == "/oauth/token":
		p.handler.ServeHTTP(s.codeClientWriter(w, r, p), r)
	default:
		p.handler.ServeHTTP(w, r)
	}
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
		DeviceAuthorization:   *auth.OIDCDeviceConfig(issuer + auth.OIDCDevicePath),
	}
	corsOpts := oidcCORS
	opts := []op.Option{
		op.WithCrypto(auth.OIDCMinter{}),
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
	lk := &lkProvider{Provider: prov, enc: issEncoder{inner: prov.Encoder(), issuer: issuer}}
	p := &projectOP{id: id, issuer: issuer, provider: prov, lk: lk, storage: storage,
		handler: http.StripPrefix(oidcPrefix+id, op.CreateRouter(lk))}
	p.cookies, p.origin = pageCookiesOf(issuer), originOf(issuer)
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
	// Only the endpoints served are named (authorization, token,
	// userinfo, keys, revocation, introspection, end-session, device
	// authorization). The client_credentials grant is for confidential
	// clients that have it.
	cfg.GrantTypesSupported = []oidc.GrantType{oidc.GrantTypeCode, oidc.GrantTypeRefreshToken,
		oidc.GrantTypeDeviceCode, oidc.GrantTypeClientCredentials}
	// RP-initiated logout at <issuer>/logout (which is also the
	// forward-auth sign-out, not op's end_session), and back-channel
	// logout tokens with sid.
	cfg.EndSessionEndpoint = p.issuer + auth.OIDCLogoutPath
	cfg.BackChannelLogoutSupported, cfg.BackChannelLogoutSessionSupported = true, true
	cfg.SubjectTypesSupported = []string{"public"}
	cfg.ACRValuesSupported = []string{auth.ACRSingleFactor, auth.ACRMultiFactor}
	cfg.CodeChallengeMethodsSupported = []oidc.CodeChallengeMethod{oidc.CodeChallengeMethodS256}
	cfg.TokenEndpointAuthMethodsSupported = []oidc.AuthMethod{oidc.AuthMethodNone, oidc.AuthMethodBasic, oidc.AuthMethodPost}
	cfg.TokenEndpointAuthSigningAlgValuesSupported = nil
	// Introspection is for confidential clients, by Basic or in the
	// form (oidc_client_auth.go); revocation for every client, as the
	// token endpoint.
	cfg.IntrospectionEndpointAuthMethodsSupported = []oidc.AuthMethod{oidc.AuthMethodBasic, oidc.AuthMethodPost}
	cfg.IntrospectionEndpointAuthSigningAlgValuesSupported = nil
	cfg.RevocationEndpointAuthMethodsSupported = cfg.TokenEndpointAuthMethodsSupported
	cfg.RevocationEndpointAuthSigningAlgValuesSupported = nil
	cfg.RequestObjectSigningAlgValuesSupported = nil
	cfg.RequestParameterSupported = false
	cfg.CheckSessionIframe = ""
	cfg.ClaimsSupported = oidcClaims
	// The registration endpoint is named while the project takes
	// registrations.
	if proj, err := s.auth.Project(r.Context(), p.id); err == nil && proj.ClientRegistration == auth.ClientRegistrationOpen {
		cfg.RegistrationEndpoint = p.issuer + oidcRegisterPath
	}
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
