package httpapi

import (
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
	"latchkey/store"
)

//go:embed ui/*.html
var uiFS embed.FS

var uiTmpl = template.Must(template.ParseFS(uiFS, "ui/*.html"))

// dashCookie names the dashboard's session cookie.
const (
	dashCookie = "latchkey_admin"
	dashTTL    = 12 * time.Hour
)

// dashSessions holds signed-in dashboard sessions in memory (a restart
// signs operators out). Each has its own CSRF token for forms.
type dashSessions struct {
	mu sync.Mutex
	m  map[string]dashSession
}

type dashSession struct {
	csrf    string
	expires time.Time
	// newKey is an API key just created for project newKeyProject,
	// shown by the next view of that project and then forgotten.
	newKey, newKeyProject string
}

func (d *dashSessions) create(now time.Time) (id, csrf string) {
	id, csrf = randToken(), randToken()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = make(map[string]dashSession)
	}
	for k, s := range d.m {
		if now.After(s.expires) {
			delete(d.m, k)
		}
	}
	d.m[id] = dashSession{csrf: csrf, expires: now.Add(dashTTL)}
	return id, csrf
}

func (d *dashSessions) get(id string, now time.Time) (dashSession, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.m[id]
	if !ok || now.After(s.expires) {
		return dashSession{}, false
	}
	return s, true
}

// setNewKey keeps key, just created for project, for the session's next
// view of that project.
func (d *dashSessions) setNewKey(id, project, key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.m[id]; ok {
		s.newKey, s.newKeyProject = key, project
		d.m[id] = s
	}
}

// takeNewKey returns the key kept for project and forgets it: a new key
// is shown exactly once.
func (d *dashSessions) takeNewKey(id, project string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.m[id]
	if !ok || s.newKey == "" || s.newKeyProject != project {
		return ""
	}
	key := s.newKey
	s.newKey, s.newKeyProject = "", ""
	d.m[id] = s
	return key
}

func (d *dashSessions) remove(id string) {
	d.mu.Lock()
	delete(d.m, id)
	d.mu.Unlock()
}

func randToken() string {
	b := make([]byte, 32)
	if _, err := cryptoRand(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *Server) dashboardRoutes() {
	r := s.router
	r.GET("/admin", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		http.Redirect(w, r, "/admin/", http.StatusFound)
	})
	r.GET("/admin/", s.dash(s.dashProjects))
	r.POST("/admin/login", s.dashLogin)
	r.POST("/admin/logout", s.dash(s.dashLogout))
	r.POST("/admin/projects", s.dash(s.dashCreateProject))
	r.GET("/admin/projects/:id", s.dash(s.dashProject))
	r.POST("/admin/projects/:id", s.dash(s.dashUpdateProject))
	r.POST("/admin/projects/:id/keys", s.dash(s.dashCreateKey))
	r.POST("/admin/keys/:prefix/revoke", s.dash(s.dashRevokeKey))
	r.POST("/admin/users/:id/:action", s.dash(s.dashUserAction))
	r.GET("/admin/events", s.dash(s.dashEvents))
}

// page data common to every dashboard page.
type dashPage struct {
	Title    string
	LoggedIn bool
	CSRF     string
	Error    string
	sid      string // the dashboard session's id
}

type dashHandler func(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error

// dash checks the dashboard cookie (else shows the login page) and, on
// POST, the form's CSRF token.
func (s *Server) dash(h dashHandler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		dashHeaders(w)
		c, err := r.Cookie(dashCookie)
		var sess dashSession
		ok := err == nil
		if ok {
			sess, ok = s.dashSess.get(c.Value, s.auth.Now())
		}
		if !ok {
			if r.Method != http.MethodGet {
				w.WriteHeader(http.StatusUnauthorized)
			}
			s.render(w, "login.html", dashPage{Title: "Sign in"})
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
			if r.ParseForm() != nil || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(sess.csrf)) != 1 {
				w.WriteHeader(http.StatusForbidden)
				s.render(w, "login.html", dashPage{Title: "Sign in", Error: "The form expired; sign in again."})
				return
			}
		}
		page := dashPage{LoggedIn: true, CSRF: sess.csrf, sid: c.Value}
		if err := h(w, r, p, page); err != nil {
			e := auth.AsError(err)
			status := statusOf(e)
			if status >= 500 {
				s.log.Error("dashboard", "err", err)
			}
			w.WriteHeader(status)
			page.Title, page.Error = "Error", e.Message
			s.render(w, "error.html", struct {
				dashPage
				Back string
			}{page, dashBack(r)})
		}
	}
}

// dashBack is the dashboard page to return to after a failed request:
// the page the request came from, when it is a dashboard page.
func dashBack(r *http.Request) string {
	if r.Method == http.MethodGet {
		return "/admin/"
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/admin/projects/"):
		return "/admin/projects/" + url.PathEscape(strings.SplitN(strings.TrimPrefix(r.URL.Path, "/admin/projects/"), "/", 2)[0])
	case r.PostForm.Get("project") != "":
		return "/admin/projects/" + url.PathEscape(r.PostForm.Get("project"))
	}
	return "/admin/"
}

func dashHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "same-origin")
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	if err := uiTmpl.ExecuteTemplate(w, name, data); err != nil {
		s.log.Error("render", "template", name, "err", err)
	}
}

func (s *Server) dashLogin(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	dashHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	token := ""
	if r.ParseForm() == nil {
		token = r.PostForm.Get("token")
	}
	// The admin API's throttle: 10 failures a minute per address.
	ip, _ := s.clientIP(r, false)
	if err := s.auth.CheckAdminFrom("Bearer "+token, ip); err != nil {
		e := auth.AsError(err)
		msg := "Wrong admin token."
		if e.RetryAfter > 0 {
			secs := int64((e.RetryAfter + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
			msg = fmt.Sprintf("Too many failed sign-ins from this address; try again in %d seconds.", secs)
		}
		w.WriteHeader(statusOf(e))
		s.render(w, "login.html", dashPage{Title: "Sign in", Error: msg})
		return
	}
	id, _ := s.dashSess.create(s.auth.Now())
	http.SetCookie(w, &http.Cookie{Name: dashCookie, Value: id, Path: "/admin", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: strings.HasPrefix(s.auth.BaseURL(), "https://"), MaxAge: int(dashTTL / time.Second)})
	http.Redirect(w, r, "/admin/", http.StatusSeeOther)
}

func (s *Server) dashLogout(w http.ResponseWriter, r *http.Request, _ httprouter.Params, _ dashPage) error {
	if c, err := r.Cookie(dashCookie); err == nil {
		s.dashSess.remove(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: dashCookie, Value: "", Path: "/admin", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/admin/", http.StatusSeeOther)
	return nil
}

func (s *Server) dashProjects(w http.ResponseWriter, r *http.Request, _ httprouter.Params, page dashPage) error {
	ps, err := s.auth.Projects()
	if err != nil {
		return err
	}
	views := make([]auth.ProjectView, 0, len(ps))
	for _, p := range ps {
		views = append(views, s.auth.ViewProject(p))
	}
	chart, err := s.failureChart("")
	if err != nil {
		return err
	}
	page.Title = "Projects"
	s.render(w, "projects.html", struct {
		dashPage
		Projects []auth.ProjectView
		Chart    template.HTML
	}{page, views, chart})
	return nil
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

func (s *Server) dashCreateProject(w http.ResponseWriter, r *http.Request, _ httprouter.Params, _ dashPage) error {
	name := r.PostForm.Get("name")
	p, err := s.auth.CreateProject(auth.ProjectInput{Name: &name, AllowedOrigins: linesField(r.PostForm, "origins")})
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/admin/projects/"+p.ID, http.StatusSeeOther)
	return nil
}

func (s *Server) dashUpdateProject(w http.ResponseWriter, r *http.Request, p httprouter.Params, _ dashPage) error {
	in := auth.ProjectInput{AllowedOrigins: linesField(r.PostForm, "origins"), DenyCIDRs: linesField(r.PostForm, "denyCidrs")}
	if v, ok := r.PostForm["emailChange"]; ok && len(v) > 0 {
		in.EmailChange = &v[0]
	}
	if _, err := s.auth.UpdateProject(p.ByName("id"), in); err != nil {
		return err
	}
	http.Redirect(w, r, "/admin/projects/"+p.ByName("id"), http.StatusSeeOther)
	return nil
}

// dashProject shows a project: settings, keys and users. Right after a
// key is created it shows that key, the only time it is ever shown.
func (s *Server) dashProject(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	proj, err := s.auth.Project(id)
	if err != nil {
		return err
	}
	keys, err := s.auth.Keys(id)
	if err != nil {
		return err
	}
	kv := make([]auth.KeyView, 0, len(keys))
	for _, k := range keys {
		kv = append(kv, auth.ViewKey(k))
	}
	q := r.URL.Query()
	users, err := s.auth.AdminUsers(id, q.Get("q"), q.Get("cursor"), auth.DefaultPageSize)
	if err != nil {
		return err
	}
	var next string
	if users.NextCursor != nil {
		next = "/admin/projects/" + url.PathEscape(id) + "?" + url.Values{"q": {q.Get("q")}, "cursor": {*users.NextCursor}}.Encode()
	}
	newKey := s.dashSess.takeNewKey(page.sid, id)
	page.Title = proj.Name
	s.render(w, "project.html", struct {
		dashPage
		Project  auth.ProjectView
		Keys     []auth.KeyView
		Users    []auth.AdminUser
		Query    string
		Paged    bool
		NextPage string
		NewKey   string
	}{page, s.auth.ViewProject(proj), kv, users.Users, q.Get("q"), q.Get("cursor") != "", next, newKey})
	return nil
}

// dashCreateKey creates a key and redirects to the project's page, which
// shows the key once (post/redirect/get: reloading that page neither
// shows the key again nor creates another).
func (s *Server) dashCreateKey(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
	id := p.ByName("id")
	key, _, err := s.auth.CreateKey(auth.KeyInput{ProjectID: &id, Mode: r.PostForm.Get("mode")})
	if err != nil {
		return err
	}
	s.dashSess.setNewKey(page.sid, id, key)
	http.Redirect(w, r, "/admin/projects/"+id, http.StatusSeeOther)
	return nil
}

func (s *Server) dashRevokeKey(w http.ResponseWriter, r *http.Request, p httprouter.Params, _ dashPage) error {
	if err := s.auth.RevokeKey(p.ByName("prefix")); err != nil {
		return err
	}
	http.Redirect(w, r, "/admin/projects/"+url.PathEscape(r.PostForm.Get("project")), http.StatusSeeOther)
	return nil
}

func (s *Server) dashUserAction(w http.ResponseWriter, r *http.Request, p httprouter.Params, _ dashPage) error {
	var disable bool
	switch p.ByName("action") {
	case "disable":
		disable = true
	case "enable":
	default:
		return auth.ErrNotFound
	}
	if err := s.auth.SetUserDisabled(p.ByName("id"), disable); err != nil {
		return err
	}
	http.Redirect(w, r, "/admin/projects/"+url.PathEscape(r.PostForm.Get("project")), http.StatusSeeOther)
	return nil
}

// dashEvents shows a page of events (100, older pages through the
// "before" cursor), the failures of those hours that were counted but not
// stored, and the chart of the last 24 hours.
func (s *Server) dashEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params, page dashPage) error {
	q := r.URL.Query()
	f := auth.EventQuery{ProjectID: q.Get("project"), FailureCode: q.Get("failure"), Before: q.Get("before")}
	evs, err := s.auth.Events(f)
	if err != nil {
		return err
	}
	ps, err := s.auth.Projects()
	if err != nil {
		return err
	}
	chart, err := s.failureChart(f.ProjectID)
	if err != nil {
		return err
	}
	var older string
	if evs.NextCursor != nil {
		older = "/admin/events?" + url.Values{"project": {f.ProjectID}, "failure": {f.FailureCode}, "before": {*evs.NextCursor}}.Encode()
	}
	var suppressed int64
	for _, c := range evs.Suppressed {
		suppressed += c.Count
	}
	page.Title = "Events"
	s.render(w, "events.html", struct {
		dashPage
		Projects        []*store.Project
		Categories      []string
		Filter          auth.EventQuery
		Events          []auth.EventView
		Suppressed      []auth.SuppressedView
		SuppressedTotal int64
		Older           string
		Chart           template.HTML
	}{page, ps, auth.FailureCategories, f, evs.Events, evs.Suppressed, suppressed, older, chart})
	return nil
}

var chartColors = map[string]string{
	auth.CatInvalidCode: "#d9480f", auth.CatExpired: "#f08c00", auth.CatAlreadyUsed: "#ae3ec9",
	auth.CatRateLimited: "#1971c2", auth.CatUserNotFound: "#2f9e44", auth.CatUserDisabled: "#495057",
	auth.CatUserExists: "#0c8599", auth.CatValidation: "#868e96", auth.CatRiskBlocked: "#c92a2a",
	auth.CatExternalMethod: "#5f3dc4", auth.CatInternal: "#000000",
}

// failureChart renders failed events per hour over the last 24 hours,
// stacked by category, as inline SVG. It reads the hourly counters (at
// most 24 rows per category), never the events.
func (s *Server) failureChart(projectID string) (template.HTML, error) {
	fh, err := s.auth.FailureChart(projectID)
	if err != nil {
		return "", err
	}
	counts, start := fh.Counts, fh.Start
	maxTotal := int64(1)
	seen := map[string]bool{}
	for _, c := range counts {
		var t int64
		for k, n := range c {
			t += n
			seen[k] = true
		}
		maxTotal = max(maxTotal, t)
	}
	const W, H, bar, left = 720, 180, 26, 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="failure-chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="Failures by category per hour">`, W, H+60)
	fmt.Fprintf(&b, `<text x="0" y="12" font-size="11">%d/h</text><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`, maxTotal, left, H, W, H)
	for h := 0; h < 24; h++ {
		x := left + h*((W-left)/24)
		y := H
		keys := make([]string, 0, len(counts[h]))
		for k := range counts[h] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			hgt := int(counts[h][k] * (H - 20) / maxTotal)
			y -= hgt
			color := chartColors[k]
			if color == "" {
				color = "#999"
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>%s: %d</title></rect>`,
				x, y, bar, hgt, color, template.HTMLEscapeString(k), counts[h][k])
		}
		if h%3 == 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10">%s</text>`, x, H+14, start.Add(time.Duration(h)*time.Hour).Format("15:04"))
		}
	}
	lx := left
	for _, c := range auth.FailureCategories {
		if !seen[c] {
			continue
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`, lx, H+30, chartColors[c], lx+14, H+39, c)
		lx += 20 + 7*len(c)
	}
	if len(seen) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="12" fill="#667">No failures in the last 24 hours.</text>`, left+10, H/2)
	} else if fh.Suppressed > 0 {
		fmt.Fprintf(&b, `<text id="chart-suppressed" x="%d" y="%d" font-size="11" fill="#667">Includes %d failures counted but not stored (suppressed).</text>`, left, H+56, fh.Suppressed)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), nil
}
