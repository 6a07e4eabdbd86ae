package httpapi

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// The dashboard's page of a project's OAuth / OpenID Connect providers:
// the list, a form to add one, and removal behind a confirmation.

func (s *Server) dashProviderRoutes() {
	r := s.router
	r.GET("/admin/projects/:id/providers", s.dash(s.dashProviders))
	r.POST("/admin/projects/:id/providers", s.dash(s.dashAddProvider))
	s.dashConfirmed("/admin/projects/:id/providers/:name/remove", s.confirmRemoveProvider, s.dashRemoveProvider)
}

func (s *Server) dashProviders(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	proj, err := s.auth.Project(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	ps, err := s.auth.Providers(r.Context(), proj.ID)
	if err != nil {
		return err
	}
	page.Title, page.Tab = "Sign-in providers · "+proj.Name, "providers"
	f := r.PostForm
	return s.show(w, page, "providers.html", struct {
		dashPage
		Project                              auth.ProjectView
		Providers                            []auth.ProviderView
		CallbackURL                          string
		Types                                []string
		Type, Name, ClientID, Issuer, Scopes string
		ResponseMode                         string
	}{page, s.auth.ViewProject(proj), ps, s.auth.BaseURL() + auth.OAuthCallbackPath,
		[]string{"google", "github", "microsoft", "apple", "oidc"},
		f.Get("type"), f.Get("name"), f.Get("clientId"), f.Get("issuer"), f.Get("scopes"), f.Get("responseMode")})
}

func (s *Server) dashAddProvider(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	f := r.PostForm
	in := auth.ProviderInput{Name: strings.TrimSpace(f.Get("name")), Type: f.Get("type"), ClientID: strings.TrimSpace(f.Get("clientId")),
		ClientSecret: strings.TrimSpace(f.Get("clientSecret")), Issuer: strings.TrimSpace(f.Get("issuer")),
		Scopes:       strings.FieldsFunc(f.Get("scopes"), func(r rune) bool { return r == ' ' || r == ',' }),
		ResponseMode: f.Get("responseMode")}
	v, err := s.auth.AddProvider(r.Context(), id, in)
	if err != nil {
		return refused(page, "new-provider", err, func(page dashPage) error { return s.dashProviders(w, r, p, page) })
	}
	return s.done(w, r, page, projectPath(id, "providers"), "Provider "+v.Name+" added.")
}

// projectProvider returns project id's provider name (404
// PROVIDER_NOT_FOUND when it has none).
func (s *Server) projectProvider(r *http.Request, id, name string) (auth.ProviderView, error) {
	ps, err := s.auth.Providers(r.Context(), id)
	if err != nil {
		return auth.ProviderView{}, err
	}
	for _, v := range ps {
		if v.Name == name {
			return v, nil
		}
	}
	return auth.ProviderView{}, auth.ErrProviderNotFound
}

func (s *Server) confirmRemoveProvider(r *http.Request, p httprouter.Params) (confirmation, error) {
	v, err := s.projectProvider(r, p.ByName("id"), p.ByName("name"))
	if err != nil {
		return confirmation{}, err
	}
	return confirmation{
		Heading: "Remove sign-in provider " + v.Name + "?",
		Facts:   []fact{{"Name", v.Name}, {"Type", v.Type}, {"Client ID", v.ClientID}, {"Created", v.CreatedAt}},
		Effects: []string{"Users can no longer sign in with it; sign-ins already started fail at the callback. Its users and their sessions stay. Adding it again needs the client secret."},
		Button:  "Remove provider", Cancel: projectPath(p.ByName("id"), "providers"),
	}, nil
}

func (s *Server) dashRemoveProvider(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id, name := p.ByName("id"), p.ByName("name")
	if err := s.auth.DeleteProvider(r.Context(), id, name); err != nil {
		return err
	}
	return s.done(w, r, page, projectPath(id, "providers"), "Provider "+name+" removed.")
}
