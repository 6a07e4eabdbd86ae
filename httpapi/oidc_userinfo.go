package httpapi

import (
	"net/http"
	"strings"
	"sync"

	"github.com/rs/cors"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The providers' userinfo endpoint (OpenID Connect Core 5.3), served by
// latchkey ahead of op's router: a relying party may call it on every
// request of its own, and op's path (its router, a full parse and
// signature check of the token, its storage calls) cost several times
// a session check. auth.OIDCStorage.Userinfo verifies a token the first
// time with op's own verifier and remembers it (docs/performance.md).
// Its preflight (OPTIONS) stays with op.

// oidcCORSOnce holds the handler of oidcCORS, the providers' CORS
// policy, applied to userinfo's answers as op's router applies it to the
// others, and to registration (a script of any origin registers without
// credentials, as the token endpoint does). It is made at first use,
// with a sync.Once rather than sync.OnceValue: a generic's type
// dictionary would make the linker keep every exported method of
// cors.Cors (text/template's method calls keep every exported method of
// a type an interface may hold).
var oidcCORSOnce struct {
	sync.Once
	c *cors.Cors
}

// oidcCORSPolicy returns the providers' CORS handler.
func oidcCORSPolicy() *cors.Cors {
	oidcCORSOnce.Do(func() { oidcCORSOnce.c = cors.New(oidcCORS) })
	return oidcCORSOnce.c
}

// oidcUserinfo answers GET and POST <issuer>/userinfo: the claims of the
// access token sent as a Bearer Authorization header, or else as the
// form's (or query's) access_token, as op reads it; any refusal is 401
// with WWW-Authenticate: Bearer error="invalid_token" (RFC 6750).
func (s *Server) oidcUserinfo(w http.ResponseWriter, r *http.Request, p *projectOP) {
	oidcCORSPolicy().HandlerFunc(w, r)
	ctx := r.Context()
	body, ok, err := p.storage.Userinfo(ctx, userinfoToken(r), func() *op.AccessTokenVerifier { return p.provider.AccessTokenVerifier(ctx) })
	if err != nil {
		writeOIDCUnavailable(w) // the store's failure
		return
	}
	if !ok {
		h := w.Header()
		h.Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"invalid_token","error_description":"The access token is not valid."}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// userinfoToken returns the request's access token: from a Bearer
// Authorization header (the scheme in any case), else from the form's
// access_token; "" without one.
func userinfoToken(r *http.Request) string {
	const bearer = "Bearer "
	if h := r.Header.Get("Authorization"); len(h) >= len(bearer) && strings.EqualFold(h[:len(bearer)], bearer) {
		return h[len(bearer):]
	}
	if r.ParseForm() != nil {
		return ""
	}
	return r.Form.Get("access_token")
}
