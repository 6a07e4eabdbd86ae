package httpapi

import (
	"net/http"

	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
)

// Signing out at a provider: <issuer>/logout is both the end-session
// endpoint of OpenID Connect RP-Initiated Logout 1.0 (id_token_hint,
// client_id, post_logout_redirect_uri, state) and the forward-auth
// sign-out (rd). It ends the browser's sessions (its single sign-on
// and forward-auth cookies'), and the id_token_hint's, through the one
// session-ending path (session.revoked, back-channel logout, tokens
// dead), clears both cookies, then sends the browser to the registered
// post-logout address (with state), to rd, or shows that it is signed
// out. A request that does not prove where it comes from asks the user
// first, with a form bound to the browser (docs/oidc.md, "Signing
// out").

// oidcField is a hidden field of a form.
type oidcField struct{ Name, Value string }

// oidcLogout serves <issuer>/logout, GET or POST.
func (s *Server) oidcLogout(w http.ResponseWriter, r *http.Request, p *projectOP) {
	ctx := op.ContextWithIssuer(r.Context(), p.issuer)
	f := r.Form
	in := auth.EndSessionInput{IDTokenHint: f.Get("id_token_hint"), ClientID: f.Get("client_id"),
		PostLogoutRedirectURI: f.Get("post_logout_redirect_uri"), State: f.Get("state")}
	rd := f.Get("rd")
	var es *auth.EndSession
	if in.Any() {
		var err error
		if es, err = s.auth.OIDCEndSessionRequest(ctx, p.id, p.provider.IDTokenHintVerifier(ctx), in); err != nil {
			s.oidcLogoutFail(w, err)
			return
		}
	}
	browser := s.browserSessions(r, p)
	confirmed := false
	if r.Method == http.MethodPost && r.PostForm.Get("confirm") != "" {
		secret := formSecret(r, p)
		if !s.auth.OIDCLogoutFormTokenValid(secret, in, rd, r.PostForm.Get("csrf")) {
			s.oidcRender(w, http.StatusForbidden, oidcPage{Title: "sign_out_error_title", Text: "error_sign_out_form_not_from_page"})
			return
		}
		confirmed = true
	}
	if !confirmed && len(browser) > 0 && logoutNeedsConfirm(r, es, rd, browser) {
		d := oidcPage{Title: "sign_out_title", Text: "sign_out_text",
			Form: "logout", Action: p.issuer + auth.OIDCLogoutPath, CSRF: s.auth.OIDCLogoutFormToken(browserSecret(w, r, p), in, rd)}
		for _, h := range []oidcField{{"id_token_hint", in.IDTokenHint}, {"client_id", in.ClientID},
			{"post_logout_redirect_uri", in.PostLogoutRedirectURI}, {"state", in.State}, {"rd", rd}} {
			if h.Value != "" {
				d.Hidden = append(d.Hidden, h)
			}
		}
		s.oidcRender(w, http.StatusOK, d)
		return
	}
	var ended []auth.EndedSession
	var held []string
	for _, pr := range browser {
		ended = append(ended, auth.EndedSession{UserID: pr.UserID, SessionID: pr.SessionID})
		held = append(held, pr.SessionID)
	}
	if es != nil && es.HintSessionID != "" {
		ended = append(ended, auth.EndedSession{UserID: es.HintUserID, SessionID: es.HintSessionID})
	}
	if err := s.auth.OIDCEndSessions(ctx, p.id, ended); err != nil {
		s.oidcLogoutFail(w, err)
		return
	}
	s.clearBrowserCookies(w, r, p)
	noStore(w)
	switch {
	case es.RedirectFor(held) != "":
		http.Redirect(w, r, es.RedirectFor(held), http.StatusSeeOther)
		return
	case rd != "":
		if t, err := s.auth.ForwardAuthSignInTarget(ctx, p.id, rd); err == nil {
			http.Redirect(w, r, t.RD, http.StatusSeeOther)
			return
		}
	}
	s.oidcRender(w, http.StatusOK, oidcPage{Title: "signed_out_title", Text: "signed_out_text"})
}

// logoutNeedsConfirm reports whether a sign-out must be confirmed by
// the user before the browser's sessions (browser, not empty) end. An
// RP-initiated logout (es) is confirmed unless its id_token_hint names
// the browser's session: anyone can send a browser to the endpoint. A
// forward-auth sign-out (rd, from a link of a proxied app, which is
// under the cookie domain and so on latchkey's site) is confirmed when
// the browser says it comes from another site; a sign-out with neither
// always is.
func logoutNeedsConfirm(r *http.Request, es *auth.EndSession, rd string, browser []*auth.Principal) bool {
	if es != nil {
		if es.HintSessionID == "" {
			return true
		}
		for _, pr := range browser {
			if pr.SessionID != es.HintSessionID {
				return true
			}
		}
		return false
	}
	if rd == "" {
		return true
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "same-site", "none":
		return false
	}
	return true
}

// browserSessions returns the browser's live sessions for the project:
// its forward-auth cookie's and its single sign-on cookie's (one when
// both hold the same session).
func (s *Server) browserSessions(r *http.Request, p *projectOP) []*auth.Principal {
	var out []*auth.Principal
	for _, name := range []string{fwdCookie, ssoCookie} {
		c, err := r.Cookie(p.cookieName(name))
		if err != nil || c.Value == "" {
			continue
		}
		pr, err := s.browserSession(r, p, name, c.Value)
		if err != nil || (len(out) == 1 && out[0].SessionID == pr.SessionID) {
			continue
		}
		out = append(out, pr)
	}
	return out
}

// clearBrowserCookies removes the project's single sign-on cookie and,
// when the project has forward-auth, its forward-auth cookie.
func (s *Server) clearBrowserCookies(w http.ResponseWriter, r *http.Request, p *projectOP) {
	sso := oidcCookie(p, ssoCookie, "")
	sso.MaxAge = -1
	http.SetCookie(w, sso)
	if proj, err := s.auth.Project(r.Context(), p.id); err == nil && proj.ForwardAuth != nil {
		http.SetCookie(w, &http.Cookie{Name: fwdCookie + p.id, Domain: proj.ForwardAuth.CookieDomain, Path: "/", MaxAge: -1,
			HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	}
}

// oidcLogoutFail shows a refused or failed sign-out on the error page
// (an internal failure is logged); the browser is sent nowhere.
func (s *Server) oidcLogoutFail(w http.ResponseWriter, err error) {
	e := auth.AsError(err)
	if e.Code == auth.ErrInternal.Code {
		s.log.Error("oidc sign-out", "err", err)
	}
	s.oidcRender(w, statusOf(e), oidcPage{Title: "sign_out_error_title", Fail: err})
}
