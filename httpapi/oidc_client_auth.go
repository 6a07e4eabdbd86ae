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

// codeClientWriter makes a code exchange's refusal (a 400: an unknown
// or spent code, a missing verifier) 401 invalid_client when the client
// presented a wrong secret (HTTP Basic or in the form), as op answers a
// live code with a wrong secret: RFC 6749 (section 4.1.3) authenticates
// the client before its code, and op looks the code up first, so a
// caller without the secret learned whether a code it held was live.
// The secret is checked only then: an exchange that succeeds, or that op
// refuses for the client, costs no read more. A public client's secret
// (which op ignores) changes nothing.
type codeClientWriter struct {
	http.ResponseWriter
	r       *http.Request
	p       *projectOP
	refused bool
}

// codeClientWriter wraps w for a code exchange r at project p's token
// endpoint; other requests keep w.
func (s *Server) codeClientWriter(w http.ResponseWriter, r *http.Request, p *projectOP) http.ResponseWriter {
	if r.Method != http.MethodPost {
		return w
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if r.ParseForm() != nil || r.PostForm.Get("grant_type") != string(oidc.GrantTypeCode) {
		return w // op refuses a body it cannot read as it would have
	}
	return &codeClientWriter{ResponseWriter: w, r: r, p: p}
}

// WriteHeader answers a 400 of a client whose secret is wrong with 401:
// the storage's check notes the refusal, which the answer writer
// beneath writes (invalid_client, with Basic's challenge).
func (c *codeClientWriter) WriteHeader(status int) {
	if status == http.StatusBadRequest && c.wrongSecret() {
		c.refused = true
		status = http.StatusUnauthorized
	}
	c.ResponseWriter.WriteHeader(status)
}

// Write drops op's own body of a refusal made 401.
func (c *codeClientWriter) Write(b []byte) (int, error) {
	if c.refused {
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

// wrongSecret reports whether the request's client, a confidential one,
// presented a secret that is not its own.
func (c *codeClientWriter) wrongSecret() bool {
	r := c.r
	id, secret, ok := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret"), true
	if _, _, basic := r.BasicAuth(); basic {
		id, secret, ok = basicClient(r)
	}
	if !ok || secret == "" {
		return false // op refused them as it would have, or no secret came
	}
	ctx := r.Context()
	if cl, err := c.p.storage.GetClientByClientID(ctx, id); err != nil || cl.AuthMethod() == oidc.AuthMethodNone {
		return false // unknown (op said so), or a public client's secret, which op ignores
	}
	return c.p.storage.AuthorizeClientIDSecret(ctx, id, secret) != nil
}

// basicClient returns the client id and secret of r's HTTP Basic
// credentials, unescaped as RFC 6749 (section 2.3.1) has them encoded;
// false without Basic credentials or with ones that do not unescape.
func basicClient(r *http.Request) (id, secret string, ok bool) {
	id, secret, ok = r.BasicAuth()
	if !ok {
		return "", "", false
	}
	id, err1 := url.QueryUnescape(id)
	secret, err2 := url.QueryUnescape(secret)
	return id, secret, err1 == nil && err2 == nil
}
