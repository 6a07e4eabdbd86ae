package httpapi

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
	"latchkey/store"
)

// The dashboard's projects: the list, a project's page (settings, keys,
// users), creation, settings, deletion, keys.

func (s *Server) dashProjects(w http.ResponseWriter, r *http.Request, _ httprouter.Params, page dashPage) error {
	ps, err := s.auth.Projects(r.Context())
	if err != nil {
		return err
	}
	views := make([]auth.ProjectView, 0, len(ps))
	for _, p := range ps {
		views = append(views, s.auth.ViewProject(p))
	}
	chart, err := s.failureChart(r.Context(), "")
	if err != nil {
		return err
	}
	page.Title = "Projects"
	// A refused creation keeps what the operator typed.
	return s.show(w, page, "projects.html", struct {
		dashPage
		Projects   []auth.ProjectView
		Chart      template.HTML
		NewName    string
		NewOrigins string
	}{page, views, chart, r.PostForm.Get("name"), r.PostForm.Get("origins")})
}

// linesField returns the form field name as one entry per non-empty
// line, or nil when the form has no such field.
func linesField(form url.Values, name string) *[]string {
	v, ok := form[name]
	if !ok {
		return nil
	}
	out := []string{}
	for _, line := range strings.Split(strings.Join(v, "\n"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return &out
}

// textField returns the form field name, or nil when the form has none.
func textField(form url.Values, name string) *string {
	if v, ok := form[name]; ok && len(v) > 0 {
		return &v[0]
	}
	return nil
}

// intField returns the form field name as an integer, or nil when the
// form has none; 400 VALIDATION_ERROR when it is not a whole number.
func intField(form url.Values, name string) (*int, error) {
	v := textField(form, name)
	if v == nil {
		return nil, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(*v))
	if err != nil {
		return nil, auth.Invalid("%s must be a whole number.", name)
	}
	return &n, nil
}

// projectInput reads the fields of the project forms that are present
// (an absent field is left unchanged).
func projectInput(form url.Values) (auth.ProjectInput, error) {
	in := auth.ProjectInput{Name: textField(form, "name"), AllowedOrigins: linesField(form, "origins"),
		DenyCIDRs: linesField(form, "denyCidrs"), EmailChange: textField(form, "emailChange")}
	var err error
	if in.SessionTTLSeconds, err = intField(form, "sessionTtlSeconds"); err != nil {
		return in, err
	}
	if in.RateLimitPerMinute, err = intField(form, "rateLimitPerMinute"); err != nil {
		return in, err
	}
	if in.SessionIdleSeconds, err = intField(form, "sessionIdleSeconds"); err != nil {
		return in, err
	}
	if in.SessionMaxSeconds, err = intField(form, "sessionMaxSeconds"); err != nil {
		return in, err
	}
	in.SessionRateLimitPerMinute, err = intField(form, "sessionRateLimitPerMinute")
	return in, err
}

func (s *Server) dashCreateProject(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	in, err := projectInput(r.PostForm)
	var proj *store.Project
	if err == nil {
		if in.Name == nil {
			in.Name = new(string) // refused by the name check
		}
		proj, err = s.auth.CreateProject(r.Context(), in)
	}
	if err != nil {
		return refused(page, "new-project", err, func(page dashPage) error { return s.dashProjects(w, r, p, page) })
	}
	return s.done(w, r, page, projectPath(proj.ID), "Project "+proj.Name+" created.")
}

// settingsForm is the settings form's fields as text.
type settingsForm struct {
	Name, Origins, DenyCIDRs, EmailChange, SessionTTL, RateLimit, SessionRateLimit string
	SessionIdle, SessionMax                                                        string
}

// settingsOf fills the settings form from the project.
func settingsOf(p auth.ProjectView) settingsForm {
	return settingsForm{Name: p.Name, Origins: strings.Join(p.AllowedOrigins, "\n"), DenyCIDRs: strings.Join(p.DenyCIDRs, "\n"),
		EmailChange: p.EmailChange, SessionTTL: strconv.Itoa(p.SessionTTLSeconds), RateLimit: strconv.Itoa(p.RateLimitPerMinute),
		SessionRateLimit: strconv.Itoa(p.SessionRateLimitPerMinute),
		SessionIdle:      strconv.Itoa(p.SessionIdleSeconds), SessionMax: strconv.Itoa(p.SessionMaxSeconds)}
}

// kept returns f with the posted fields in place of the stored ones: a
// refused form shows what the operator typed.
func (f settingsForm) kept(form url.Values) settingsForm {
	for name, field := range map[string]*string{"name": &f.Name, "origins": &f.Origins, "denyCidrs": &f.DenyCIDRs,
		"emailChange": &f.EmailChange, "sessionTtlSeconds": &f.SessionTTL, "rateLimitPerMinute": &f.RateLimit,
		"sessionRateLimitPerMinute": &f.SessionRateLimit, "sessionIdleSeconds": &f.SessionIdle, "sessionMaxSeconds": &f.SessionMax} {
		if v := textField(form, name); v != nil {
			*field = *v
		}
	}
	return f
}

// dashProject shows a project: settings, keys and users. Right after a
// key is created it shows that key, the only time it is ever shown. A
// refused settings or key form is shown again with the operator's input.
func (s *Server) dashProject(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	proj, err := s.auth.Project(r.Context(), id)
	if err != nil {
		return err
	}
	keys, err := s.auth.Keys(r.Context(), id)
	if err != nil {
		return err
	}
	kv := make([]auth.KeyView, 0, len(keys))
	for _, k := range keys {
		kv = append(kv, auth.ViewKey(k))
	}
	q := r.URL.Query()
	users, err := s.auth.AdminUsers(r.Context(), id, q.Get("q"), q.Get("cursor"), auth.DefaultPageSize)
	if err != nil {
		return err
	}
	var next string
	if users.NextCursor != nil {
		next = projectPath(id) + "?" + url.Values{"q": {q.Get("q")}, "cursor": {*users.NextCursor}}.Encode()
	}
	view := s.auth.ViewProject(proj)
	settings := settingsOf(view)
	if page.ErrorFor("settings") != "" {
		settings = settings.kept(r.PostForm)
	}
	page.Title, page.Tab = proj.Name, "project"
	return s.show(w, page, "project.html", struct {
		dashPage
		Project   auth.ProjectView
		Settings  settingsForm
		Keys      []auth.KeyView
		NewKey    string
		KeyMode   string
		KeyExpiry string
		Users     []auth.AdminUser
		Query     string
		Paged     bool
		NextPage  string
	}{page, view, settings, kv, s.dashSess.takeOnce(r.Context(), page.sid, "key:"+id).Secret, r.PostForm.Get("mode"), r.PostForm.Get("expiresAt"),
		users.Users, q.Get("q"), q.Get("cursor") != "", next})
}

func (s *Server) dashUpdateProject(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	in, err := projectInput(r.PostForm)
	if err == nil {
		_, err = s.auth.UpdateProject(r.Context(), id, in)
	}
	if err != nil {
		return refused(page, "settings", err, func(page dashPage) error { return s.dashProject(w, r, p, page) })
	}
	return s.done(w, r, page, projectPath(id), "Settings saved.")
}

func (s *Server) confirmDeleteProject(r *http.Request, p httprouter.Params) (confirmation, error) {
	proj, err := s.auth.Project(r.Context(), p.ByName("id"))
	if err != nil {
		return confirmation{}, err
	}
	return confirmation{
		Heading: "Delete project " + proj.Name + "?",
		Facts:   []fact{{"Project", proj.Name}, {"ID", proj.ID}, {"Created", s.auth.ViewProject(proj).CreatedAt}},
		Effects: []string{
			"Its users are deleted, with their sessions, factors, passkeys and devices; so are its external methods and webhooks (with pending deliveries).",
			"Its API keys stop working at once; they stay listed without a project.",
			"Its authentication events stay until they expire. This cannot be undone; take a backup first if in doubt.",
		},
		Button: "Delete project", Cancel: projectPath(proj.ID),
	}, nil
}

func (s *Server) dashDeleteProject(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	proj, err := s.auth.Project(r.Context(), p.ByName("id"))
	if err != nil {
		return err
	}
	if err := s.auth.DeleteProject(r.Context(), proj.ID); err != nil {
		return err
	}
	return s.done(w, r, page, "/admin/", "Project "+proj.Name+" deleted.")
}

// dashCreateKey creates a key and redirects to the project's page, which
// shows the key once (post/redirect/get: reloading that page neither
// shows the key again nor creates another).
func (s *Server) dashCreateKey(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	in := auth.KeyInput{ProjectID: &id, Mode: r.PostForm.Get("mode")}
	if e := strings.TrimSpace(r.PostForm.Get("expiresAt")); e != "" {
		in.ExpiresAt = &e
	}
	key, _, err := s.auth.CreateKey(r.Context(), in)
	if err != nil {
		return refused(page, "key", err, func(page dashPage) error { return s.dashProject(w, r, p, page) })
	}
	if err := s.dashSess.setOnce(r.Context(), page.sid, auth.ShownOnce{Page: "key:" + id, Secret: key}); err != nil {
		return err
	}
	return s.done(w, r, page, projectPath(id)+"#key-notice", "")
}

// projectKey returns the key of project id with prefix (404
// API_KEY_NOT_FOUND when the project has none).
func (s *Server) projectKey(ctx context.Context, id, prefix string) (auth.KeyView, error) {
	if _, err := s.auth.Project(ctx, id); err != nil {
		return auth.KeyView{}, err
	}
	keys, err := s.auth.Keys(ctx, id)
	if err != nil {
		return auth.KeyView{}, err
	}
	for _, k := range keys {
		if k.Prefix == prefix {
			return auth.ViewKey(k), nil
		}
	}
	return auth.KeyView{}, auth.ErrKeyNotFound
}

func (s *Server) confirmRevokeKey(r *http.Request, p httprouter.Params) (confirmation, error) {
	k, err := s.projectKey(r.Context(), p.ByName("id"), p.ByName("prefix"))
	if err != nil {
		return confirmation{}, err
	}
	expires := "never"
	if k.ExpiresAt != nil {
		expires = *k.ExpiresAt
	}
	return confirmation{
		Heading: "Revoke API key " + k.Prefix + "?",
		Facts:   []fact{{"Key", k.Prefix + "…"}, {"Mode", k.Mode}, {"Created", k.CreatedAt}, {"Expires", expires}},
		Effects: []string{"Every call with this key is refused from now on (401 API_KEY_REVOKED). This cannot be undone: the app needs a new key."},
		Button:  "Revoke key", Cancel: projectPath(p.ByName("id")) + "#keys",
	}, nil
}

func (s *Server) dashRevokeKey(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	k, err := s.projectKey(r.Context(), id, p.ByName("prefix"))
	if err != nil {
		return err
	}
	if err := s.auth.RevokeKey(r.Context(), k.Prefix); err != nil {
		return err
	}
	return s.done(w, r, page, projectPath(id)+"#keys", "Key "+k.Prefix+" revoked.")
}
