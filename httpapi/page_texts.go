package httpapi

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// The texts of the hosted pages per locale (docs/api.md, "Page texts";
// docs/oidc.md, "Branding and languages"): thin handlers over auth's
// use cases.

// pageTextsAnswer is the answer of PUT and GET of one locale.
type pageTextsAnswer struct {
	Success   bool               `json:"success"`
	PageTexts auth.PageTextsView `json:"pageTexts"`
}

// listPageTexts is GET /admin/projects/:id/page-texts.
func (s *Server) listPageTexts(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ts, err := s.auth.ListPageTexts(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success   bool                 `json:"success"`
		PageTexts []auth.PageTextsView `json:"pageTexts"`
	}{true, ts})
}

// getPageTexts is GET /admin/projects/:id/page-texts/:locale.
func (s *Server) getPageTexts(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	t, err := s.auth.PageTexts(r.Context(), p.ByName("id"), p.ByName("locale"))
	if err != nil {
		return err
	}
	return ok(w, pageTextsAnswer{true, t})
}

// putPageTexts is PUT /admin/projects/:id/page-texts/:locale: the body
// is a JSON object of text keys to texts, and replaces the locale's.
func (s *Server) putPageTexts(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	body, err := readBody(w, r)
	if err != nil {
		return err
	}
	t, err := s.auth.PutPageTexts(r.Context(), p.ByName("id"), p.ByName("locale"), body)
	if err != nil {
		return err
	}
	return ok(w, pageTextsAnswer{true, t})
}

// deletePageTexts is DELETE /admin/projects/:id/page-texts/:locale: the
// locale falls back again, in the end to the built-in English.
func (s *Server) deletePageTexts(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := s.auth.DeletePageTexts(r.Context(), p.ByName("id"), p.ByName("locale")); err != nil {
		return err
	}
	return ok(w, nil)
}
