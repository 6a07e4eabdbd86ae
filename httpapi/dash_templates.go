package httpapi

import (
	"net/http"
	"net/url"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// The dashboard's mail templates page (docs/api.md, "Mail templates"):
// the list, and
// one form that previews a draft on sample data or saves it.

// templateForm is the template form's input, kept when it is shown
// again.
type templateForm struct {
	Kind, Locale, Subject, Text, HTML string
}

// dashTemplates lists a project's templates with the edit form; ?kind=
// and ?locale= load that template into the form.
func (s *Server) dashTemplates(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	f := templateForm{Kind: r.URL.Query().Get("kind"), Locale: r.URL.Query().Get("locale")}
	if r.Method == http.MethodPost {
		f = templateForm{r.PostForm.Get("kind"), r.PostForm.Get("locale"), r.PostForm.Get("subject"), r.PostForm.Get("text"), r.PostForm.Get("html")}
	}
	return s.showTemplates(w, r, p, page, f, nil)
}

func (s *Server) showTemplates(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage, f templateForm, preview *auth.Rendered) error {
	proj, err := s.auth.Project(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	ts, err := s.auth.Templates(r.Context(), proj.ID)
	if err != nil {
		return err
	}
	if r.Method == http.MethodGet && f.Subject == "" && f.Kind != "" {
		for _, t := range ts {
			if t.Kind == f.Kind && t.Locale == f.Locale {
				f.Subject, f.Text, f.HTML = t.Subject, t.Text, t.HTML
			}
		}
	}
	page.Title, page.Tab = "Mail templates · "+proj.Name, "templates"
	return s.show(w, page, "templates.html", struct {
		dashPage
		templateForm
		Project   auth.ProjectView
		Templates []auth.TemplateView
		Kinds     []string
		Preview   *auth.Rendered
	}{page, f, s.auth.ViewProject(proj), ts, auth.TemplateKinds, preview})
}

// dashPostTemplate previews the form's draft (do=preview) or saves it.
func (s *Server) dashPostTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	f := templateForm{r.PostForm.Get("kind"), r.PostForm.Get("locale"), r.PostForm.Get("subject"), r.PostForm.Get("text"), r.PostForm.Get("html")}
	in := auth.TemplateInput{Subject: &f.Subject, Text: &f.Text, HTML: &f.HTML}
	again := func(page dashPage) error { return s.showTemplates(w, r, p, page, f, nil) }
	if r.PostForm.Get("do") == "preview" {
		pv, err := s.auth.PreviewTemplate(r.Context(), id, f.Kind, f.Locale, in)
		if err != nil {
			return refused(page, "template", err, again)
		}
		return s.showTemplates(w, r, p, page, f, &pv.Rendered)
	}
	t, err := s.auth.PutTemplate(r.Context(), id, f.Kind, f.Locale, in)
	if err != nil {
		return refused(page, "template", err, again)
	}
	return s.done(w, r, page, projectPath(id, "templates")+"?kind="+url.QueryEscape(t.Kind)+"&locale="+url.QueryEscape(t.Locale)+"#template-form",
		"Template "+t.Kind+" "+t.Locale+" saved.")
}

func (s *Server) confirmDeleteTemplate(r *http.Request, p httprouter.Params) (confirmation, error) {
	id, kind, locale := p.ByName("id"), p.ByName("kind"), p.ByName("locale")
	ts, err := s.auth.Templates(r.Context(), id)
	if err != nil {
		return confirmation{}, err
	}
	for _, t := range ts {
		if t.Kind == kind && t.Locale == locale {
			return confirmation{
				Heading: "Delete the " + kind + " template for " + locale + "?",
				Facts:   []fact{{"Kind", kind}, {"Locale", locale}, {"Subject", t.Subject}, {"Updated", t.UpdatedAt}},
				Effects: []string{"Mail of this kind for " + locale + " falls back to its parent locale, then to the project's en, then to the built-in English."},
				Button:  "Delete template", Cancel: projectPath(id, "templates"),
			}, nil
		}
	}
	return confirmation{}, auth.ErrTemplateNotFound
}

func (s *Server) dashDeleteTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id, kind, locale := p.ByName("id"), p.ByName("kind"), p.ByName("locale")
	if err := s.auth.DeleteTemplate(r.Context(), id, kind, locale); err != nil {
		return err
	}
	return s.done(w, r, page, projectPath(id, "templates"), "Template "+kind+" "+locale+" deleted.")
}
