package httpapi

import (
	"errors"
	"mime"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// OAuth 2.0 / OpenID Connect sign-in: the app starts
// a sign-in with its API key, the browser goes to the provider and back
// to the callback, which sends it on to the app's redirectUrl with a
// one-time code, and the app's backend exchanges that code for the
// login result.
func (s *Server) oauthRoutes() {
	r := s.router
	r.POST("/api/v1/admin/projects/:id/providers", s.admin(s.createProvider))
	r.GET("/api/v1/admin/projects/:id/providers", s.admin(s.listProviders))
	r.PATCH("/api/v1/admin/projects/:id/providers/:name", s.admin(s.updateProvider))
	r.DELETE("/api/v1/admin/projects/:id/providers/:name", s.admin(s.deleteProvider))
	r.POST("/api/v1/oauth/start", s.key(s.oauthStart))
	r.GET("/api/v1/oauth/callback", s.handle(s.oauthCallback))
	r.POST("/api/v1/oauth/callback", s.handle(s.oauthCallbackForm))
	r.POST("/api/v1/oauth/exchange", s.key(s.oauthExchange))
}

type providerResponse struct {
	Success  bool              `json:"success"`
	Provider auth.ProviderView `json:"provider"`
}

func (s *Server) createProvider(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in auth.ProviderInput
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	v, err := s.auth.AddProvider(r.Context(), p.ByName("id"), in)
	if err != nil {
		return err
	}
	return ok(w, providerResponse{true, v})
}

func (s *Server) updateProvider(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in auth.ProviderPatch
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	v, err := s.auth.UpdateProvider(r.Context(), p.ByName("id"), p.ByName("name"), in)
	if err != nil {
		return err
	}
	return ok(w, providerResponse{true, v})
}

func (s *Server) listProviders(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	vs, err := s.auth.Providers(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success   bool                `json:"success"`
		Providers []auth.ProviderView `json:"providers"`
	}{true, vs})
}

func (s *Server) deleteProvider(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := s.auth.DeleteProvider(r.Context(), p.ByName("id"), p.ByName("name")); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) oauthStart(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in struct {
		Provider      string `json:"provider"`
		RedirectURL   string `json:"redirectUrl"`
		CodeChallenge string `json:"codeChallenge"`
	}
	m := s.meta(r, true)
	if err := decode(w, r, &in); err != nil {
		return s.auth.Rejected(r.Context(), c.Project, "oauth", "start", err, m)
	}
	u, err := s.auth.StartOAuth(r.Context(), c.Project, in.Provider, in.RedirectURL, in.CodeChallenge, m)
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success          bool   `json:"success"`
		AuthorizationURL string `json:"authorizationUrl"`
	}{true, u})
}

// oauthCallback is where providers send the browser back: a 302 to the
// app's redirectUrl with code= (or error=), or 400 INVALID_STATE.
func (s *Server) oauthCallback(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	return s.finishCallback(w, r, q.Get("state"), q.Get("code"), q.Get("error"))
}

// oauthCallbackForm is the callback of providers whose response mode is
// form_post (Apple): the provider's page makes the browser post code and
// state (or error; Apple adds user, which is not signed and is not
// read) as a form, and the answer is GET's. That POST comes from the
// provider's origin, cross-site by design: no Origin or Sec-Fetch-Site
// check applies (sameOrigin would refuse every one), and none is needed,
// as on GET: no cookie is read, and the state (single use, 10 minutes,
// kept server-side) is what the request must carry. A body that is not
// application/x-www-form-urlencoded is 400 VALIDATION_ERROR, one over
// MaxBodyBytes 413 PAYLOAD_TOO_LARGE; both are recorded as failed
// callbacks.
func (s *Server) oauthCallbackForm(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	reject := func(err error) error {
		return s.auth.Rejected(r.Context(), nil, "oauth", "callback", err, s.meta(r, false))
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return reject(auth.Invalid("The callback takes a form: Content-Type application/x-www-form-urlencoded."))
	}
	r.Body = http.MaxBytesReader(unwrapWriter(w), r.Body, MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return reject(auth.ErrPayloadTooLarge)
		}
		return reject(auth.Invalid("The form could not be read."))
	}
	f := r.PostForm
	return s.finishCallback(w, r, f.Get("state"), f.Get("code"), f.Get("error"))
}

// finishCallback ends a callback, GET or POST: the redirect to the app,
// or the error.
func (s *Server) finishCallback(w http.ResponseWriter, r *http.Request, state, code, providerError string) error {
	target, err := s.auth.OAuthCallback(r.Context(), state, code, providerError, s.meta(r, false))
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target, http.StatusFound)
	return nil
}

// oauthLogin is the oauth/exchange login result.
type oauthLogin struct {
	loginResult
	ExternalUserID *string `json:"externalUserId"`
	DeviceToken    string  `json:"deviceToken"`
	IsNewUser      bool    `json:"isNewUser"`
	Provider       string  `json:"provider"`
}

func (s *Server) oauthExchange(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in struct {
		Code         string `json:"code"`
		DeviceToken  string `json:"deviceToken"`
		CodeVerifier string `json:"codeVerifier"`
	}
	m := s.meta(r, true)
	if err := decode(w, r, &in); err != nil {
		return s.auth.Rejected(r.Context(), c.Project, "oauth", "exchange", err, m)
	}
	m.DeviceToken = in.DeviceToken
	l, provider, err := s.auth.OAuthExchange(r.Context(), c.Project, in.Code, in.CodeVerifier, m)
	if err != nil {
		return err
	}
	lr := newLoginResult(l)
	return ok(w, oauthLogin{lr, lr.User.ExternalUserID, l.DeviceToken, l.IsNewUser, provider})
}
