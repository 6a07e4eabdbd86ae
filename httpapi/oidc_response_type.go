package httpapi

import (
	"net/http"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// oidcResponseTypeRefused answers an authorization request whose
// response_type is not code (an implicit or hybrid flow, "none", an
// unknown type) with the error redirect RFC 6749 asks for (section
// 4.1.2.1: unsupported_response_type, with state and iss) once its
// client and redirect URI are known: op checked the redirect URI
// against the response type, so such a request got the page that says
// the redirect URI is not registered, which it is. The redirect goes
// where op puts an answer of that type (the fragment for the types
// with an ID token, else the query, or as response_mode asks); it
// returns false, having answered nothing, for response_type code or
// none given (op's invalid_request).
func (s *Server) oidcResponseTypeRefused(w http.ResponseWriter, r *http.Request, p *projectOP, redirect string) bool {
	rt := authorizeParam(r, "response_type")
	if rt == "" || rt == string(oidc.ResponseTypeCode) {
		return false
	}
	mode := oidc.ResponseMode(authorizeParam(r, "response_mode"))
	req := &oidc.AuthRequest{RedirectURI: redirect, State: authorizeParam(r, "state"), ResponseType: oidc.ResponseType(rt), ResponseMode: mode}
	if mode == oidc.ResponseModeFormPost {
		req.ResponseMode = oidc.ResponseModeQuery // the query formPostWriter posts
	}
	noStore(w)
	op.AuthRequestError(s.formPostAnswers(w, r, p.id, string(mode), redirect), r, req, errUnsupportedResponseType(), p.lk)
	return true
}

// errUnsupportedResponseType is the refusal of a response type other
// than code (a new value each time: op sets the state on it).
func errUnsupportedResponseType() *oidc.Error {
	return &oidc.Error{ErrorType: "unsupported_response_type",
		Description: "Only the authorization code flow is offered: response_type must be code."}
}
