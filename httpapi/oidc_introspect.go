package httpapi

import (
	"net/http"

	"latchkey/auth"
)

// oidcIntrospectRefresh answers the introspection (RFC 7662) of a
// refresh token, which op cannot (it introspects only its JWTs): the
// client authenticated with its secret by HTTP Basic as op asks there
// (else 401 invalid_client), then auth's answer. It returns false,
// having answered nothing, when the token is not of a refresh token's
// form: op answers it.
func (s *Server) oidcIntrospectRefresh(w http.ResponseWriter, r *http.Request, p *projectOP) bool {
	token := r.PostForm.Get("token")
	if !auth.OIDCIsRefreshToken(token) {
		return false
	}
	ctx := r.Context()
	id, secret, ok := basicClient(r)
	if !ok || id == "" || secret == "" || p.storage.AuthorizeClientIDSecret(ctx, id, secret) != nil {
		(&clientErrorWriter{ResponseWriter: w}).WriteHeader(http.StatusUnauthorized)
		return true
	}
	resp, err := p.storage.IntrospectRefreshToken(ctx, id, token)
	if err != nil { // no-store: serveOIDC's, as for every introspection
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error",
			"error_description": "The token could not be checked; retry."})
		return true
	}
	writeJSON(w, http.StatusOK, resp)
	return true
}
