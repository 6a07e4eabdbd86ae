package httpapi

import (
	"bytes"
	"net/http"
	"net/url"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
)

// Authorization responses in response mode form_post (OAuth 2.0 Form
// Post Response Mode): the browser posts the answer to the client's
// redirect URI from a page that submits itself. op's page carries only
// code and state, so a relying party that checks iss (RFC 9207, which
// discovery announces) refuses it, and op answers errors of a form_post
// request as a query redirect. latchkey writes its own page for both:
// every parameter of the answer (code or error, error_description,
// state, iss), submitted by a script the page's CSP allows by nonce,
// with a button for a browser without scripts.

// formPostWriter turns the redirect of an authorization response to
// redirectURI into the form_post page that posts the same parameters.
// Other answers pass as they are, and so does every answer during a
// store outage, which the answer writer underneath makes a 503.
type formPostWriter struct {
	http.ResponseWriter
	s           *Server
	r           *http.Request
	projectID   string
	redirectURI string
	replaced    bool
}

// Unwrap returns the writer underneath (http.ResponseController).
func (f *formPostWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// formPostAnswers wraps w so that the authorization response to
// redirectURI is posted when mode is form_post; otherwise it returns w.
func (s *Server) formPostAnswers(w http.ResponseWriter, r *http.Request, projectID, mode, redirectURI string) http.ResponseWriter {
	if oidc.ResponseMode(mode) != oidc.ResponseModeFormPost || redirectURI == "" {
		return w
	}
	return &formPostWriter{ResponseWriter: w, s: s, r: r, projectID: projectID, redirectURI: redirectURI}
}

// WriteHeader writes the form_post page instead of a redirect to the
// client's redirect URI.
func (f *formPostWriter) WriteHeader(status int) {
	if f.replaced {
		return
	}
	if status == http.StatusFound && !auth.OIDCStoreOutage(f.r.Context()) {
		if values, ok := responseParams(f.Header().Get("Location"), f.redirectURI); ok {
			f.replaced = true
			h := f.Header()
			for _, k := range []string{"Location", "Content-Type", "Content-Length"} {
				h.Del(k)
			}
			f.s.writeFormPost(pageWriterOf(f.ResponseWriter, f.r, f.projectID), f.redirectURI, values)
			return
		}
	}
	f.ResponseWriter.WriteHeader(status)
}

// Write drops the body of the redirect the page replaced.
func (f *formPostWriter) Write(p []byte) (int, error) {
	if f.replaced {
		return len(p), nil
	}
	return f.ResponseWriter.Write(p)
}

// responseParams returns the parameters the redirect to location adds
// to redirectURI, when location is redirectURI with parameters added
// (op keeps the redirect URI's own query and appends the answer's).
func responseParams(location, redirectURI string) (url.Values, bool) {
	loc, err := url.Parse(location)
	if err != nil {
		return nil, false
	}
	reg, err := url.Parse(redirectURI)
	if err != nil {
		return nil, false
	}
	q := loc.Query()
	own := reg.Query()
	loc.RawQuery, reg.RawQuery = "", ""
	if loc.String() != reg.String() {
		return nil, false
	}
	for k := range own {
		q.Del(k)
	}
	return q, true
}

// formPostPage is the form_post page's data.
type formPostPage struct {
	Nonce, Action, Button, Lang string
	Fields                      []oidcField
}

// formPostTmpl is parsed at its first use, as the other pages are.
var formPostTmpl = newPageTemplate("formpost", nil).from(`<!doctype html>
<html lang="{{.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>…</title></head>
<body><form method="post" action="{{.Action}}">
{{range .Fields}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">
{{end}}<noscript><button type="submit">{{.Button}}</button></noscript>
</form>
<script nonce="{{.Nonce}}">document.forms[0].submit()</script>
</body></html>`)

// writeFormPost writes the page that posts values to action: a CSP
// that runs only its own script (by nonce), no framing, no caching, no
// referrer.
func (s *Server) writeFormPost(w http.ResponseWriter, action string, values url.Values) {
	look := s.lookOf(w)
	d := formPostPage{Nonce: randomToken(), Action: action, Button: pageText(look.Texts, "continue_button"), Lang: look.Lang}
	for _, k := range []string{"code", "error", "error_description", "error_uri", "state", "session_state", "iss"} {
		if v := values.Get(k); v != "" {
			d.Fields = append(d.Fields, oidcField{Name: k, Value: v})
		}
	}
	var b bytes.Buffer
	if err := formPostTmpl.Execute(&b, d); err != nil {
		s.log.Error("oidc form_post page", "err", err)
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'nonce-"+d.Nonce+"'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	noStore(w)
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
}

// oidcAuthorizeCallback is op's authorization callback (op.AuthorizeCallback)
// with the form_post answers above: a request in response mode
// form_post is answered as in query mode, and its redirect becomes the
// page.
func (s *Server) oidcAuthorizeCallback(w http.ResponseWriter, r *http.Request, p *projectOP) {
	authReq, err := p.lk.Storage().AuthRequestByID(r.Context(), r.URL.Query().Get("id"))
	if err != nil {
		op.AuthRequestError(w, r, nil, err, p.lk)
		return
	}
	if authReq.GetResponseMode() == oidc.ResponseModeFormPost {
		w = s.formPostAnswers(w, r, p.id, string(oidc.ResponseModeFormPost), authReq.GetRedirectURI())
		authReq = queryMode{authReq}
	}
	if !authReq.Done() {
		op.AuthRequestError(w, r, authReq,
			oidc.ErrInteractionRequired().WithDescription("The user is not signed in, or another step is needed."), p.lk)
		return
	}
	op.AuthResponse(authReq, p.lk, w, r)
}

// queryMode is an authorization request answered as in response mode
// query (its redirect is then posted by formPostWriter).
type queryMode struct{ op.AuthRequest }

// GetResponseMode returns query.
func (queryMode) GetResponseMode() oidc.ResponseMode { return oidc.ResponseModeQuery }
