package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
	"latchkey/mail"
	"latchkey/store"
)

// Mail templates (docs/api.md, "Mail templates"): thin handlers over
// auth's use
// cases; the preview of a kind without a template renders package mail's
// built-in English.

// listTemplates is GET /admin/projects/:id/templates.
func (s *Server) listTemplates(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ts, err := s.auth.Templates(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success   bool                `json:"success"`
		Templates []auth.TemplateView `json:"templates"`
	}{true, ts})
}

// putTemplate is PUT /admin/projects/:id/templates/:kind/:locale.
func (s *Server) putTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in auth.TemplateInput
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	t, err := s.auth.PutTemplate(r.Context(), p.ByName("id"), p.ByName("kind"), p.ByName("locale"), in)
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success  bool              `json:"success"`
		Template auth.TemplateView `json:"template"`
	}{true, t})
}

// deleteTemplate is DELETE /admin/projects/:id/templates/:kind/:locale:
// the locale falls back again, in the end to the built-in.
func (s *Server) deleteTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := s.auth.DeleteTemplate(r.Context(), p.ByName("id"), p.ByName("kind"), p.ByName("locale")); err != nil {
		return err
	}
	return ok(w, nil)
}

// previewTemplate is POST .../templates/:kind/:locale/preview: the draft
// in the body (any of subject, text, html) or else what a user asking for
// the locale receives, rendered on sample data.
func (s *Server) previewTemplate(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in auth.TemplateInput
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	pv, err := s.auth.PreviewTemplate(r.Context(), p.ByName("id"), p.ByName("kind"), p.ByName("locale"), in)
	if err != nil {
		return err
	}
	var locale *string
	if !pv.BuiltIn {
		locale = &pv.Locale
	}
	return ok(w, struct {
		Success bool    `json:"success"`
		Subject string  `json:"subject"`
		Text    string  `json:"text"`
		HTML    string  `json:"html"`
		Locale  *string `json:"locale"`
		BuiltIn bool    `json:"builtIn"`
	}{true, pv.Subject, pv.Text, pv.HTML, locale, pv.BuiltIn})
}

// BuiltInMail renders the built-in wording of a mail (package mail) for
// the service's template previews: auth.Config.BuiltInMail.
func BuiltInMail(kind, to string, c store.MailContent) (auth.Rendered, error) {
	m, err := mail.Render(kind, to, "", c)
	if err != nil {
		return auth.Rendered{}, err
	}
	return auth.Rendered{Subject: m.Subject, Text: m.Text, HTML: m.HTML}, nil
}
