package httpapi

import (
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// The dashboard's page of a project's OAuth / OpenID Connect providers:
// the list, a form to add one, linking by address turned on (behind a
// confirmation: it widens what the provider is trusted with) or off,
// and removal behind a confirmation.

func (s *Server) dashProviderRoutes() {
	r := s.router
	r.GET("/admin/projects/:id/providers", s.dash(s.dashProviders))
	r.POST("/admin/projects/:id/providers", s.dash(s.dashAddProvider))
	s.dashConfirmed("/admin/projects/:id/providers/:name/remove", s.confirmRemoveProvider, s.dashRemoveProvider)
	s.dashConfirmed("/admin/projects/:id/providers/:name/link-by-email/on", s.confirmLinkByEmail, s.dashLinkByEmailOn)
	r.POST("/admin/projects/:id/providers/:name/link-by-email/off", s.dash(s.dashLinkByEmailOff))
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
		ResponseMode, LinkByEmail            string
	}{page, s.auth.ViewProject(proj), ps, s.auth.BaseURL() + auth.OAuthCallbackPath,
		[]string{"google", "github", "microsoft", "apple", "oidc"},
		f.Get("type"), f.Get("name"), f.Get("clientId"), f.Get("issuer"), f.Get("scopes"), f.Get("responseMode"), f.Get("linkByEmail")})
}

func (s *Server) dashAddProvider(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	f := r.PostForm
	in := auth.ProviderInput{Name: strings.TrimSpace(f.Get("name")), Type: f.Get("type"), ClientID: strings.TrimSpace(f.Get("clientId")),
		ClientSecret: strings.TrimSpace(f.Get("clientSecret")), Issuer: strings.TrimSpace(f.Get("issuer")),
		Scopes:       strings.FieldsFunc(f.Get("scopes"), func(r rune) bool { return r == ' ' || r == ',' }),
		ResponseMode: f.Get("responseMode")}
	if v := f.Get("linkByEmail"); v == "yes" || v == "no" {
		link := v == "yes"
		in.LinkByEmail = &link
	}
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

func (s *Server) confirmLinkByEmail(r *http.Request, p httprouter.Params) (confirmation, error) {
	v, err := s.projectProvider(r, p.ByName("id"), p.ByName("name"))
	if err != nil {
		return confirmation{}, err
	}
	issuer := "—"
	if v.Issuer != nil {
		issuer = *v.Issuer
	}
	return confirmation{
		Heading: "Link " + v.Name + " sign-ins by address?",
		Facts:   []fact{{"Name", v.Name}, {"Type", v.Type}, {"Issuer", issuer}},
		Effects: []string{"A first sign-in with this provider signs in the existing account of the address the provider says is verified (unless it has TOTP, SMS or a passkey), and links it. " +
			"Anyone who can get that address vouched for by this provider can then sign in to that account: turn it on only for a provider whose addresses you trust."},
		Button: "Link by address", Cancel: projectPath(p.ByName("id"), "providers"),
	}, nil
}

func (s *Server) dashLinkByEmailOn(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	return s.setLinkByEmail(w, r, p, page, true)
}

func (s *Server) dashLinkByEmailOff(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	return s.setLinkByEmail(w, r, p, page, false)
}

func (s *Server) setLinkByEmail(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage, link bool) error {
	id, name := p.ByName("id"), p.ByName("name")
	if _, err := s.auth.UpdateProvider(r.Context(), id, name, auth.ProviderPatch{LinkByEmail: &link}); err != nil {
		return err
	}
	notice := "Provider " + name + " no longer links sign-ins to existing accounts by address."
	if link {
		notice = "Provider " + name + " links first sign-ins to existing accounts by verified address."
	}
	return s.done(w, r, page, projectPath(id, "providers"), notice)
}

func (s *Server) dashRemoveProvider(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id, name := p.ByName("id"), p.ByName("name")
	if err := s.auth.DeleteProvider(r.Context(), id, name); err != nil {
		return err
	}
	return s.done(w, r, page, projectPath(id, "providers"), "Provider "+name+" removed.")
}
