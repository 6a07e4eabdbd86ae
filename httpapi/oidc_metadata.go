package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
)

// oauthMetadataPath is where RFC 8414 (section 3.1) puts an issuer's
// OAuth 2.0 Authorization Server Metadata: the well-known name inserted
// between the host and the issuer's path, so /oidc/<project id>'s is
// /.well-known/oauth-authorization-server/oidc/<project id>. Clients
// that read RFC 8414 rather than OpenID Connect Discovery (MCP clients,
// openid-client with algorithm "oauth2") look there and nowhere else.
const oauthMetadataPath = "/.well-known/oauth-authorization-server" + oidcPrefix + ":project"

// oauthMetadataRoutes registers the RFC 8414 metadata of every issuer
// (and its CORS preflight, as discovery's).
func (s *Server) oauthMetadataRoutes() {
	s.router.GET(oauthMetadataPath, s.serveOAuthMetadata)
	s.router.OPTIONS(oauthMetadataPath, s.serveOAuthMetadata)
}

// serveOAuthMetadata answers the RFC 8414 metadata of a project's
// issuer: the discovery document itself (its issuer is the same, and
// RFC 8414 takes OpenID Connect Discovery's fields), or 404
// PROJECT_NOT_FOUND as the issuer's own paths.
func (s *Server) serveOAuthMetadata(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	p, err := s.projectOP(r, ps.ByName("project"))
	if err != nil {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		s.writeError(w, err)
		return
	}
	r = r.WithContext(auth.OIDCRequestContext(op.ContextWithIssuer(r.Context(), p.issuer)))
	p.discovery.ServeHTTP(s.oidcAnswerWriter(w, r, oidc.DiscoveryEndpoint), r)
}
