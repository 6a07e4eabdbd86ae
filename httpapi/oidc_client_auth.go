package httpapi

import (
	"net/http"
	"net/url"

	"github.com/zitadel/oidc/v3/pkg/oidc"
)

// clientSecretPost lets a confidential client authenticate with its
// secret in the form (client_secret_post) where op reads only HTTP
// Basic: the device authorization endpoint, the token endpoint's device
// code grant and introspection. Discovery names client_secret_post for
// the token endpoint, and a relying party that uses it there uses it at
// every endpoint (openid-client's one client authentication per
// configuration): without this, its device flow and its introspection
// were refused as unauthenticated. A request that carries both an
// Authorization header and a secret in the form keeps the header (op
// checks it); a request without a secret in the form is left alone.
func clientSecretPost(w http.ResponseWriter, r *http.Request, sub string) {
	if r.Method != http.MethodPost || r.Header.Get("Authorization") != "" {
		return
	}
	switch sub {
	case "/oauth/introspect", oidcDeviceAuthorizationPath, "/oauth/token":
	default:
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if r.ParseForm() != nil {
		return // op refuses the body as it would have
	}
	if sub == "/oauth/token" && r.PostForm.Get("grant_type") != string(oidc.GrantTypeDeviceCode) {
		return // op reads the form's secret for its other grants
	}
	id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if id == "" || secret == "" {
		return
	}
	// op unescapes Basic credentials (RFC 6749, section 2.3.1).
	r.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
}

// oidcCodeClientRefused answers 401 invalid_client to a code exchange
// whose client presents a wrong secret (HTTP Basic or in the form),
// before op looks the code up: RFC 6749 (section 4.1.3) authenticates
// the client first, and op checks the code first, so a caller without
// the secret learned whether a code it held was live. A request
// without a secret, a public client's (whose secret op ignores) or one
// that is no code exchange is left to op (false, nothing answered).
func (s *Server) oidcCodeClientRefused(w http.ResponseWriter, r *http.Request, p *projectOP) bool {
	if r.Method != http.MethodPost {
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if r.ParseForm() != nil || r.PostForm.Get("grant_type") != string(oidc.GrantTypeCode) {
		return false
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		var err1, err2 error
		id, err1 = url.QueryUnescape(id)
		secret, err2 = url.QueryUnescape(secret)
		if err1 != nil || err2 != nil {
			return false // op refuses it as it would have
		}
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if secret == "" {
		return false
	}
	ctx := r.Context()
	if c, err := p.storage.GetClientByClientID(ctx, id); err == nil && c.AuthMethod() == oidc.AuthMethodNone {
		return false // a public client's secret is no authentication: op ignores it
	}
	if p.storage.AuthorizeClientIDSecret(ctx, id, secret) == nil {
		return false
	}
	oidcCORSPolicy().HandlerFunc(w, r) // readable by a page, as op's answers are
	writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "The client's id or secret is wrong."})
	return true
}
