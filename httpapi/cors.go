package httpapi

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// CORS for browser calls (docs/api.md, "CORS (browser calls)"). A web
// app calls the user-JWT endpoints and the passkey ceremonies from its
// pages, on one of its project's allowed origins. Bearer tokens, not
// cookies, authenticate those calls, so no Access-Control-Allow-Credentials
// is sent. API-key and admin endpoints are for servers and send no CORS
// headers.

// CORS answer values.
const (
	corsAllowHeaders  = "Authorization, Content-Type"
	corsExposeHeaders = "Retry-After"
	corsMaxAge        = "600" // seconds a browser may reuse a preflight
)

// browserPath reports whether path is an endpoint a browser may call
// from a project's allowed origins: the user-JWT endpoints (and /me,
// which takes a JWT too) and the passkey endpoints, but not the
// by-external passkey calls, which take an API key.
func browserPath(path string) bool {
	p, ok := strings.CutPrefix(path, "/api/v1/")
	if !ok {
		return false
	}
	switch p {
	case "me", "user", "session", "sessions", "logout", "passkeys", "backup-codes/generate":
		return true
	}
	if rest, ok := strings.CutPrefix(p, "passkeys/"); ok {
		return rest != "by-external" && !strings.HasPrefix(rest, "by-external/")
	}
	for _, prefix := range []string{"user/", "sessions/", "passkey/", "totp/", "sms/"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// corsMethods are the methods a preflight may ask about.
var corsMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// preflight answers OPTIONS on a browser path. With an Origin that some
// project allows and Access-Control-Request-Method: 204 with the CORS
// headers (the token's project is checked on the request itself); from
// an origin no project allows: 403 ORIGIN_NOT_ALLOWED without them; a
// plain OPTIONS (no Origin or no requested method): 204 with Allow. A
// path with no route is the usual 404. It reports false when the path
// has no route, leaving the answer to the router.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) bool {
	var methods []string
	for _, m := range corsMethods {
		if h, _, _ := s.router.Lookup(m, r.URL.Path); h != nil {
			methods = append(methods, m)
		}
	}
	if len(methods) == 0 {
		return false
	}
	answer := func(w http.ResponseWriter, r *http.Request) { s.answerPreflight(w, r, strings.Join(methods, ", ")) }
	s.metrics.instrumentHandler("cors_preflight", http.HandlerFunc(answer)).ServeHTTP(w, r)
	return true
}

// answerPreflight is preflight's answer; methods are the path's.
func (s *Server) answerPreflight(w http.ResponseWriter, r *http.Request, methods string) {
	h := w.Header()
	origin := r.Header.Get("Origin")
	if origin == "" || r.Header.Get("Access-Control-Request-Method") == "" {
		h.Set("Allow", methods+", OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.Add("Vary", "Origin")
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	if !s.auth.OriginAllowed(r.Context(), origin, "") {
		s.writeError(w, auth.ErrOriginNotAllowed)
		return
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
}

// allowOrigin adds the CORS headers to a browser call's answer when its
// Origin is an allowed origin of projectID, the caller's project; with
// projectID "" (the token did not authenticate), of any project, so the
// page can read the 401. A request without Origin is left alone.
func (s *Server) allowOrigin(w http.ResponseWriter, r *http.Request, projectID string) {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	if s.auth.OriginAllowed(r.Context(), origin, projectID) {
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
	}
}

// browserKey is key for the passkey ceremonies a browser may run with
// its project's API key: CORS headers for the key's project.
func (s *Server) browserKey(h keyHandler) httprouter.Handle {
	return s.handle(func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		c, err := s.authKey(w, r)
		if err != nil {
			s.allowOrigin(w, r, "")
			return err
		}
		s.allowOrigin(w, r, c.Project.ID)
		return h(w, r, p, c)
	})
}
