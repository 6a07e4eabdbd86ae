package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
	"latchkey/webhook"
)

// The dashboard's integrations of a project: its webhooks (read-only:
// they belong to the app's API keys) with their deliveries, and its
// external methods.

// deliveryPageSize is how many delivery attempts a page shows.
const deliveryPageSize = 50

// dashWebhooks lists a project's webhooks of both modes, each with its
// newest delivery attempt; never a secret.
func (s *Server) dashWebhooks(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	proj, err := s.auth.Project(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	hooks, err := s.hooks.AdminSummaries(r.Context(), proj.ID)
	if err != nil {
		return webhookErr(err)
	}
	page.Title, page.Tab = "Webhooks · "+proj.Name, "webhooks"
	return s.show(w, page, "webhooks.html", struct {
		dashPage
		Project  auth.ProjectView
		Webhooks []webhook.AdminSummary
		Max      int
	}{page, s.auth.ViewProject(proj), hooks, webhook.MaxPerProject})
}

// dashDeliveries shows a page of one webhook's delivery attempts,
// newest first, with a link to older ones.
func (s *Server) dashDeliveries(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	proj, err := s.auth.Project(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	before := r.URL.Query().Get("before")
	ds, err := s.hooks.AdminDeliveries(r.Context(), proj.ID, p.ByName("hook"), before, deliveryPageSize)
	if err != nil {
		return webhookErr(err)
	}
	var older string
	if ds.NextCursor != nil {
		older = projectPath(proj.ID, "webhooks", ds.Webhook.ID) + "?" + url.Values{"before": {*ds.NextCursor}}.Encode()
	}
	page.Title, page.Tab = "Deliveries · "+proj.Name, "webhooks"
	return s.show(w, page, "deliveries.html", struct {
		dashPage
		Project auth.ProjectView
		Page    webhook.DeliveryPage
		Older   string
		Paged   bool
	}{page, s.auth.ViewProject(proj), ds, older, before != ""})
}

// dashMethods lists a project's external methods with a form to
// register one; right after a registration it shows the new secret,
// the only time it is ever shown.
func (s *Server) dashMethods(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	proj, err := s.auth.Project(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	ms, err := s.auth.Methods(r.Context(), proj.ID)
	if err != nil {
		return err
	}
	page.Title, page.Tab = "External methods · "+proj.Name, "methods"
	return s.show(w, page, "methods.html", struct {
		dashPage
		Project     auth.ProjectView
		Methods     []auth.MethodView
		New         auth.ShownOnce
		CallbackURL string
		Method      string
		Pattern     string
	}{page, s.auth.ViewProject(proj), ms, s.dashSess.takeOnce(r.Context(), page.sid, "method:"+proj.ID),
		s.auth.BaseURL() + "/api/v1/external-auth/callback/", r.PostForm.Get("method"), r.PostForm.Get("pattern")})
}

// dashCreateMethod registers an external method and redirects to the
// methods page, which shows its secret once.
func (s *Server) dashCreateMethod(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	m, err := s.auth.CreateMethod(r.Context(), id, r.PostForm.Get("method"), r.PostForm.Get("pattern"))
	if err != nil {
		return refused(page, "new-method", err, func(page dashPage) error { return s.dashMethods(w, r, p, page) })
	}
	if err := s.dashSess.setOnce(r.Context(), page.sid, auth.ShownOnce{Page: "method:" + id, Label: m.Method, Secret: m.Secret}); err != nil {
		return err
	}
	return s.done(w, r, page, projectPath(id, "methods")+"#secret-notice", "")
}

// projectMethod returns project id's external method mid (404
// EXTERNAL_METHOD_NOT_FOUND when the project has none).
func (s *Server) projectMethod(ctx context.Context, id, mid string) (auth.MethodView, error) {
	ms, err := s.auth.Methods(ctx, id)
	if err != nil {
		return auth.MethodView{}, err
	}
	for _, m := range ms {
		if m.ID == mid {
			return m, nil
		}
	}
	return auth.MethodView{}, auth.ErrMethodNotFound
}

func (s *Server) confirmDisableMethod(r *http.Request, p httprouter.Params) (confirmation, error) {
	m, err := s.projectMethod(r.Context(), p.ByName("id"), p.ByName("method"))
	if err != nil {
		return confirmation{}, err
	}
	return confirmation{
		Heading: "Disable external method " + m.Method + "?",
		Facts:   []fact{{"Method", m.Method}, {"Pattern", m.Pattern}, {"Status", m.Status}, {"Created", m.CreatedAt}},
		Effects: []string{"Sign-ins through this method are refused (403 INACTIVE_REGISTRATION) until it is enabled again; its secret stays the same."},
		Button:  "Disable method", Cancel: projectPath(p.ByName("id"), "methods"),
	}, nil
}

func (s *Server) dashDisableMethod(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	return s.setMethodStatus(w, r, p, page, "inactive", "disabled")
}

func (s *Server) dashEnableMethod(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	return s.setMethodStatus(w, r, p, page, "active", "enabled")
}

func (s *Server) setMethodStatus(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage, status, done string) error {
	id := p.ByName("id")
	m, err := s.projectMethod(r.Context(), id, p.ByName("method"))
	if err != nil {
		return err
	}
	if _, err := s.auth.SetMethodStatus(r.Context(), m.ID, status); err != nil {
		return err
	}
	return s.done(w, r, page, projectPath(id, "methods"), "Method "+m.Method+" "+done+".")
}
