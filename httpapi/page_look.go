package httpapi

import (
	"html/template"
	"net/http"
	"strings"

	"latchkey/auth"
)

// How the hosted pages look (docs/oidc.md, "Branding and languages"):
// the project's name, logo and accent colour, and every text in the
// request's language, from auth.Service.PageLook. The pages' code names
// texts by key (auth.BuiltInPageTexts); the renders (oidcRender,
// accountRender) look them up, once per page.
//
// A page's render gets only the ResponseWriter its handler was given:
// the handlers of a project's pages are given a pageWriter, which
// carries the request and the project the render needs. A page written
// to any other writer (a project that does not exist) looks built-in.

// pageWriter is the ResponseWriter of a project's hosted page: it
// carries what the page's look depends on.
type pageWriter struct {
	http.ResponseWriter
	r         *http.Request
	projectID string
}

// Unwrap returns the writer underneath (http.ResponseController).
func (w *pageWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// pageWriterOf wraps w for project projectID's page answering r.
func pageWriterOf(w http.ResponseWriter, r *http.Request, projectID string) http.ResponseWriter {
	if _, ok := w.(*pageWriter); ok {
		return w
	}
	return &pageWriter{ResponseWriter: w, r: r, projectID: projectID}
}

// lookOf returns how a page written to w looks: for a pageWriter, its
// project's branding and texts in the locale of its authorization
// request's ui_locales (when the page belongs to one) or else of the
// browser's Accept-Language; otherwise the built-in look. A failure to
// read the store is logged and the page looks built-in.
func (s *Server) lookOf(w http.ResponseWriter) *auth.PageLook {
	pw, ok := w.(*pageWriter)
	if !ok {
		return auth.BuiltInPageLook()
	}
	r := pw.r
	id := r.URL.Query().Get("authRequestID")
	if id == "" && r.PostForm != nil {
		id = r.PostForm.Get("authRequestID")
	}
	look, err := s.auth.PageLook(r.Context(), pw.projectID, id, r.Header.Get("Accept-Language"))
	if err != nil {
		s.log.Error("hosted page look", "err", err)
	}
	return look
}

// pageText returns key's text in t, or s itself when it is no key (a
// value of the page's, such as a name).
func pageText(t map[string]string, s string) string {
	if v, ok := t[s]; ok {
		return v
	}
	return s
}

// textKey is a message of the pages' own, by its text key, where a page
// shows a failure (a form's error): a page words it as any key.
type textKey string

// Error returns the key.
func (k textKey) Error() string { return string(k) }

// failText returns what a page in look shows for err: a textKey's text,
// or a failure in the words of its code (auth.PageLook.ErrorText).
func failText(look *auth.PageLook, err error) string {
	if k, ok := err.(textKey); ok {
		return pageText(look.Texts, string(k))
	}
	return look.ErrorText(err)
}

// fill replaces {name} in text with value (html/template escapes the
// result as any text).
func fill(text, name, value string) string {
	return strings.ReplaceAll(text, "{"+name+"}", value)
}

// fillStrong is fill with value in bold: text and value are escaped
// here, the result is HTML.
func fillStrong(text, name, value string) template.HTML {
	esc := template.HTMLEscapeString
	return template.HTML(strings.ReplaceAll(esc(text), esc("{"+name+"}"), "<strong>"+esc(value)+"</strong>"))
}

// pageFuncs are the functions of the pages' templates.
var pageFuncs = template.FuncMap{"fill": fill, "fillStrong": fillStrong}

// accentCSS returns the page's accent colour as CSS, the built-in one
// when the project has none. auth keeps accentColor to "#rrggbb".
func accentCSS(look *auth.PageLook) template.CSS {
	if len(look.Accent) == 7 && look.Accent[0] == '#' && strings.Trim(look.Accent[1:], "0123456789abcdef") == "" {
		return template.CSS(look.Accent)
	}
	return "#2456d6"
}

// pageCSP returns a hosted page's Content-Security-Policy: base (the
// page's own sources), plus the logo's origin as an image source when
// the project has a logo (after the page's own, such as data:, in
// imgSrc).
func pageCSP(base, imgSrc string, look *auth.PageLook) string {
	if look.LogoOrigin != "" {
		imgSrc = strings.TrimSpace(imgSrc + " " + look.LogoOrigin)
	}
	if imgSrc != "" {
		base += "; img-src " + imgSrc
	}
	return base
}

// scopeText says in t's words what scope gives a client: its scope_
// key, or scope_other with the scope's name.
func scopeText(t map[string]string, scope string) string {
	if v, ok := t["scope_"+scope]; ok && scope != "other" {
		return v
	}
	return fill(t["scope_other"], "scope", scope)
}

// localize words d in look's texts: its title, text and links given as
// keys, its failure, the scopes of its consent and of its device, with
// {email} and {client} filled in.
func (d *oidcPage) localize(look *auth.PageLook) {
	t := look.Texts
	d.Look, d.T, d.Accent = look, t, accentCSS(look)
	client := ""
	switch {
	case d.Consent != nil:
		client = d.Consent.ClientName
	case d.Device != nil:
		client = d.Device.ClientName
	}
	word := func(s string) string {
		return fill(fill(pageText(t, s), "email", d.Email), "client", client)
	}
	d.Title, d.Text = word(d.Title), word(d.Text)
	if d.Fail != nil {
		// A form shows its failure as its error; the error page, which
		// has none, as its text.
		if d.Form == "" && d.Consent == nil && d.Device == nil {
			d.Text = failText(look, d.Fail)
		} else {
			d.Error = failText(look, d.Fail)
		}
	}
	for i := range d.Others {
		d.Others[i].Label = pageText(t, d.Others[i].Label)
	}
	if d.Consent != nil {
		scopes := make([]auth.ScopeText, len(d.Consent.Scopes))
		for i, sc := range d.Consent.Scopes {
			scopes[i] = sc
			scopes[i].Text = scopeText(t, sc.Scope)
		}
		d.Consent.Scopes = scopes
	}
	if d.Device != nil {
		d.Device.T, d.Device.Error = t, d.Error
		for i, sc := range d.Device.Scopes {
			d.Device.Scopes[i] = scopeText(t, sc)
		}
	}
}
