package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
	"latchkey/webhook"
)

func (s *Server) adminRoutes() {
	r := s.router
	r.POST("/api/v1/admin/projects", s.admin(s.createProject))
	r.GET("/api/v1/admin/projects", s.admin(s.listProjects))
	r.GET("/api/v1/admin/projects/:id", s.admin(s.getProject))
	r.PATCH("/api/v1/admin/projects/:id", s.admin(s.updateProject))
	r.DELETE("/api/v1/admin/projects/:id", s.admin(s.deleteProject))
	r.POST("/api/v1/admin/projects/:id/external-methods", s.admin(s.createMethod))
	r.GET("/api/v1/admin/projects/:id/external-methods", s.admin(s.listMethods))
	r.GET("/api/v1/admin/projects/:id/webhooks", s.admin(s.listProjectWebhooks))
	r.GET("/api/v1/admin/projects/:id/templates", s.admin(s.listTemplates))
	r.PUT("/api/v1/admin/projects/:id/templates/:kind/:locale", s.admin(s.putTemplate))
	r.DELETE("/api/v1/admin/projects/:id/templates/:kind/:locale", s.admin(s.deleteTemplate))
	r.POST("/api/v1/admin/projects/:id/templates/:kind/:locale/preview", s.admin(s.previewTemplate))
	r.GET("/api/v1/admin/projects/:id/page-texts", s.admin(s.listPageTexts))
	r.GET("/api/v1/admin/projects/:id/page-texts/:locale", s.admin(s.getPageTexts))
	r.PUT("/api/v1/admin/projects/:id/page-texts/:locale", s.admin(s.putPageTexts))
	r.DELETE("/api/v1/admin/projects/:id/page-texts/:locale", s.admin(s.deletePageTexts))
	r.POST("/api/v1/admin/projects/:id/users/import", s.admin(s.importUsers))
	r.GET("/api/v1/admin/projects/:id/users/export", s.admin(s.exportUsers))
	r.PATCH("/api/v1/admin/external-methods/:id", s.admin(s.updateMethod))
	r.POST("/api/v1/admin/keys", s.admin(s.createKey))
	r.GET("/api/v1/admin/keys", s.admin(s.listKeys))
	r.POST("/api/v1/admin/keys/:prefix/revoke", s.admin(s.revokeKey))
	r.GET("/api/v1/admin/users", s.admin(s.listUsers))
	r.PATCH("/api/v1/admin/users/:id", s.admin(s.patchAdminUser))
	r.DELETE("/api/v1/admin/users/:id", s.admin(s.deleteAdminUser))
	r.POST("/api/v1/admin/users/:id/disable", s.admin(s.disableUser))
	r.POST("/api/v1/admin/users/:id/enable", s.admin(s.enableUser))
	r.GET("/api/v1/admin/users/:id/sessions", s.admin(s.listUserSessions))
	r.POST("/api/v1/admin/users/:id/sessions/revoke", s.admin(s.revokeUserSessions))
	r.POST("/api/v1/admin/users/:id/factors/totp/reset", s.admin(s.resetTOTP))
	r.POST("/api/v1/admin/users/:id/factors/sms/reset", s.admin(s.resetSMS))
	r.GET("/api/v1/admin/events", s.admin(s.listEvents))
	r.GET("/api/v1/admin/backup", s.admin(s.backup))
}

type projectResponse struct {
	Success bool             `json:"success"`
	Project auth.ProjectView `json:"project"`
}

func (s *Server) createProject(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in auth.ProjectInput
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	p, err := s.auth.CreateProject(r.Context(), in)
	if err != nil {
		return err
	}
	return ok(w, projectResponse{true, s.auth.ViewProject(p)})
}

func (s *Server) listProjects(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	ps, err := s.auth.Projects(r.Context())
	if err != nil {
		return err
	}
	views := make([]auth.ProjectView, 0, len(ps))
	for _, p := range ps {
		views = append(views, s.auth.ViewProject(p))
	}
	return ok(w, struct {
		Success  bool               `json:"success"`
		Projects []auth.ProjectView `json:"projects"`
	}{true, views})
}

func (s *Server) getProject(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	proj, err := s.auth.Project(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, projectResponse{true, s.auth.ViewProject(proj)})
}

func (s *Server) updateProject(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in auth.ProjectInput
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	proj, err := s.auth.UpdateProject(r.Context(), p.ByName("id"), in)
	if err != nil {
		return err
	}
	return ok(w, projectResponse{true, s.auth.ViewProject(proj)})
}

func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := s.auth.DeleteProject(r.Context(), p.ByName("id")); err != nil {
		return err
	}
	return ok(w, nil)
}

type methodResponse struct {
	Success      bool            `json:"success"`
	Registration auth.MethodView `json:"registration"`
}

func (s *Server) createMethod(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in struct {
		Method  string `json:"method"`
		Pattern string `json:"pattern"`
	}
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	m, err := s.auth.CreateMethod(r.Context(), p.ByName("id"), in.Method, in.Pattern)
	if err != nil {
		return err
	}
	return ok(w, methodResponse{true, m})
}

// listMethods lists a project's external-method registrations without
// their secrets.
func (s *Server) listMethods(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	ms, err := s.auth.Methods(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success       bool              `json:"success"`
		Registrations []auth.MethodView `json:"registrations"`
	}{true, ms})
}

// listProjectWebhooks lists a project's webhooks of both modes without
// their secrets.
func (s *Server) listProjectWebhooks(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id := p.ByName("id")
	if _, err := s.auth.Project(r.Context(), id); err != nil {
		return err
	}
	hooks, err := s.hooks.AdminList(r.Context(), id)
	if err != nil {
		return webhookErr(err)
	}
	return ok(w, struct {
		Success  bool                `json:"success"`
		Webhooks []webhook.AdminView `json:"webhooks"`
	}{true, hooks})
}

func (s *Server) updateMethod(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in struct {
		Status string `json:"status"`
	}
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	m, err := s.auth.SetMethodStatus(r.Context(), p.ByName("id"), in.Status)
	if err != nil {
		return err
	}
	return ok(w, methodResponse{true, m})
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var in auth.KeyInput
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	key, k, err := s.auth.CreateKey(r.Context(), in)
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success bool         `json:"success"`
		Key     string       `json:"key"`
		APIKey  auth.KeyView `json:"apiKey"`
	}{true, key, auth.ViewKey(k)})
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	ks, err := s.auth.Keys(r.Context(), r.URL.Query().Get("projectId"))
	if err != nil {
		return err
	}
	views := make([]auth.KeyView, 0, len(ks))
	for _, k := range ks {
		views = append(views, auth.ViewKey(k))
	}
	return ok(w, struct {
		Success bool           `json:"success"`
		APIKeys []auth.KeyView `json:"apiKeys"`
	}{true, views})
}

func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := noFields(w, r); err != nil {
		return err
	}
	if err := s.auth.RevokeKey(r.Context(), p.ByName("prefix")); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	limit, err := queryInt(q.Get("limit"), auth.DefaultPageSize)
	if err != nil {
		return err
	}
	page, err := s.auth.AdminUsers(r.Context(), q.Get("projectId"), q.Get("email"), q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success    bool             `json:"success"`
		Users      []auth.AdminUser `json:"users"`
		NextCursor *string          `json:"nextCursor"`
	}{true, page.Users, page.NextCursor})
}

func (s *Server) patchAdminUser(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var in auth.UserAdminPatch
	if err := decodeStrict(w, r, &in); err != nil {
		return err
	}
	u, err := s.auth.UpdateAdminUser(r.Context(), p.ByName("id"), in)
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success bool           `json:"success"`
		User    auth.AdminUser `json:"user"`
	}{true, u})
}

// deleteAdminUser deletes a user with everything that is theirs, as
// DELETE /user does (user.deleted is emitted).
func (s *Server) deleteAdminUser(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := s.auth.AdminDeleteUser(r.Context(), p.ByName("id")); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) disableUser(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := noFields(w, r); err != nil {
		return err
	}
	if err := s.auth.SetUserDisabled(r.Context(), p.ByName("id"), true); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) enableUser(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := noFields(w, r); err != nil {
		return err
	}
	if err := s.auth.SetUserDisabled(r.Context(), p.ByName("id"), false); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) listUserSessions(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	views, err := s.auth.AdminSessions(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success  bool               `json:"success"`
		Sessions []auth.SessionView `json:"sessions"`
	}{true, views})
}

// revokeUserSessions ends every session of the user; the answer also
// says how many ended.
func (s *Server) revokeUserSessions(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := noFields(w, r); err != nil {
		return err
	}
	n, err := s.auth.AdminRevokeSessions(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success bool `json:"success"`
		Revoked int  `json:"revoked"`
	}{true, n})
}

// resetTOTP clears a user's TOTP lockout and failure count.
func (s *Server) resetTOTP(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := noFields(w, r); err != nil {
		return err
	}
	if err := s.auth.ResetTOTP(r.Context(), p.ByName("id"), s.meta(r, false)); err != nil {
		return err
	}
	return ok(w, nil)
}

// resetSMS clears a user's SMS lockout and failure count.
func (s *Server) resetSMS(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if err := noFields(w, r); err != nil {
		return err
	}
	if err := s.auth.ResetSMS(r.Context(), p.ByName("id"), s.meta(r, false)); err != nil {
		return err
	}
	return ok(w, nil)
}

func (s *Server) listEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	limit, err := queryInt(q.Get("limit"), auth.DefaultPageSize)
	if err != nil {
		return err
	}
	page, err := s.auth.Events(r.Context(), auth.EventQuery{ProjectID: q.Get("projectId"), FailureCode: q.Get("failureCode"), Before: q.Get("before"), Limit: limit})
	if err != nil {
		return err
	}
	return ok(w, struct {
		Success    bool                  `json:"success"`
		Events     []auth.EventView      `json:"events"`
		NextCursor *string               `json:"nextCursor"`
		Suppressed []auth.SuppressedView `json:"suppressed"`
	}{true, page.Events, page.NextCursor, page.Suppressed})
}

// backup streams a consistent copy of the data file; on PostgreSQL it
// answers 501 NOT_SUPPORTED (pg_dump backs the database up).
func (s *Server) backup(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	// A large file takes longer than the server's write timeout: lift it
	// for this response (the client going away still ends it).
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	started := false
	_, err := s.auth.Backup(r.Context(), w, func(size int64) {
		started = true
		h := w.Header()
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", `attachment; filename="latchkey-backup.db"`)
		h.Set("Content-Length", strconv.FormatInt(size, 10))
	})
	if err != nil && !started {
		return err // nothing written yet: an error envelope
	}
	if err != nil {
		s.log.Error("backup", "err", err)
	}
	return nil
}

// noFields checks the body of an admin call that takes none: empty or
// {} (an admin body's every field must be known, and it has none).
func noFields(w http.ResponseWriter, r *http.Request) error {
	return decodeStrict(w, r, &struct{}{})
}

// queryInt parses an optional positive integer query value.
func queryInt(v string, def int) (int, error) {
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, auth.Invalid("limit must be a positive integer.")
	}
	return n, nil
}
