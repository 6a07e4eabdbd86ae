package httpapi

import (
	"net/http"
	"strings"
)

// The providers' token checks (docs/oidc.md): refresh is op's token
// endpoint; revocation (RFC 7009, /revoke) and introspection (RFC 7662,
// /oauth/introspect) are op's handlers over auth.OIDCStorage. op
// answers an introspection whose client it cannot authenticate with a
// text/plain 401; clientErrorWriter makes it the RFC 6749 answer.

// clientErrorWriter answers op's text/plain 401 of an unauthenticated
// introspection as RFC 6749 (section 5.2) has it: JSON invalid_client
// with WWW-Authenticate: Basic. Other answers pass as they are.
type clientErrorWriter struct {
	http.ResponseWriter
	refused bool
}

// WriteHeader replaces a refusal.
func (c *clientErrorWriter) WriteHeader(status int) {
	h := c.Header()
	if status != http.StatusUnauthorized || strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		c.ResponseWriter.WriteHeader(status)
		return
	}
	c.refused = true
	h.Del("Content-Length")
	h.Set("WWW-Authenticate", `Basic realm="introspection"`)
	h.Set("Content-Type", "application/json") // no-store: serveOIDC's, as for every introspection
	c.ResponseWriter.WriteHeader(http.StatusUnauthorized)
	c.ResponseWriter.Write([]byte(`{"error":"invalid_client","error_description":"Introspection is for confidential clients, authenticated with their secret (HTTP Basic or client_secret_post)."}`))
}

// Write drops op's own body of a refusal.
func (c *clientErrorWriter) Write(p []byte) (int, error) {
	if c.refused {
		return len(p), nil
	}
	return c.ResponseWriter.Write(p)
}
