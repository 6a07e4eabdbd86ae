package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// OAuth 2.0 / OpenID Connect sign-in (decisions.md §18): the app starts
// a sign-in with its API key, the browser goes to the provider and back
// to the callback, which sends it on to the app's redirectUrl with a
// one-time code, and the app's backend exchanges that code for the
// login result.
func (s *Server) oauthRoutes() {
	r := s.router
	r.POST("/api/v1/admin/projects/:id/providers", s.admin(s.createProvider))
	r.GET("/api/v1/admin/projects/:id/providers", s.admin(s.listProviders))
	r.DELETE("/api/v1/admin/projects/:id/providers/:name", s.admin(s.deleteProvider))
	r.POST("/api/v1/oauth/start", s.key(s.oauthStart))
	r.GET("/api/v1/oauth/callback", s.handle(s.oauthCallback))
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
		Provider    string `json:"provider"`
		RedirectURL string `json:"redirectUrl"`
	}
	m := s.meta(r, true)
	if err := decode(w, r, &in); err != nil {
		return s.auth.Rejected(r.Context(), c.Project, "oauth", "start", err, m)
	}
	u, err := s.auth.StartOAuth(r.Context(), c.Project, in.Provider, in.RedirectURL, m)
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
	target, err := s.auth.OAuthCallback(r.Context(), q.Get("state"), q.Get("code"), q.Get("error"), s.meta(r, false))
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
		Code        string `json:"code"`
		DeviceToken string `json:"deviceToken"`
	}
	m := s.meta(r, true)
	if err := decode(w, r, &in); err != nil {
		return s.auth.Rejected(r.Context(), c.Project, "oauth", "exchange", err, m)
	}
	m.DeviceToken = in.DeviceToken
	l, provider, err := s.auth.OAuthExchange(r.Context(), c.Project, in.Code, m)
	if err != nil {
		return err
	}
	lr := newLoginResult(l)
	return ok(w, oauthLogin{lr, lr.User.ExternalUserID, l.DeviceToken, l.IsNewUser, provider})
}
