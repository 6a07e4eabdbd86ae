package httpapi

import (
	"net/http"
	"strings"

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
// where an answer of that type goes (OAuth 2.0 Multiple Response Type
// Encoding Practices: the fragment for every type with token or
// id_token in it, else the query, or as response_mode asks); it
// returns false, having answered nothing, for response_type code or
// none given (op's invalid_request).
func (s *Server) oidcResponseTypeRefused(w http.ResponseWriter, r *http.Request, p *projectOP, redirect string) bool {
	rt := authorizeParam(r, "response_type")
	if rt == "" || rt == string(oidc.ResponseTypeCode) {
		return false
	}
	s.oidcAuthorizeError(w, r, p, redirect, errUnsupportedResponseType())
	return true
}

// oidcParamRefused answers an authorization request that passes a
// request object by reference (request_uri), by value (request) or the
// client's metadata (registration), none of which latchkey takes, with
// OpenID Connect Core's error redirect for it (section 6.2 and 7.2.1:
// request_uri_not_supported, request_not_supported,
// registration_not_supported) rather than ignoring it; false, having
// answered nothing, for a request without them.
func (s *Server) oidcParamRefused(w http.ResponseWriter, r *http.Request, p *projectOP, redirect string) bool {
	var e *oidc.Error // a new value each time: op sets the state on it
	switch {
	case authorizeParam(r, "request_uri") != "":
		e = &oidc.Error{ErrorType: "request_uri_not_supported", Description: "Request objects are not taken: send the request's parameters themselves, without request_uri."}
	case authorizeParam(r, "request") != "":
		e = &oidc.Error{ErrorType: oidc.RequestNotSupported, Description: "Request objects are not taken: send the request's parameters themselves, without request."}
	case authorizeParam(r, "registration") != "":
		e = &oidc.Error{ErrorType: "registration_not_supported", Description: "Client metadata is not taken with a request: register the client first."}
	default:
		return false
	}
	s.oidcAuthorizeError(w, r, p, redirect, e)
	return true
}

// oidcAuthorizeError redirects authorization request r of a known
// client and registered redirect URI back with refusal e, state and iss,
// where an answer of its response type goes (the fragment for every
// type with token or id_token in it, else the query, or as
// response_mode asks; posted for form_post).
func (s *Server) oidcAuthorizeError(w http.ResponseWriter, r *http.Request, p *projectOP, redirect string, e *oidc.Error) {
	rt := authorizeParam(r, "response_type")
	mode := oidc.ResponseMode(authorizeParam(r, "response_mode"))
	req := &oidc.AuthRequest{RedirectURI: redirect, State: authorizeParam(r, "state"), ResponseType: oidc.ResponseType(rt), ResponseMode: mode}
	switch {
	case mode == oidc.ResponseModeFormPost:
		req.ResponseMode = oidc.ResponseModeQuery // the query formPostWriter posts
	case mode == "" && fragmentType(rt):
		req.ResponseMode = oidc.ResponseModeFragment
	}
	noStore(w)
	op.AuthRequestError(s.formPostAnswers(w, r, p.id, string(mode), redirect), r, req, e, p.lk)
}

// errUnsupportedResponseType is the refusal of a response type other
// than code (a new value each time: op sets the state on it).
func errUnsupportedResponseType() *oidc.Error {
	return &oidc.Error{ErrorType: "unsupported_response_type",
		Description: "Only the authorization code flow is offered: response_type must be code."}
}

// fragmentType reports whether response type rt answers in the fragment
// by default: it has token or id_token among its values.
func fragmentType(rt string) bool {
	for _, v := range strings.Fields(rt) {
		if v == "token" || v == "id_token" {
			return true
		}
	}
	return false
}
