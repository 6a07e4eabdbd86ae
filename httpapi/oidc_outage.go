package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"latchkey/auth"
)

// A store outage on the providers' paths (docs/oidc.md, "When the store
// fails"): a request during which the store was out of reach or could
// not commit (auth.OIDCStoreOutage) is answered 503 with Retry-After,
// never with the refusal op would make of the storage's error (an
// invalid_grant would make a client drop a code or a refresh token
// that is still good; a server_error redirect would end the sign-in at
// the client). The browser's paths (authorization, its callback, the
// pages) get the error page; the others (token, user info,
// introspection, revocation, device authorization, registration,
// discovery and keys) RFC 6749's JSON error temporarily_unavailable.
// Answers that succeed pass as they are: what was acknowledged was
// stored.

// oidcUnavailableJSON is the JSON body of a 503.
var oidcUnavailableJSON, _ = json.Marshal(map[string]string{
	"error":             "temporarily_unavailable",
	"error_description": auth.ErrUnavailable.Message,
})

// outageWriter replaces a provider's refusal made during a store
// outage with a 503.
type outageWriter struct {
	http.ResponseWriter
	r        *http.Request
	s        *Server
	page     bool // a browser's path: the error page
	replaced bool
}

// oidcOutageWriter wraps w for the provider request r to path sub (of
// the issuer).
func (s *Server) oidcOutageWriter(w http.ResponseWriter, r *http.Request, sub string) http.ResponseWriter {
	page := sub == "/authorize" || sub == "/authorize/callback" || oidcPages[sub] != nil
	return &outageWriter{ResponseWriter: w, r: r, s: s, page: page}
}

// retryAfter is the Retry-After of a 503, in seconds.
var retryAfter = strconv.FormatInt(int64((auth.UnavailableRetry+time.Second-1)/time.Second), 10)

// WriteHeader passes status, or a 503 when status refuses the request
// during a store outage.
func (o *outageWriter) WriteHeader(status int) {
	if o.replaced {
		return
	}
	if !auth.OIDCStoreOutage(o.r.Context()) {
		o.ResponseWriter.WriteHeader(status)
		return
	}
	h := o.Header()
	if status == http.StatusServiceUnavailable {
		h.Set("Retry-After", retryAfter)
		o.ResponseWriter.WriteHeader(status)
		return
	}
	if !refusal(status, h.Get("Location")) {
		o.ResponseWriter.WriteHeader(status)
		return
	}
	o.replaced = true
	for _, k := range []string{"Location", "Content-Type", "Content-Length", "WWW-Authenticate"} {
		h.Del(k)
	}
	h.Set("Retry-After", retryAfter)
	if o.page {
		o.s.oidcError(o.ResponseWriter, http.StatusServiceUnavailable, auth.ErrUnavailable.Message)
		return
	}
	h.Set("Content-Type", "application/json")
	noStore(o.ResponseWriter)
	o.ResponseWriter.WriteHeader(http.StatusServiceUnavailable)
	o.ResponseWriter.Write(oidcUnavailableJSON)
}

// Write drops the body of a replaced answer.
func (o *outageWriter) Write(p []byte) (int, error) {
	if o.replaced {
		return len(p), nil
	}
	return o.ResponseWriter.Write(p)
}

// refusal reports whether an answer of status (with Location, for a
// redirect) refuses the request: an error status, or a redirect that
// carries an OAuth error to the client.
func refusal(status int, location string) bool {
	if status >= 400 {
		return true
	}
	if status < 300 || status >= 400 || location == "" {
		return false
	}
	u, err := url.Parse(location)
	if err != nil {
		return true
	}
	if u.Query().Has("error") {
		return true
	}
	f, _ := url.ParseQuery(u.Fragment)
	return f.Has("error")
}
