package httpapi

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

type sendInput struct {
	Email       string `json:"email"`
	RedirectURL string `json:"redirectUrl"`
	DeviceToken string `json:"deviceToken"`
	// Locale picks the mail template; without it the Accept-Language
	// header does (docs/api.md, "Mail templates").
	Locale string `json:"locale"`
}

func (s *Server) otpSend(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in sendInput
	m := s.meta(r, true)
	if err := decode(w, r, &in); err != nil {
		return s.auth.Rejected(r.Context(), c.Project, "email_otp", "send", err, m)
	}
	m.DeviceToken = in.DeviceToken
	if in.Locale != "" {
		m.Locale = in.Locale
	}
	if err := s.auth.SendOTP(r.Context(), c.Project, in.Email, m); err != nil {
		return err
	}
	return ok(w, nil)
}

// otpLogin is the otp/verify login result.
type otpLogin struct {
	loginResult
	ExternalUserID *string `json:"externalUserId"`
	DeviceToken    string  `json:"deviceToken"`
	IsNewUser      bool    `json:"isNewUser"`
}

func (s *Server) otpVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in auth.OTPInput
	m := s.meta(r, true)
	if err := decode(w, r, &in); err != nil {
		return s.auth.Rejected(r.Context(), c.Project, "email_otp", "verify", err, m)
	}
	l, err := s.auth.VerifyOTP(r.Context(), c.Project, in, m)
	if err != nil {
		return err
	}
	lr := newLoginResult(l)
	return ok(w, otpLogin{lr, lr.User.ExternalUserID, l.DeviceToken, l.IsNewUser})
}

func (s *Server) magicSend(w http.ResponseWriter, r *http.Request, _ httprouter.Params, c *auth.Caller) error {
	var in sendInput
	m := s.meta(r, true)
	if err := decode(w, r, &in); err != nil {
		return s.auth.Rejected(r.Context(), c.Project, "magic_link", "send", err, m)
	}
	m.DeviceToken = in.DeviceToken
	if in.Locale != "" {
		m.Locale = in.Locale
	}
	if err := s.auth.SendMagicLink(r.Context(), c.Project, in.Email, in.RedirectURL, m); err != nil {
		return err
	}
	return ok(w, nil)
}

// magicLogin is the magic/verify login result.
type magicLogin struct {
	loginResult
	DeviceToken  string  `json:"deviceToken"`
	NeedsProfile bool    `json:"needsProfile"`
	RedirectURL  *string `json:"redirectUrl"`
	IsNewUser    bool    `json:"isNewUser"`
}

// wantsHTML reports a browser navigation: Accept lists text/html and not
// application/json. Link scanners and API clients get the JSON answer,
// which consumes the link; people get a confirm page, so a scanner
// cannot use a link up (docs/api.md, "GET /api/v1/magic/verify").
func wantsHTML(r *http.Request) bool {
	a := strings.ToLower(r.Header.Get("Accept"))
	return strings.Contains(a, "text/html") && !strings.Contains(a, "application/json")
}

// magicVerify is GET /magic/verify: JSON or 302 for API clients, a
// confirm page (which consumes nothing) for browsers.
func (s *Server) magicVerify(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	token, redirect := q.Get("token"), q.Get("redirect_uri")
	if wantsHTML(r) {
		return s.magicConfirmPage(r.Context(), w, token, redirect)
	}
	return s.magicLogin(w, r, token, redirect, false)
}

// magicConfirm is the confirm page's POST: it consumes the token and
// redirects the browser, or shows a signed-in page. A JSON body
// ({token, redirect_uri}) is an API client's: it gets the GET's contract
// answers (JSON login result or 302) instead of pages.
//
// A browser's POST must come from the confirm page itself (login CSRF: a
// foreign page must not sign the browser into the sender's account):
// see sameOrigin. A refused POST is 403 FORBIDDEN and the link stays
// unused.
func (s *Server) magicConfirm(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if !s.sameOrigin(r) {
		return auth.ErrForbidden
	}
	if ct := strings.ToLower(r.Header.Get("Content-Type")); strings.HasPrefix(ct, "application/json") {
		var in struct {
			Token       string `json:"token"`
			RedirectURI string `json:"redirect_uri"`
		}
		if err := decode(w, r, &in); err != nil {
			return s.auth.Rejected(r.Context(), nil, "magic_link", "verify", err, s.meta(r, false))
		}
		return s.magicLogin(w, r, in.Token, in.RedirectURI, false)
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		return page(w, http.StatusBadRequest, "Sign-in failed", "Could not read the form.", nil)
	}
	return s.magicLogin(w, r, r.PostForm.Get("token"), r.PostForm.Get("redirect_uri"), true)
}

// sameOrigin reports whether a POST may act for the browser that sent
// it: its Origin is the base URL's origin, or its Sec-Fetch-Site is
// same-origin, or it carries neither header (a client other than a
// browser, which sends both). "Origin: null" (sandboxed or privacy
// contexts) counts as cross-site.
func (s *Server) sameOrigin(r *http.Request) bool {
	origin, hasOrigin := r.Header["Origin"]
	site, hasSite := r.Header["Sec-Fetch-Site"]
	if !hasOrigin && !hasSite {
		return true
	}
	if hasOrigin && len(origin) == 1 && s.baseOrigin != "" {
		if o, err := auth.NormalizeOrigin(origin[0]); err == nil && o == s.baseOrigin {
			return true
		}
	}
	return hasSite && len(site) == 1 && strings.EqualFold(strings.TrimSpace(site[0]), "same-origin")
}

func (s *Server) magicLogin(w http.ResponseWriter, r *http.Request, token, redirect string, browser bool) error {
	l, err := s.auth.VerifyMagicLink(r.Context(), token, redirect, s.meta(r, false))
	if err != nil {
		if browser {
			e := auth.AsError(err)
			return page(w, statusOf(e), "Sign-in failed", e.Message, nil)
		}
		return err
	}
	target := redirect
	if target == "" && browser {
		target = l.RedirectURL
	}
	if target != "" {
		// The Location carries a session token: no cache may keep it.
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, withToken(target, l.Token), http.StatusFound)
		return nil
	}
	if browser {
		return page(w, http.StatusOK, "Signed in", "You are signed in. You can close this window.", nil)
	}
	var ru *string
	if l.RedirectURL != "" {
		ru = &l.RedirectURL
	}
	return ok(w, magicLogin{newLoginResult(l), l.DeviceToken, l.User.FirstName == "", ru, l.IsNewUser})
}

// withToken appends token=<jwt> to a URL's query: "?token=" or, when
// the URL already has a query, "&token="; a fragment stays last.
func withToken(target, jwt string) string {
	frag := ""
	if i := strings.IndexByte(target, '#'); i >= 0 {
		target, frag = target[:i], target[i:]
	}
	sep := "?"
	if strings.Contains(target, "?") {
		sep = "&"
	}
	return target + sep + "token=" + url.QueryEscape(jwt) + frag
}

func (s *Server) magicConfirmPage(ctx context.Context, w http.ResponseWriter, token, redirect string) error {
	p, err := s.auth.MagicLinkProject(ctx, token)
	if err != nil {
		e := auth.AsError(err)
		return page(w, statusOf(e), "Link not valid", e.Message, nil)
	}
	if redirect != "" && !auth.CheckRedirect(redirect, p.AllowedOrigins) {
		return page(w, http.StatusBadRequest, "Link not valid", auth.ErrInvalidRedirect.Message, nil)
	}
	return page(w, http.StatusOK, "Sign in to "+p.Name, "Press the button to finish signing in to "+p.Name+".",
		&confirmForm{Action: auth.MagicPath, Token: token, Redirect: redirect})
}

type confirmForm struct {
	Action, Token, Redirect string
}

// pageTmpl is parsed at its first use, not at the start.
var pageTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem;color:#222}
button{font-size:1.1rem;padding:.7rem 1.6rem;border:0;border-radius:.4rem;background:#2456d6;color:#fff;cursor:pointer}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Text}}</p>
{{with .Form}}<form method="post" action="{{.Action}}"><input type="hidden" name="token" value="{{.Token}}">
{{if .Redirect}}<input type="hidden" name="redirect_uri" value="{{.Redirect}}">{{end}}
<button type="submit">Sign in</button></form>{{end}}
</body></html>`))
})

// page writes a small HTML page.
func page(w http.ResponseWriter, status int, title, text string, form *confirmForm) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	return pageTmpl().Execute(w, struct {
		Title, Text string
		Form        *confirmForm
	}{title, text, form})
}
