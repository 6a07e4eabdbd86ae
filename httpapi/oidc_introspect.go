package httpapi

import (
	"net/http"
	"net/url"

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
	id, secret, ok := r.BasicAuth()
	if ok {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		ok = err1 == nil && err2 == nil && id != "" && secret != ""
	}
	if !ok || p.storage.AuthorizeClientIDSecret(ctx, id, secret) != nil {
		(&clientErrorWriter{ResponseWriter: w}).WriteHeader(http.StatusUnauthorized)
		return true
	}
	resp, err := p.storage.IntrospectRefreshToken(ctx, id, token)
	if err != nil {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "server_error",
			"error_description": "The token could not be checked; retry."})
		return true
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, resp)
	return true
}
