package httpapi

import (
	"net/http"
	"net/url"
	"path/filepath"

	"github.com/julienschmidt/httprouter"

	"latchkey/mail"
	"latchkey/store"
)

// outboxRow is a message as the Outbox page shows it, with its project's
// name.
type outboxRow struct {
	*mail.OutboxMessage
	Project projectName
}

// dashOutbox shows the mail the outbox directory holds (without an SMTP
// server), newest first, 50 a page with an "Older messages" link,
// optionally one project's: each message's code or link in a field one
// click selects, its HTML part in a sandboxed frame (the page's CSP,
// which the frame inherits, forbids scripts too) and its text part.
// With an SMTP server it says where mail goes instead. Files that
// cannot be shown are listed with the reason; the directory is read at
// most mail.MaxOutboxScan files and mail.MaxOutboxFile bytes a file per
// view.
func (s *Server) dashOutbox(w http.ResponseWriter, r *http.Request, _ httprouter.Params, page dashPage) error {
	q := r.URL.Query()
	f := mail.OutboxQuery{ProjectID: q.Get("project"), Before: q.Get("before")}
	page.Title = "Outbox"
	data := struct {
		dashPage
		SMTP       string
		Dir        string
		PerReplica bool
		ReadError  string
		Projects   []*store.Project
		Filter     mail.OutboxQuery
		Messages   []outboxRow
		Skipped    []mail.OutboxSkip
		Capped     bool
		Scan       int
		Older      string
		Newest     string
	}{dashPage: page, SMTP: s.outbox.SMTP, PerReplica: s.outbox.PerReplica, Filter: f, Scan: mail.MaxOutboxScan}
	if s.outbox.Dir == "" {
		return s.show(w, page, "outbox.html", data)
	}
	data.Dir = s.outbox.Dir
	if abs, err := filepath.Abs(s.outbox.Dir); err == nil {
		data.Dir = abs
	}
	ps, err := s.auth.Projects(r.Context())
	if err != nil {
		return err
	}
	data.Projects = ps
	names := make(map[string]string, len(ps))
	for _, p := range ps {
		names[p.ID] = p.Name
	}
	l, err := mail.ReadOutbox(s.outbox.Dir, f)
	if err != nil {
		// The page still says where mail goes; the log has the cause.
		s.log.Warn("dashboard: cannot read the mail outbox", "dir", s.outbox.Dir, "err", err)
		data.ReadError = "The outbox directory cannot be read (the log says why)."
		return s.show(w, page, "outbox.html", data)
	}
	for _, m := range l.Messages {
		id := m.ProjectID
		data.Messages = append(data.Messages, outboxRow{m, nameOf(names, &id)})
	}
	data.Skipped, data.Capped = l.Skipped, l.Capped
	if l.Older != "" {
		data.Older = "/admin/outbox?" + url.Values{"project": {f.ProjectID}, "before": {l.Older}}.Encode()
	}
	if f.Before != "" {
		data.Newest = "/admin/outbox?" + url.Values{"project": {f.ProjectID}}.Encode()
	}
	return s.show(w, page, "outbox.html", data)
}
