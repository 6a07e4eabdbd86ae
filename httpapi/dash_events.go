package httpapi

import (
	"html/template"
	"net/http"
	"net/url"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
	"latchkey/store"
)

// eventRow is an event as the events page lists it, with its project's
// name ("" for an event that names no project).
type eventRow struct {
	auth.EventView
	Project projectName
}

// suppressedRow is a suppressed counter with its project's name.
type suppressedRow struct {
	auth.SuppressedView
	Project projectName
}

// projectName names a project in a list: its name, or for a project
// deleted since, its id.
type projectName struct {
	ID, Name string
}

// nameOf returns the projectName of id among names ("" for none).
func nameOf(names map[string]string, id *string) projectName {
	if id == nil || *id == "" {
		return projectName{}
	}
	return projectName{ID: *id, Name: names[*id]}
}

// dashEvents shows a page of events (100, older pages through the
// "before" cursor) with their project, the failures of those hours that
// were counted but not stored, and the chart of the last 24 hours.
func (s *Server) dashEvents(w http.ResponseWriter, r *http.Request, _ httprouter.Params, page dashPage) error {
	q := r.URL.Query()
	f := auth.EventQuery{ProjectID: q.Get("project"), FailureCode: q.Get("failure"), Before: q.Get("before")}
	evs, err := s.auth.Events(r.Context(), f)
	if err != nil {
		return err
	}
	ps, err := s.auth.Projects(r.Context())
	if err != nil {
		return err
	}
	names := make(map[string]string, len(ps))
	for _, p := range ps {
		names[p.ID] = p.Name
	}
	rows := make([]eventRow, 0, len(evs.Events))
	for _, e := range evs.Events {
		rows = append(rows, eventRow{e, nameOf(names, e.ProjectID)})
	}
	supp := make([]suppressedRow, 0, len(evs.Suppressed))
	var suppressed int64
	for _, c := range evs.Suppressed {
		supp = append(supp, suppressedRow{c, nameOf(names, c.ProjectID)})
		suppressed += c.Count
	}
	chart, err := s.failureChart(r.Context(), f.ProjectID)
	if err != nil {
		return err
	}
	var older, newest string
	if evs.NextCursor != nil {
		older = "/admin/events?" + url.Values{"project": {f.ProjectID}, "failure": {f.FailureCode}, "before": {*evs.NextCursor}}.Encode()
	}
	if f.Before != "" {
		newest = "/admin/events?" + url.Values{"project": {f.ProjectID}, "failure": {f.FailureCode}}.Encode()
	}
	page.Title = "Events"
	return s.show(w, page, "events.html", struct {
		dashPage
		Projects        []*store.Project
		Categories      []string
		Filter          auth.EventQuery
		Events          []eventRow
		Suppressed      []suppressedRow
		SuppressedTotal int64
		Older, Newest   string
		Chart           template.HTML
	}{page, ps, auth.FailureCategories, f, rows, supp, suppressed, older, newest, chart})
}
