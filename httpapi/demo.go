package httpapi

import (
	"embed"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// The passkey demo page (GET /demo/passkeys) runs the WebAuthn browser
// ceremony against the passkey API so a developer can try passkeys on
// http://localhost. Its script calls /demo/passkeys/api/v1/..., which
// forwards a few passkey and session calls to the same /api/v1 handlers
// after refusing live-mode keys: the demo works only for test mode, and
// the server, not only the page's script, enforces it.

//go:embed ui/demo/passkeys.html ui/demo/passkeys.js
var demoFS embed.FS

// demoAPIPrefix is where the demo page's script sends its API calls.
const demoAPIPrefix = "/demo/passkeys/api/v1/"

func (s *Server) demoRoutes() {
	r := s.router
	r.GET("/demo/passkeys", demoFile("ui/demo/passkeys.html", "text/html; charset=utf-8"))
	r.GET("/demo/passkeys.js", demoFile("ui/demo/passkeys.js", "text/javascript; charset=utf-8"))
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		r.Handle(m, demoAPIPrefix+"*rest", s.demoAPI)
	}
}

// demoFile serves an embedded file of the demo page with a strict
// content security policy: scripts and fetches from this origin only.
func demoFile(name, contentType string) httprouter.Handle {
	body, err := demoFS.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return func(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		w.Write(body)
	}
}

// demoForwarded reports whether the demo may forward method and the API
// path rest (after /api/v1/): the passkey ceremonies, the session's own
// passkey list and removal, and logout.
func demoForwarded(method, rest string) bool {
	switch method {
	case http.MethodPost:
		switch rest {
		case "passkey/register/start", "passkey/register/verify", "passkey/login/start", "passkey/login/verify", "logout":
			return true
		}
	case http.MethodGet:
		return rest == "passkeys"
	case http.MethodDelete:
		id, ok := strings.CutPrefix(rest, "passkeys/")
		return ok && id != "" && id != "by-external" && !strings.Contains(id, "/")
	}
	return false
}

// demoAPI forwards the demo page's call to the API handler of the same
// path under /api/v1. A live-mode key is 403 LIVE_KEY_REFUSED; a path the
// demo does not use is 404 NOT_FOUND.
func (s *Server) demoAPI(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	rest := strings.TrimPrefix(p.ByName("rest"), "/")
	if !demoForwarded(r.Method, rest) {
		s.writeError(w, auth.ErrNotFound)
		return
	}
	if tok, _ := auth.ParseBearer(r.Header.Get("Authorization")); strings.HasPrefix(tok, auth.LivePrefix) {
		s.writeError(w, auth.ErrDemoLiveKey)
		return
	}
	fwd := r.Clone(r.Context())
	fwd.URL.Path, fwd.URL.RawPath = "/api/v1/"+rest, ""
	fwd.RequestURI = fwd.URL.RequestURI()
	s.router.ServeHTTP(w, fwd)
}
