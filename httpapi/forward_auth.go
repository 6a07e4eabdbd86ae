package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// Forward-auth (docs/forward-auth.md): the check a reverse proxy calls
// for every request to a protected app, and the sign-in pages of
// proxied apps under the project's issuer. The check believes the
// X-Forwarded-* headers (or nginx's X-Original-URL) of a trusted proxy
// only; nginx (X-Original-URL) hears 401 and sends the browser to the
// sign-in page itself (error_page 401), Caddy and Traefik hear 302 to
// it with the original URL.

// fwdCookie names a project's forward-auth cookie (Domain: the
// project's cookie domain, Path /).
const fwdCookie = "lk_fa_"

// Identity headers of an allowed request.
const (
	hdrRemoteUser   = "Remote-User"
	hdrRemoteEmail  = "Remote-Email"
	hdrRemoteGroups = "Remote-Groups"
	hdrRemoteName   = "Remote-Name"
)

// forwardAuthRoutes registers the check and the pages.
func (s *Server) forwardAuthRoutes() {
	s.router.GET("/api/v1/forward-auth/:projectId", s.forwardAuth)
	for _, p := range []string{auth.ForwardAuthSignInPath, auth.ForwardAuthCodePath, auth.ForwardAuthSecondFactorPath, auth.ForwardAuthLogoutPath} {
		s.router.GET("/oidc/:project"+p, s.forwardAuthPage)
		s.router.POST("/oidc/:project"+p, s.forwardAuthPage)
	}
}

// forwardAuth is the check: 200 with the Remote-* headers, 401 (nginx)
// or 302 to the sign-in page (the others), 403, or 400 when the
// request does not come from a trusted proxy or does not say what it
// asks about.
func (s *Server) forwardAuth(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	projectID := ps.ByName("projectId")
	f, nginx, err := s.forwardedRequest(r)
	if err != nil {
		s.writeError(w, err)
		return
	}
	cookie, _ := cookieValue(r.Header, fwdCookie, projectID)
	id, err := s.auth.ForwardAuthCheck(r.Context(), projectID, f, cookie)
	if err != nil {
		if auth.AsError(err).Is(auth.ErrSignInRequired) {
			// nginx hears 401 and redirects itself (error_page 401 to
			// this Location, which auth_request_set reads).
			w.Header().Set("Location", s.auth.OIDCIssuer(projectID)+auth.ForwardAuthSignInPath+"?rd="+url.QueryEscape(f.URL()))
			if !nginx {
				err = withStatus(http.StatusFound, err)
			}
		}
		s.writeError(w, err)
		return
	}
	if id.UserID != "" { // none for a bypass rule
		// Canonical keys, assigned: one slice holds the four values.
		v := []string{id.UserID, id.Email, strings.Join(id.Groups, ","), id.Name}
		h := w.Header()
		h[hdrRemoteUser], h[hdrRemoteEmail], h[hdrRemoteGroups], h[hdrRemoteName] = v[0:1:1], v[1:2:2], v[2:3:3], v[3:4:4]
	}
	ok(w, nil)
}

// forwardedRequest reads what the proxy asks about: nginx's
// X-Original-URL (nginx is true), else X-Forwarded-Proto, -Host and
// -Uri, which must agree when both come; only from a trusted proxy (400
// UNTRUSTED_PROXY otherwise, whatever the headers say).
func (s *Server) forwardedRequest(r *http.Request) (auth.ForwardedRequest, bool, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !s.trusted(peer.Unmap()) {
		return auth.ForwardedRequest{}, false, auth.ErrUntrustedProxy
	}
	h := r.Header
	return auth.ParseForwardedHeaders(headerValue(h, hdrOriginalURL), headerValue(h, hdrForwardedProto), headerValue(h, hdrForwardedHost), headerValue(h, hdrForwardedURI))
}

// forwardAuthPage serves the sign-in pages of proxied apps and the
// sign-out, under an existing project's issuer.
func (s *Server) forwardAuthPage(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	p, err := s.projectOP(r, ps.ByName("project"))
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	w = pageWriterOf(w, r, p.id)
	if !s.readPageForm(w, r) {
		return
	}
	switch strings.TrimPrefix(r.URL.Path, oidcPrefix+p.id) {
	case auth.ForwardAuthLogoutPath:
		// The sign-out is the providers' end-session endpoint too.
		s.oidcLogout(w, r, p)
		return
	}
	t, err := s.auth.ForwardAuthSignInTarget(r.Context(), p.id, r.Form.Get("rd"))
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	if r.Method == http.MethodPost {
		browser := formSecret(r, p)
		if !s.auth.ForwardAuthFormTokenValid(browser, t.RD, r.PostForm.Get("csrf")) {
			s.oidcError(w, http.StatusForbidden, "error_forward_form_not_from_page")
			return
		}
	}
	switch sub := strings.TrimPrefix(r.URL.Path, oidcPrefix+p.id); {
	case sub == auth.ForwardAuthSignInPath && r.Method == http.MethodPost:
		s.forwardAuthSendCode(w, r, p, t)
	case sub == auth.ForwardAuthCodePath && r.Method == http.MethodPost:
		s.forwardAuthCode(w, r, p, t)
	case sub == auth.ForwardAuthSecondFactorPath && r.Method == http.MethodPost:
		s.forwardAuthSecondFactor(w, r, p, t)
	default:
		pr, tok := s.forwardAuthSession(r, p, t)
		s.forwardAuthNext(w, r, p, t, pr, tok, "")
	}
}

// forwardAuthSession returns the browser's session for sign-in t: its
// forward-auth cookie's, else its single sign-on cookie's (only the
// latter for the account page, which reads no other: a browser with
// only the former would be sent back and forth); nil without a live
// one. tok is the session's token.
func (s *Server) forwardAuthSession(r *http.Request, p *projectOP, t *auth.ForwardAuthTarget) (pr *auth.Principal, tok string) {
	names := []string{fwdCookie, ssoCookie}
	if t.AccountPage() {
		names = names[1:]
	}
	for _, name := range names {
		if c, err := r.Cookie(p.cookieName(name)); err == nil && c.Value != "" {
			if pr, err := s.browserSession(r, p, name, c.Value); err == nil {
				return pr, c.Value
			}
		}
	}
	return nil, ""
}

// browserSession checks the value of the browser's cookie name
// (fwdCookie, which holds a forward-auth token, or ssoCookie, a session
// token) for the project.
func (s *Server) browserSession(r *http.Request, p *projectOP, name, value string) (*auth.Principal, error) {
	if name == fwdCookie {
		return s.auth.ForwardAuthBrowserSession(r.Context(), p.id, value)
	}
	return s.auth.OIDCBrowserSession(r.Context(), p.id, value)
}

// forwardAuthNext takes the sign-in as far as the browser's session pr
// allows (tok: its token): back to the app with the cookie set, the
// second factor, or the email form.
func (s *Server) forwardAuthNext(w http.ResponseWriter, r *http.Request, p *projectOP, t *auth.ForwardAuthTarget, pr *auth.Principal, tok, email string) {
	step, err := s.auth.ForwardAuthContinue(r.Context(), t, pr)
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	if step != auth.OIDCStepDone && subresource(r) {
		// No form, so no CSRF cookie: the favicon the browser asks the
		// app for is sent here too, at the same time as the page, and
		// its cookie would replace the page's.
		s.oidcError(w, http.StatusUnauthorized, "error_sign_in_first")
		return
	}
	switch step {
	case auth.OIDCStepDone:
		s.setForwardAuthCookie(w, p, t, pr, tok)
		noStore(w)
		http.Redirect(w, r, t.RD, http.StatusSeeOther)
	case auth.OIDCStepSecondFactor:
		s.forwardAuthFactor(w, r, p, t, pr)
	default:
		s.forwardAuthForm(w, r, p, t, http.StatusOK, "email", email, nil)
	}
}

// subresource reports whether the browser says r is no page it
// navigates to (Sec-Fetch-Dest: an image, a script, a fetch...), such as
// the favicon it asks a protected app for, which the proxy sends to the
// sign-in page as it does the page itself.
func subresource(r *http.Request) bool {
	d := r.Header.Get("Sec-Fetch-Dest")
	return r.Method == http.MethodGet && d != "" && d != "document"
}

// forwardAuthSendCode emails the code and shows the code form.
func (s *Server) forwardAuthSendCode(w http.ResponseWriter, r *http.Request, p *projectOP, t *auth.ForwardAuthTarget) {
	email := r.PostForm.Get("email")
	if err := s.auth.ForwardAuthSendCode(r.Context(), t, email, s.meta(r, false)); err != nil {
		e := auth.AsError(err)
		s.forwardAuthForm(w, r, p, t, statusOf(e), "email", email, err)
		return
	}
	s.forwardAuthForm(w, r, p, t, http.StatusOK, "code", email, nil)
}

// forwardAuthCode checks the code: a session, its cookies, then the
// next step.
func (s *Server) forwardAuthCode(w http.ResponseWriter, r *http.Request, p *projectOP, t *auth.ForwardAuthTarget) {
	email := r.PostForm.Get("email")
	l, err := s.auth.ForwardAuthVerifyCode(r.Context(), t, email, r.PostForm.Get("code"), s.meta(r, false))
	if err != nil {
		e := auth.AsError(err)
		s.forwardAuthForm(w, r, p, t, statusOf(e), "code", email, err)
		return
	}
	s.forwardAuthSignedIn(w, r, p, t, l, email)
}

// setForwardAuthCookie gives the browser tok, pr's session token, as the
// project's forward-auth cookie: Domain the cookie domain (every app
// under it sends it to its proxy), HttpOnly, Secure, SameSite=Lax,
// expiring with the token.
func (s *Server) setForwardAuthCookie(w http.ResponseWriter, p *projectOP, t *auth.ForwardAuthTarget, pr *auth.Principal, tok string) {
	if pr == nil || tok == "" || t.CookieDomain == "" { // the account page's sign-in sets none
		return
	}
	// Every app under the domain sees the cookie: it holds the
	// session's forward-auth token, never the session token itself.
	tok, err := s.auth.ForwardAuthToken(t, pr)
	if err != nil {
		s.log.Error("forward-auth token", "err", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: fwdCookie + p.id, Value: tok, Domain: t.CookieDomain, Path: "/",
		MaxAge: max(1, int(pr.ExpiresAt-s.auth.Now().Unix())), HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
}

// forwardAuthForm shows form ("email" or "code"; the second factor's:
// forwardAuthFactorForm) for target t
// with the hosted pages' template, email filled in and an error, if
// any.
func (s *Server) forwardAuthForm(w http.ResponseWriter, r *http.Request, p *projectOP, t *auth.ForwardAuthTarget, status int, form, email string, fail error) {
	q := "?rd=" + url.QueryEscape(t.RD)
	d := oidcPage{Form: form, Email: email, Fail: fail, CSRF: s.auth.ForwardAuthFormToken(browserSecret(w, r, p), t.RD)}
	switch form {
	case "email":
		d.Title, d.Text, d.Action = "sign_in_title", "sign_in_text", p.issuer+auth.ForwardAuthSignInPath+q
	case "code":
		d.Title, d.Text, d.Action = "code_title", "code_text", p.issuer+auth.ForwardAuthCodePath+q
	}
	s.oidcRender(w, status, d)
}
