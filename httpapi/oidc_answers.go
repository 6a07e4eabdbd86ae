package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
)

// The answers latchkey gives instead of op's on the providers' paths.
//
// A store outage (docs/oidc.md, "When the store fails"): a request during which the store was out of reach or could
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
//
// A refusal op rewords (auth.OIDCNotedRefusal: an unknown device code,
// which op calls access_denied; a refused refresh token, whose
// description op drops) is answered as the storage made it, when op
// refuses the request. A JSON refusal of op's own without an
// error_description (an invalid_scope at a refresh, an
// unauthorized_client) gets one that says what its code means.

// basicChallenge adds WWW-Authenticate: Basic to a 401 answering r,
// when r's client authenticated with HTTP Basic (RFC 6749, section 5.2:
// the challenge of the scheme the client used) and the answer has none.
func basicChallenge(h http.Header, r *http.Request) {
	if a := r.Header.Get("Authorization"); len(a) > 6 && strings.EqualFold(a[:6], "Basic ") && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", `Basic realm="`+op.IssuerFromContext(r.Context())+`"`)
	}
}

// noStorePath reports whether path sub of an issuer answers with tokens
// (the token endpoint, device authorization, introspection): never
// cached (RFC 6749, section 5.1), its refusals included. User info, an
// answer to a request with an Authorization header and no validator,
// is stored by no cache without being told to (RFC 9111, sections 3.5
// and 4.2.2), and is the hot path apps call on every request: it says
// nothing.
func noStorePath(sub string) bool {
	switch sub {
	case "/oauth/token", oidcDeviceAuthorizationPath, "/oauth/introspect":
		return true
	}
	return false
}

// oidcUnavailableJSON is the JSON body of a 503, made at first use.
var oidcUnavailableJSON = sync.OnceValue(func() []byte {
	body, _ := json.Marshal(map[string]string{
		"error":             "temporarily_unavailable",
		"error_description": auth.ErrUnavailable.Message,
	})
	return body
})

// answerWriter replaces a provider's refusal made during a store
// outage with a 503, and one op reworded with the storage's.
type answerWriter struct {
	http.ResponseWriter
	r        *http.Request
	s        *Server
	page     bool // a browser's path: the error page
	replaced bool
	describe bool // a JSON refusal of op's: add its description
}

// oidcAnswerWriter wraps w for the provider request r to path sub (of
// the issuer).
func (s *Server) oidcAnswerWriter(w http.ResponseWriter, r *http.Request, sub string) http.ResponseWriter {
	return &answerWriter{ResponseWriter: w, r: r, s: s, page: oidcPagePath(sub)}
}

// oidcPagePath reports whether path sub of an issuer answers a browser
// with a page (the authorization endpoint, its callback, the hosted
// pages) rather than JSON.
func oidcPagePath(sub string) bool {
	return sub == "/authorize" || sub == "/authorize/callback" || oidcPages[sub] != nil
}

// retryAfter is the Retry-After of a 503, in seconds.
var retryAfter = strconv.FormatInt(int64((auth.UnavailableRetry+time.Second-1)/time.Second), 10)

// WriteHeader passes status, or a 503 when status refuses the request
// during a store outage, or the storage's refusal.
func (o *answerWriter) WriteHeader(status int) {
	if o.replaced {
		return
	}
	if status == http.StatusUnauthorized && !o.page {
		basicChallenge(o.Header(), o.r)
	}
	if !auth.OIDCStoreOutage(o.r.Context()) {
		if e := auth.OIDCNotedRefusal(o.r.Context()); e != nil && !o.page && status >= 400 {
			o.refuse(e)
			return
		}
		o.describe = status >= 400 && !o.page && strings.HasPrefix(o.Header().Get("Content-Type"), "application/json")
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
	if o.page {
		o.s.oidcFail(o.ResponseWriter, auth.ErrUnavailable)
		return
	}
	writeOIDCUnavailable(o.ResponseWriter)
}

// writeOIDCUnavailable answers a protocol endpoint's request the store
// could not serve: 503 with Retry-After and RFC 6749's JSON error
// temporarily_unavailable.
func writeOIDCUnavailable(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Retry-After", retryAfter)
	h.Set("Content-Type", "application/json")
	noStore(w)
	w.WriteHeader(http.StatusServiceUnavailable)
	w.Write(oidcUnavailableJSON())
}

// refuse answers e (RFC 6749, section 5.2) instead of op's refusal.
func (o *answerWriter) refuse(e *oidc.Error) {
	o.replaced = true
	h := o.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "application/json")
	noStore(o.ResponseWriter)
	status := http.StatusBadRequest
	if e.ErrorType == oidc.InvalidClient {
		status = http.StatusUnauthorized
		basicChallenge(h, o.r)
	}
	raw, _ := json.Marshal(map[string]string{"error": string(e.ErrorType), "error_description": e.Description})
	o.ResponseWriter.WriteHeader(status)
	o.ResponseWriter.Write(raw)
}

// Write drops the body of a replaced answer, and describes a refusal
// of op's that says only its code.
func (o *answerWriter) Write(p []byte) (int, error) {
	if o.replaced {
		return len(p), nil
	}
	if o.describe {
		o.describe = false // op writes its JSON in one call
		if raw, ok := described(p); ok {
			if _, err := o.ResponseWriter.Write(raw); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return o.ResponseWriter.Write(p)
}

// errorWords say what an RFC 6749 error code means, for a refusal that
// came without a description.
var errorWords = map[string]string{
	"invalid_request":        "The request is missing a parameter, or one of its parameters is not valid.",
	"invalid_client":         "The client could not be authenticated.",
	"invalid_grant":          "The code, refresh token or device code is not valid (expired, used, revoked, or another client's).",
	"unauthorized_client":    "This client may not use this grant type or this endpoint.",
	"unsupported_grant_type": "This grant type is not supported.",
	"invalid_scope":          "A scope asked for is not one this client or this grant may have.",
	"access_denied":          "The request was denied.",
	"server_error":           "The server could not complete the request.",
}

// described returns the JSON refusal raw with an error_description
// when it had none; false when it needs none or is not one.
func described(raw []byte) ([]byte, bool) {
	var body map[string]any
	if json.Unmarshal(raw, &body) != nil {
		return nil, false
	}
	code, _ := body["error"].(string)
	if d, _ := body["error_description"].(string); code == "" || d != "" {
		return nil, false
	}
	words, ok := errorWords[code]
	if !ok {
		words = "The request was refused."
	}
	body["error_description"] = words
	out, err := json.Marshal(body)
	return out, err == nil
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
