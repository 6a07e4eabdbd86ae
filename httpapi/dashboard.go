package httpapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

//go:embed ui/*.html
var uiFS embed.FS

// uiTmpl is the dashboard's pages, parsed at their first use (not at the
// start, which serves no page).
var uiTmpl = sync.OnceValue(func() *template.Template { return template.Must(template.ParseFS(uiFS, "ui/*.html")) })

// dashCookie names the dashboard's session cookie.
const dashCookie = "latchkey_admin"

// dashSessions reaches the dashboard's sign-ins, which the store keeps
// (auth.StartDashSession: in memory on bbolt, where a restart signs
// operators out; in the database on PostgreSQL, where every replica
// knows them). Each has its own CSRF token for forms, and a flash: the
// next page's notice, and a secret just created, shown once.
type dashSessions struct {
	auth *auth.Service
	log  *slog.Logger
}

// setOnce keeps secret, just created, for the session's next view of
// page.
func (d dashSessions) setOnce(ctx context.Context, id string, o auth.ShownOnce) error {
	return d.auth.UpdateDashFlash(ctx, id, func(f *auth.DashFlash) bool { f.Once = o; return true })
}

// takeOnce returns the secret kept for page and forgets it: a new
// secret is shown exactly once.
func (d dashSessions) takeOnce(ctx context.Context, id, page string) (o auth.ShownOnce) {
	err := d.auth.UpdateDashFlash(ctx, id, func(f *auth.DashFlash) bool {
		if f.Once.Page != page {
			return false
		}
		o, f.Once = f.Once, auth.ShownOnce{}
		return true
	})
	if err != nil {
		d.log.Error("dashboard session", "err", err)
		return auth.ShownOnce{}
	}
	return o
}

// setNotice keeps msg for the session's next page.
func (d dashSessions) setNotice(ctx context.Context, id, msg string) {
	if err := d.auth.UpdateDashFlash(ctx, id, func(f *auth.DashFlash) bool { f.Notice = msg; return true }); err != nil {
		d.log.Error("dashboard session", "err", err)
	}
}

// takeNotice returns the kept notice and forgets it.
func (d dashSessions) takeNotice(ctx context.Context, id string) (msg string) {
	err := d.auth.UpdateDashFlash(ctx, id, func(f *auth.DashFlash) bool {
		msg, f.Notice = f.Notice, ""
		return msg != ""
	})
	if err != nil {
		d.log.Error("dashboard session", "err", err)
	}
	return msg
}

func (s *Server) dashboardRoutes() {
	r := s.router
	r.GET("/admin", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		http.Redirect(w, r, "/admin/", http.StatusFound)
	})
	r.GET("/admin/", s.dash(s.dashProjects))
	r.POST("/admin/login", s.dashLogin)
	r.GET("/admin/login", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		http.Redirect(w, r, "/admin/", http.StatusSeeOther) // the sign-in form is on every page
	})
	r.POST("/admin/logout", s.dash(s.dashLogout))
	r.POST("/admin/projects", s.dash(s.dashCreateProject))
	r.GET("/admin/projects/:id", s.dash(s.dashProject))
	r.POST("/admin/projects/:id", s.dash(s.dashUpdateProject))
	s.dashConfirmed("/admin/projects/:id/delete", s.confirmDeleteProject, s.dashDeleteProject)
	r.POST("/admin/projects/:id/keys", s.dash(s.dashCreateKey))
	s.dashConfirmed("/admin/projects/:id/keys/:prefix/revoke", s.confirmRevokeKey, s.dashRevokeKey)
	r.GET("/admin/projects/:id/webhooks", s.dash(s.dashWebhooks))
	r.GET("/admin/projects/:id/webhooks/:hook", s.dash(s.dashDeliveries))
	s.dashProviderRoutes()
	r.GET("/admin/projects/:id/methods", s.dash(s.dashMethods))
	r.POST("/admin/projects/:id/methods", s.dash(s.dashCreateMethod))
	s.dashConfirmed("/admin/projects/:id/methods/:method/disable", s.confirmDisableMethod, s.dashDisableMethod)
	r.POST("/admin/projects/:id/methods/:method/enable", s.dash(s.dashEnableMethod))
	r.GET("/admin/projects/:id/templates", s.dash(s.dashTemplates))
	r.POST("/admin/projects/:id/templates", s.dash(s.dashPostTemplate))
	s.dashConfirmed("/admin/projects/:id/templates/:kind/:locale/delete", s.confirmDeleteTemplate, s.dashDeleteTemplate)
	r.GET("/admin/users/:id", s.dash(s.dashUser))
	r.POST("/admin/users/:id/enable", s.dash(s.dashEnableUser))
	s.dashConfirmed("/admin/users/:id/disable", s.confirmDisableUser, s.dashDisableUser)
	s.dashConfirmed("/admin/users/:id/revoke-sessions", s.confirmRevokeSessions, s.dashRevokeSessions)
	s.dashConfirmed("/admin/users/:id/reset-totp", s.confirmReset(totpLockout), s.dashReset(totpLockout))
	s.dashConfirmed("/admin/users/:id/reset-sms", s.confirmReset(smsLockout), s.dashReset(smsLockout))
	s.dashConfirmed("/admin/users/:id/delete", s.confirmDeleteUser, s.dashDeleteUser)
	r.GET("/admin/events", s.dash(s.dashEvents))
	r.GET("/admin/outbox", s.dash(s.dashOutbox))
}

// dashPage is the data common to every dashboard page.
type dashPage struct {
	Title    string
	LoggedIn bool
	CSRF     string
	// Error is a page-wide error (the sign-in page, the error page).
	Error string
	// Notice says what the last action did ("Key revoked.").
	Notice string
	// NotReady lists what keeps the server from being ready (GET
	// /api/v1/ready answers 503): a banner on every page.
	NotReady []readyFailure
	// Tab marks the current page among a project's pages.
	Tab string
	// Outbox: mail goes to the outbox directory, not to an SMTP server
	// (the Outbox page is in the navigation).
	Outbox bool
	// Next is the dashboard page the sign-in page was shown for, where
	// signing in goes (dashNext).
	Next   string
	failed *formError
	sid    string // the dashboard session's id
}

// formError is a form the operator sent that was refused: the page is
// shown again with Message beside form Form and the input kept.
type formError struct {
	Form    string
	Message string
	Status  int
}

// ErrorFor returns the refusal of form, or "" when it did not fail.
func (p dashPage) ErrorFor(form string) string {
	if p.failed != nil && p.failed.Form == form {
		return p.failed.Message
	}
	return ""
}

// status is the HTTP status of the page: a refused form's, else 200.
func (p dashPage) status() int {
	if p.failed != nil {
		return p.failed.Status
	}
	return http.StatusOK
}

type dashHandler func(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error

// dash checks the dashboard cookie (else shows the login page) and, on
// POST, the form's CSRF token. A returned error is shown on the error
// page with its status.
func (s *Server) dash(h dashHandler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		dashHeaders(w)
		c, err := r.Cookie(dashCookie)
		var sess *auth.DashSession
		ok := err == nil
		if ok {
			if sess, ok, err = s.auth.DashSession(r.Context(), c.Value); err != nil {
				e := auth.AsError(err)
				s.render(w, statusOf(e), "login.html", dashPage{Title: "Sign in", Error: e.Message})
				return
			}
		}
		if !ok {
			status := http.StatusOK
			if r.Method != http.MethodGet {
				status = http.StatusUnauthorized
			}
			page := dashPage{Title: "Sign in"}
			if r.Method == http.MethodGet {
				page.Next = dashNext(r.URL.RequestURI())
			}
			s.render(w, status, "login.html", page)
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
			if r.ParseForm() != nil || subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(sess.CSRF)) != 1 {
				s.render(w, http.StatusForbidden, "login.html", dashPage{Title: "Sign in", Error: "The form expired; sign in again."})
				return
			}
		}
		page := dashPage{LoggedIn: true, CSRF: sess.CSRF, sid: c.Value, NotReady: s.notReady(r.Context(), true), Outbox: s.outbox.Dir != ""}
		if r.Method == http.MethodGet && sess.Flash.Notice != "" {
			page.Notice = s.dashSess.takeNotice(r.Context(), c.Value)
		}
		if err := h(w, r, p, page); err != nil {
			e := auth.AsError(err)
			status := statusOf(e)
			if status >= 500 {
				s.log.Error("dashboard", "err", err)
			}
			page.Title, page.Error = "Error", e.Message
			s.render(w, status, "error.html", struct {
				dashPage
				Back string
			}{page, dashBack(r)})
		}
	}
}

// refused shows a refused form again: show renders the form's page with
// the error beside form and the operator's input kept, with the error's
// status (400, 404, 409). An internal error goes to the error page.
func refused(page dashPage, form string, err error, show func(dashPage) error) error {
	e := auth.AsError(err)
	status := statusOf(e)
	if status >= 500 {
		return err
	}
	page.failed = &formError{Form: form, Message: e.Message, Status: status}
	return show(page)
}

// dashBack is the dashboard page to return to after a failed request:
// the project or user the request was about, else the projects page.
func dashBack(r *http.Request) string {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/admin/"), "/")
	if len(parts) >= 2 && (parts[0] == "projects" || parts[0] == "users") && parts[1] != "" {
		if r.Method == http.MethodGet && len(parts) == 2 {
			return "/admin/" // the page itself failed
		}
		return "/admin/" + parts[0] + "/" + url.PathEscape(parts[1])
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

// render writes template name with data and status; a template that
// fails is logged and answered 500 without a half-written page.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) {
	var b bytes.Buffer
	if err := uiTmpl().ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("render", "template", name, "err", err)
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "Internal error.")
		return
	}
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// show writes a signed-in page: its status is the refused form's, if any.
func (s *Server) show(w http.ResponseWriter, page dashPage, name string, data any) error {
	s.render(w, page.status(), name, data)
	return nil
}

func (s *Server) dashLogin(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	dashHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	token, next := "", "/admin/"
	if r.ParseForm() == nil {
		token, next = r.PostForm.Get("token"), dashNext(r.PostForm.Get("next"))
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
		s.render(w, statusOf(e), "login.html", dashPage{Title: "Sign in", Error: msg, Next: next})
		return
	}
	id, err := s.auth.StartDashSession(r.Context())
	if err != nil {
		e := auth.AsError(err)
		s.render(w, statusOf(e), "login.html", dashPage{Title: "Sign in", Error: e.Message, Next: next})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: dashCookie, Value: id, Path: "/admin", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: strings.HasPrefix(s.auth.BaseURL(), "https://"), MaxAge: int(auth.DashSessionTTL / time.Second)})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// dashNext is where signing in to the dashboard goes: next when it is a
// dashboard page of this server (a path under /admin/ once cleaned as
// the redirect cleans it, no host, no scheme, no backslash, at most 2048
// bytes), else the overview.
func dashNext(next string) string {
	p, _, _ := strings.Cut(next, "?")
	clean := path.Clean(p)
	if len(next) > 2048 || !strings.HasPrefix(p, "/admin/") || !strings.HasPrefix(clean+"/", "/admin/") ||
		strings.ContainsAny(next, "\\\r\n") || strings.Contains(next, "//") ||
		strings.HasPrefix(clean, "/admin/login") || strings.HasPrefix(clean, "/admin/logout") {
		return "/admin/"
	}
	return next
}

func (s *Server) dashLogout(w http.ResponseWriter, r *http.Request, _ httprouter.Params, _ dashPage) error {
	if c, err := r.Cookie(dashCookie); err == nil {
		if err := s.auth.EndDashSession(r.Context(), c.Value); err != nil {
			return err
		}
	}
	http.SetCookie(w, &http.Cookie{Name: dashCookie, Value: "", Path: "/admin", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/admin/", http.StatusSeeOther)
	return nil
}

// done ends a successful POST: the notice for the next page, then a
// redirect to it (post/redirect/get: a reload repeats nothing).
func (s *Server) done(w http.ResponseWriter, r *http.Request, page dashPage, to, notice string) error {
	if notice != "" {
		s.dashSess.setNotice(r.Context(), page.sid, notice)
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// projectPath is the dashboard page of project id, with optional
// further path segments.
func projectPath(id string, more ...string) string {
	p := "/admin/projects/" + url.PathEscape(id)
	for _, m := range more {
		p += "/" + url.PathEscape(m)
	}
	return p
}

// confirmation is the page that asks before a destructive action: what
// it acts on, what will happen, and a form that posts the action again
// with confirm=yes. It works without JavaScript.
type confirmation struct {
	dashPage
	Heading string
	// Facts describe what the action acts on, in order.
	Facts []fact
	// Effects say what will happen.
	Effects []string
	// Action is the path the form posts to; Button its label.
	Action, Button string
	// From is passed back to the action (where to return afterwards).
	From string
	// Cancel is where "Cancel" leads.
	Cancel string
}

// fact is one labelled value on a confirmation page.
type fact struct{ Label, Value string }

// confirmer loads what a destructive action acts on and describes it
// (an unknown object is its 404).
type confirmer func(r *http.Request, p httprouter.Params) (confirmation, error)

// dashConfirmed registers a destructive action at path: GET shows the
// confirmation page that ask describes, POST does act, but only with
// confirm=yes from that page's form; a POST without it (a stale form, a
// crafted request) shows the confirmation instead. Both are behind the
// dashboard's sign-in, and the POST behind its CSRF check.
func (s *Server) dashConfirmed(path string, ask confirmer, act dashHandler) {
	confirm := func(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
		c, err := ask(r, p)
		if err != nil {
			return err
		}
		c.dashPage = page
		c.Title = c.Heading
		c.Action = r.URL.EscapedPath()
		if from := formOrQuery(r, "from"); from == "project" {
			c.From = from
		}
		return s.show(w, page, "confirm.html", c)
	}
	s.router.GET(path, s.dash(confirm))
	s.router.POST(path, s.dash(func(w http.ResponseWriter, r *http.Request, p httprouter.Params, page dashPage) error {
		if r.PostForm.Get("confirm") != "yes" {
			return confirm(w, r, p, page)
		}
		return act(w, r, p, page)
	}))
}

// formOrQuery returns the posted field name, else the query's.
func formOrQuery(r *http.Request, name string) string {
	if v := r.PostForm.Get(name); v != "" {
		return v
	}
	return r.URL.Query().Get(name)
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
func (s *Server) failureChart(ctx context.Context, projectID string) (template.HTML, error) {
	fh, err := s.auth.FailureChart(ctx, projectID)
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
