package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"html/template"
	"net/http"
	"net/url"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
)

// The providers' hosted sign-in pages and the checks latchkey puts in
// front of op's authorization endpoint and callback (docs/oidc.md,
// "Sign-in pages"). Pages are server-rendered and work without scripts;
// the one script, the sign-in page's passkey ceremony, is the page's own
// (by nonce). Every form carries a CSRF token bound to the browser (a
// cookie) and to its authorization request, every answer forbids
// framing, caching and referrers, and no input is written back
// unescaped. The other ways in (a link, a passkey, a provider) and the
// second factors besides TOTP are in oidc_methods.go.

// oidcPages are the pages under an issuer, by path (GET and POST).
var oidcPages = map[string]func(*Server, http.ResponseWriter, *http.Request, *projectOP){
	auth.OIDCLoginPath:        (*Server).oidcLogin,
	auth.OIDCLoginCodePath:    (*Server).oidcLoginCode,
	auth.OIDCSecondFactorPath: (*Server).oidcSecondFactor,
	auth.OIDCSendLinkPath:     (*Server).oidcSendLink,
	auth.OIDCLinkPath:         (*Server).oidcLink,
	auth.OIDCPasskeyPath:      (*Server).oidcPasskey,
	auth.OIDCProviderPath:     (*Server).oidcProvider,
	auth.OIDCSendSMSPath:      (*Server).oidcSendSMS,
	auth.OIDCConsentPath:      (*Server).oidcConsent, // oidc_consent.go
	auth.OIDCDevicePath:       (*Server).oidcDevice,  // oidc_device.go
}

// Cookie names of the hosted pages, per project (Path: the issuer's).
const (
	// ssoCookie holds the browser's session token: the single sign-on.
	ssoCookie = "lk_sso_"
	// csrfCookie holds the browser's random CSRF secret.
	csrfCookie = "lk_csrf_"
)

// oidcAuthorize is the authorization endpoint: an unknown client or a
// redirect URI the client did not register gets latchkey's error page,
// never a redirect (op would answer text); the rest is op's.
func (s *Server) oidcAuthorize(w http.ResponseWriter, r *http.Request, p *projectOP) {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		s.oidcError(w, http.StatusBadRequest, "error_request_unreadable")
		return
	}
	clientID, redirect := authorizeParam(r, "client_id"), authorizeParam(r, "redirect_uri")
	c, err := p.storage.GetClientByClientID(r.Context(), clientID)
	if clientID == "" || err != nil {
		s.oidcFail(w, auth.ErrUnknownClient)
		return
	}
	if redirect == "" || op.ValidateAuthReqRedirectURI(c, redirect, oidc.ResponseTypeCode) != nil {
		s.oidcFail(w, auth.ErrUnregisteredReturn)
		return
	}
	if s.oidcResponseTypeRefused(w, r, p, redirect) || s.oidcParamRefused(w, r, p, redirect) {
		return
	}
	// A browser with a session the request may use gets its code at
	// once (single sign-on: no hop through the sign-in page and the
	// callback), in an answer not to be cached.
	auth.OIDCNoteBrowser(r.Context(), s.oidcSession(r, p))
	noStore(w)
	p.handler.ServeHTTP(s.formPostAnswers(w, r, p.id, authorizeParam(r, "response_mode"), redirect), r)
}

// authorizeParam returns parameter key of authorization request r as op
// reads it: the last value of a repeated one ("" when absent). The
// checks in front of op and the answer's form_post page read the
// parameters op stores the request with, so that a request that repeats
// one (RFC 6749 forbids it) cannot be checked by one value and answered
// by another.
func authorizeParam(r *http.Request, key string) string {
	if v := r.Form[key]; len(v) > 0 {
		return v[len(v)-1]
	}
	return ""
}

// oidcCallback is op's callback, which issues the code: only for the
// browser whose session answered the request (a form_post request gets
// latchkey's page, oidc_formpost.go).
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request, p *projectOP) {
	if !s.auth.OIDCCallbackAllowed(r.Context(), p.id, r.URL.Query().Get("id"), s.oidcSession(r, p)) {
		s.oidcError(w, http.StatusBadRequest, "error_other_browser")
		return
	}
	noStore(w) // the redirect carries the code
	s.oidcAuthorizeCallback(w, r, p)
}

// oidcLogin is the sign-in page: GET takes the request as far as the
// browser's session allows (single sign-on) or shows the email form;
// POST sends the code and shows the code form.
func (s *Server) oidcLogin(w http.ResponseWriter, r *http.Request, p *projectOP) {
	ctx := r.Context()
	if r.Method == http.MethodPost {
		id, ok := s.oidcForm(w, r, p)
		if !ok {
			return
		}
		email := r.PostForm.Get("email")
		if err := s.auth.OIDCSendCode(ctx, p.id, id, email, s.meta(r, false)); err != nil {
			form := "email"
			if r.PostForm.Get("why") == formPasskeyFirst {
				form = formPasskeyFirst // the page keeps saying why
			}
			s.oidcRetry(w, r, p, err, id, form, email)
			return
		}
		s.oidcShowForm(w, r, p, http.StatusOK, id, "code", email, nil)
		return
	}
	id := r.URL.Query().Get("authRequestID")
	step, err := s.auth.OIDCContinue(ctx, p.id, id, s.oidcSession(r, p), false)
	if err != nil {
		s.oidcStepError(w, r, p, id, err)
		return
	}
	if step == auth.OIDCStepDone {
		// Single sign-on: no page, so no read of what a page shows.
		s.oidcNext(w, r, p, id, step)
		return
	}
	sr, err := s.auth.OIDCSignInRequest(ctx, p.id, id)
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	switch {
	case sr.PromptNone && (step == auth.OIDCStepSecondFactor || step == auth.OIDCStepPasskeyFirst):
		s.oidcAnswerError(w, r, p, id, oidc.ErrInteractionRequired().WithDescription("A second factor is needed."))
	case sr.PromptNone && step == auth.OIDCStepConsent:
		s.oidcAnswerError(w, r, p, id, errConsentRequired)
	case sr.PromptNone:
		s.oidcAnswerError(w, r, p, id, oidc.ErrLoginRequired().WithDescription("The user is not signed in."))
	case step == auth.OIDCStepSecondFactor, step == auth.OIDCStepConsent:
		s.oidcNext(w, r, p, id, step)
	case step == auth.OIDCStepPasskeyFirst:
		s.oidcShowForm(w, r, p, http.StatusOK, id, formPasskeyFirst, sr.LoginHint, nil)
	default:
		s.oidcShowForm(w, r, p, http.StatusOK, id, "email", sr.LoginHint, nil)
	}
}

// oidcLoginCode is the code form's POST: the code signs the browser in
// (a session, its cookie), then the request goes on.
func (s *Server) oidcLoginCode(w http.ResponseWriter, r *http.Request, p *projectOP) {
	id, ok := s.oidcPostForm(w, r, p)
	if !ok {
		return
	}
	ctx := r.Context()
	email := r.PostForm.Get("email")
	l, err := s.auth.OIDCVerifyCode(ctx, p.id, id, email, r.PostForm.Get("code"), s.meta(r, false))
	if err != nil {
		s.oidcRetry(w, r, p, err, id, "code", email)
		return
	}
	s.oidcSignedIn(w, r, p, id, l)
}

// oidcSignedIn makes l, a sign-in on request id's pages, the browser's
// session (its cookie) and takes the request on.
func (s *Server) oidcSignedIn(w http.ResponseWriter, r *http.Request, p *projectOP, id string, l *auth.Login) {
	ctx := r.Context()
	pr, err := s.auth.OIDCBrowserSession(ctx, p.id, l.Token)
	if err != nil {
		s.oidcStepError(w, r, p, id, err)
		return
	}
	s.setSSOCookie(w, p, l.Token)
	step, err := s.auth.OIDCContinue(ctx, p.id, id, pr, true)
	if err != nil {
		s.oidcStepError(w, r, p, id, err)
		return
	}
	s.oidcNext(w, r, p, id, step)
}

// oidcSecondFactor is the second-factor page: GET shows the form of a
// factor (?method=totp, sms or backup; TOTP when the user has it, else
// SMS), POST checks its code, then the request goes on. A backup code
// signs in again (a new session, the browser's cookie then).
func (s *Server) oidcSecondFactor(w http.ResponseWriter, r *http.Request, p *projectOP) {
	ctx := r.Context()
	pr := s.oidcSession(r, p)
	if r.Method != http.MethodPost {
		id := r.URL.Query().Get("authRequestID")
		if _, err := s.auth.OIDCSignInRequest(ctx, p.id, id); err != nil {
			s.oidcFail(w, err)
			return
		}
		if pr == nil {
			http.Redirect(w, r, p.issuer+auth.OIDCLoginPath+"?authRequestID="+url.QueryEscape(id), http.StatusSeeOther)
			return
		}
		s.oidcShowFactor(w, r, p, http.StatusOK, id, pr, r.URL.Query().Get("method"), "", nil)
		return
	}
	id, ok := s.oidcForm(w, r, p)
	if !ok {
		return
	}
	if pr == nil {
		s.oidcError(w, http.StatusUnauthorized, "error_sign_in_ended")
		return
	}
	method := r.PostForm.Get("method")
	if method == enrollStart {
		s.oidcShowEnroll(w, r, p, http.StatusOK, id, pr, enrollShow, nil)
		return
	}
	l, err := s.auth.OIDCSecondFactor(ctx, p.id, id, pr, method, r.PostForm.Get("code"), s.meta(r, false))
	if e := auth.AsError(err); method == auth.OIDCFactorEnroll && (e.Is(auth.ErrStepUpRequired) || e.Is(auth.ErrTOTPNotEnrolled)) {
		// The set-up expired, or the sign-in is too old to set up a
		// factor: the request's sign-in page takes it from there (a
		// session still recent starts the set-up again, another signs
		// in again: OIDCContinue).
		s.oidcNext(w, r, p, id, auth.OIDCStepSignIn)
		return
	} else if err != nil {
		s.oidcShowFactor(w, r, p, statusOf(e), id, pr, method, "", err)
		return
	}
	if l != nil { // a backup code: a sign-in of its own
		s.oidcSignedIn(w, r, p, id, l)
		return
	}
	step, err := s.auth.OIDCContinue(ctx, p.id, id, pr, false)
	if err != nil {
		s.oidcStepError(w, r, p, id, err)
		return
	}
	s.oidcNext(w, r, p, id, step)
}

// oidcNext sends the browser to the request's next step: the callback
// that issues the code, the second factor, the consent page, or the
// sign-in again.
func (s *Server) oidcNext(w http.ResponseWriter, r *http.Request, p *projectOP, id string, step auth.OIDCStep) {
	target := p.issuer + auth.OIDCLoginPath + "?authRequestID=" + url.QueryEscape(id)
	switch step {
	case auth.OIDCStepDone:
		target = op.AuthCallbackURL(p.lk)(r.Context(), id)
		if back := s.auth.OIDCDeviceReturn(r.Context(), p.id, id); back != "" {
			target = back // the device page's sign-in
		}
	case auth.OIDCStepSecondFactor:
		target = p.issuer + auth.OIDCSecondFactorPath + "?authRequestID=" + url.QueryEscape(id)
	case auth.OIDCStepConsent:
		target = p.issuer + auth.OIDCConsentPath + "?authRequestID=" + url.QueryEscape(id)
	}
	noStore(w)
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// oidcStepError shows a failure of a step on the error page.
func (s *Server) oidcStepError(w http.ResponseWriter, _ *http.Request, _ *projectOP, _ string, err error) {
	s.oidcFail(w, err)
}

// oidcFail shows err on the error page (and logs it when it is an
// internal failure); the store out of reach is 503 with Retry-After.
func (s *Server) oidcFail(w http.ResponseWriter, err error) {
	e := auth.AsError(err)
	if e.Code == auth.ErrInternal.Code {
		s.log.Error("oidc sign-in", "err", err)
	}
	if e.Is(auth.ErrUnavailable) {
		w.Header().Set("Retry-After", retryAfter)
	}
	s.oidcRender(w, statusOf(e), oidcPage{Title: "error_title", Fail: err})
}

// oidcRetry shows form again with err's message, or the error page when
// the auth request is gone (there is nothing left to retry).
func (s *Server) oidcRetry(w http.ResponseWriter, r *http.Request, p *projectOP, err error, id, form, email string) {
	e := auth.AsError(err)
	if e.Is(auth.ErrNotFound) {
		s.oidcFail(w, err)
		return
	}
	s.oidcShowForm(w, r, p, statusOf(e), id, form, email, err)
}

// oidcAnswerError redirects request id's refusal to its client (with
// iss), or shows the error page when the request is gone.
func (s *Server) oidcAnswerError(w http.ResponseWriter, r *http.Request, p *projectOP, id string, e *oidc.Error) {
	t := s.auth.OIDCAnswerError(r.Context(), p.id, id)
	if t == nil {
		s.oidcFail(w, auth.ErrAuthRequestGone)
		return
	}
	noStore(w)
	op.AuthRequestError(s.formPostAnswers(w, r, p.id, string(t.GetResponseMode()), t.GetRedirectURI()), r, t, e, p.lk)
}

// oidcForm reads a page's POST and checks its CSRF token; it returns
// the form's request id, or false once it has answered.
func (s *Server) oidcForm(w http.ResponseWriter, r *http.Request, p *projectOP) (string, bool) {
	if !s.readPageForm(w, r) {
		return "", false
	}
	id := r.PostForm.Get("authRequestID")
	browser := formSecret(r, p)
	if !s.auth.OIDCFormTokenValid(browser, id, r.PostForm.Get("csrf")) {
		s.oidcError(w, http.StatusForbidden, "error_form_not_from_page")
		return "", false
	}
	return id, true
}

// oidcPostForm is oidcForm for a form that is only ever posted: any
// other method is refused with a page.
func (s *Server) oidcPostForm(w http.ResponseWriter, r *http.Request, p *projectOP) (string, bool) {
	if r.Method != http.MethodPost {
		s.oidcError(w, http.StatusMethodNotAllowed, "error_open_from_app")
		return "", false
	}
	return s.oidcForm(w, r, p)
}

// oidcSession returns the browser's session from its cookie, nil
// without a live one.
func (s *Server) oidcSession(r *http.Request, p *projectOP) *auth.Principal {
	c, err := r.Cookie(p.cookieName(ssoCookie))
	if err != nil || c.Value == "" {
		return nil
	}
	pr, err := s.auth.OIDCBrowserSession(r.Context(), p.id, c.Value)
	if err != nil {
		return nil
	}
	return pr
}

// oidcCookie returns the project's page cookie name (ssoCookie,
// csrfCookie, oauthCookie) with value: named and scoped by
// p.cookies, HttpOnly.
func oidcCookie(p *projectOP, name, value string) *http.Cookie {
	return &http.Cookie{Name: p.cookieName(name), Value: value, Path: p.cookies.path, HttpOnly: true, Secure: p.cookies.secure}
}

// setSSOCookie makes tok, a session token, the browser's session for
// the project (SameSite=Lax: the client's redirects to /authorize carry
// it). It lasts as long as the browser session: the token's own expiry
// and its session's end it sooner.
func (s *Server) setSSOCookie(w http.ResponseWriter, p *projectOP, tok string) {
	c := oidcCookie(p, ssoCookie, tok)
	c.SameSite = http.SameSiteLaxMode
	http.SetCookie(w, c)
}

// browserSecret returns the browser's CSRF secret, giving it one when
// it has none (SameSite=Strict: only the pages' own forms send it).
func browserSecret(w http.ResponseWriter, r *http.Request, p *projectOP) string {
	if v := csrfSecret(r, p); len(v) >= 32 {
		return v
	}
	v := randomToken()
	c := oidcCookie(p, csrfCookie, v)
	c.SameSite = http.SameSiteStrictMode
	http.SetCookie(w, c)
	return v
}

// csrfSecret returns the browser's CSRF secret for project p as its
// cookie holds it ("" without one); browserSecret gives a browser
// without one a new one.
func csrfSecret(r *http.Request, p *projectOP) string {
	if c, err := r.Cookie(p.cookieName(csrfCookie)); err == nil {
		return c.Value
	}
	return ""
}

// formSecret returns the CSRF secret a posted form's token is checked
// against: the browser's, or "" (no token is valid) when the browser
// says the form was posted from another origin (postedFromOrigin).
func formSecret(r *http.Request, p *projectOP) string {
	if !postedFromOrigin(r, p.origin) {
		return ""
	}
	return csrfSecret(r, p)
}

// readPageForm reads a page's posted form (at most MaxBodyBytes); false
// once it has answered a body that cannot be read with the error page.
func (s *Server) readPageForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	if err := r.ParseForm(); err != nil {
		s.oidcError(w, http.StatusBadRequest, "error_form_unreadable")
		return false
	}
	return true
}

// randomToken returns 32 random bytes, base64url.
func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// oidcPage is what the pages' template shows.
type oidcPage struct {
	// Title and Text are text keys; Error is set by the render from
	// Fail, the failure the page shows (a form's error, or the error
	// page's text): a failure of auth, or a textKey.
	Nonce, Title, Text, Error string
	Fail                      error
	// Form is "email", "code", "mfa", "link" (a magic link's confirm),
	// "logout" (the sign-out confirmation) or "" (no form).
	Form, Action, AuthRequestID, CSRF, Email string
	// The sign-in page's other ways in: a passkey ceremony (nil when the
	// project's pages offer none) and the providers' buttons.
	Passkey        *oidcPasskeyOffer
	Providers      []auth.OIDCProvider
	ProviderAction string
	// LinkAction: the code page's "email me a link instead" form.
	LinkAction string
	// Token: the magic link's, on its confirm page.
	Token string
	// Method: the second factor the mfa form checks (totp, sms, backup);
	// SMSAction, when set, offers to text a code; Others link to the
	// other factors the user has.
	Method    string
	SMSAction string
	Others    []oidcLink
	// Enroll: the TOTP set-up the mfa form confirms (Method "enroll").
	Enroll *oidcEnroll
	// Consent: the consent page's question (oidc_consent.go).
	Consent *oidcConsentAsk
	// Hidden: the sign-out confirmation's fields (Form "logout"), or
	// the passkey-first sign-in's reason (Form "email").
	Hidden []oidcField
	// Device: the device page's form (oidc_device.go).
	Device *oidcDevicePage
	// Look, T and Accent: the page's branding, its texts by key and its
	// accent colour, set by the render (page_look.go).
	Look   *auth.PageLook
	T      map[string]string
	Accent template.CSS
}

// oidcPasskeyOffer is a started passkey ceremony on the sign-in page.
type oidcPasskeyOffer struct {
	Action, ChallengeID string
	Options             string // go-webauthn's request options, JSON
}

// oidcEnroll is a TOTP set-up shown on the second-factor page: its QR
// code (a data: URL) and its key.
type oidcEnroll struct {
	QR     template.URL
	Secret string
}

// oidcLink is a link on a page.
type oidcLink struct{ Label, URL string }

// formPasskeyFirst is the sign-in form that says why a signed-in user
// signs in again: the client requires a second factor and setting one
// up needs their passkey first (auth.OIDCStepPasskeyFirst).
const formPasskeyFirst = "passkey-first"

// oidcShowForm shows form ("email", "code" or "mfa") of request id with
// email filled in and its failure, if any. The sign-in page ("email")
// offers, besides the email code, a passkey (when the project's pages
// can: auth.OIDCPasskeys) and the project's providers; the code page
// offers a magic link instead of the code.
func (s *Server) oidcShowForm(w http.ResponseWriter, r *http.Request, p *projectOP, status int, id, form, email string, fail error) {
	d := oidcPage{Form: form, AuthRequestID: id, Email: email, Fail: fail,
		CSRF: s.auth.OIDCFormToken(browserSecret(w, r, p), id)}
	switch form {
	case "email", formPasskeyFirst:
		d.Form, d.Title, d.Text, d.Action = "email", "sign_in_title", "sign_in_text", p.issuer+auth.OIDCLoginPath
		s.oidcOtherWays(r, p, id, &d)
		if form == formPasskeyFirst {
			d.Hidden = []oidcField{{"why", formPasskeyFirst}} // kept when the send fails
			d.Text = "mfa_passkey_first_text"
			if d.Passkey == nil {
				// The project's pages cannot use passkeys here (its
				// relying party does not cover this address, say):
				// no sign-in on this page can set up the factor.
				d.Text = "mfa_passkey_unavailable_text"
			}
		}
	case "code":
		d.Title, d.Text, d.Action = "code_title", "code_text", p.issuer+auth.OIDCLoginCodePath
		d.LinkAction = p.issuer + auth.OIDCSendLinkPath
	case "mfa":
		d.Title, d.Text, d.Action = "mfa_title", "mfa_totp_text", p.issuer+auth.OIDCSecondFactorPath
		d.Method = auth.OIDCFactorTOTP
	}
	s.oidcRender(w, status, d)
}

// oidcError shows the error page with text, a text key of the pages'
// own refusals (oidcFail shows a failure).
func (s *Server) oidcError(w http.ResponseWriter, status int, key string) {
	s.oidcRender(w, status, oidcPage{Title: "error_title", Text: key})
}

// oidcRender writes a page with the pages' headers: a CSP whose only
// sources are the page's own style and script (by nonce) and the
// project's logo, no framing, no caching, no referrer. The page is
// worded and branded for its request (page_look.go).
func (s *Server) oidcRender(w http.ResponseWriter, status int, d oidcPage) {
	d.Nonce = randomToken()
	d.localize(s.lookOf(w))
	var b bytes.Buffer
	if err := oidcTmpl.Execute(&b, d); err != nil {
		s.log.Error("oidc page", "err", err)
		status, b = http.StatusInternalServerError, *bytes.NewBufferString("Internal error.")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// form-action is left out: browsers apply it to the redirects after
	// a POST too, and the last one goes to the client's own address.
	csp := "default-src 'none'; style-src 'nonce-" + d.Nonce + "'; base-uri 'none'; frame-ancestors 'none'"
	if d.Passkey != nil {
		csp += "; script-src 'nonce-" + d.Nonce + "'"
	}
	imgSrc := ""
	if d.Enroll != nil {
		imgSrc = "data:" // the TOTP set-up's QR code
	}
	h.Set("Content-Security-Policy", pageCSP(csp, imgSrc, d.Look))
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	noStore(w)
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// noStore forbids caching an answer.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

var oidcTmpl = newPageTemplate("oidc", nil).from(`<!doctype html>
<html lang="{{.Look.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
<style nonce="{{.Nonce}}">:root{--accent:{{.Accent}}}body{font-family:system-ui,sans-serif;max-width:26rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f;overflow-wrap:anywhere}
label{display:block;margin:1rem 0 .3rem}input{font-size:1.1rem;padding:.6rem;width:100%;box-sizing:border-box}
button{margin-top:1rem;font-size:1.1rem;padding:.7rem 1.6rem;border:0;border-radius:.4rem;background:var(--accent);color:#fff;cursor:pointer}
button.alt{background:#fff;color:var(--accent);border:1px solid var(--accent);width:100%}button[name=decision]{width:100%}
button:focus-visible,a:focus-visible,input:focus-visible{outline:3px solid #f0b400;outline-offset:2px}.other{margin-top:2rem;border-top:1px solid #ddd;padding-top:.5rem}
.error{color:#b00020}a{color:var(--accent)}ul{padding-left:1.2rem}li{margin:.5rem 0}[hidden]{display:none}
.brand{display:flex;align-items:center;gap:.6rem;font-weight:600}.brand img{max-height:2.5rem;max-width:10rem}</style></head>
<body>{{with .Look.Name}}<header class="brand" id="brand">{{with $.Look.LogoURL}}<img src="{{.}}" alt="">{{end}}<span>{{.}}</span></header>{{end}}<main><h1>{{.Title}}</h1>
{{with .Text}}<p>{{.}}</p>{{end}}
{{with .Error}}<p class="error" role="alert" id="error">{{.}}</p>{{end}}
{{if .Form}}<form method="post" action="{{.Action}}">
<input type="hidden" name="authRequestID" value="{{.AuthRequestID}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
{{if eq .Form "email"}}{{range .Hidden}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">{{end}}<label for="email">{{.T.email_label}}</label>
<input id="email" name="email" type="email" autocomplete="username webauthn" required autofocus value="{{.Email}}"{{if .Error}} aria-invalid="true" aria-describedby="error"{{end}}>
<button type="submit">{{.T.continue_button}}</button>
{{else if eq .Form "code"}}<input type="hidden" name="email" value="{{.Email}}"><label for="code">{{.T.code_label}}</label>
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus{{if .Error}} aria-invalid="true" aria-describedby="error"{{end}}>
<button type="submit">{{.T.sign_in_button}}</button>
{{else if eq .Form "link"}}<input type="hidden" name="token" value="{{.Token}}">
<button type="submit">{{.T.sign_in_button}}</button>
{{else if eq .Form "logout"}}{{range .Hidden}}<input type="hidden" name="{{.Name}}" value="{{.Value}}">{{end}}
<input type="hidden" name="confirm" value="yes"><button type="submit">{{.T.sign_out_button}}</button>
{{else if eq .Method "enroll-start"}}<input type="hidden" name="method" value="{{.Method}}">
<button type="submit">{{.T.continue_button}}</button>
{{else}}{{with .Enroll}}<p>{{$.T.account_totp_scan_text}}</p>
<p><img src="{{.QR}}" width="256" height="256" alt="{{$.T.account_totp_qr_alt}}"></p>
<p>{{$.T.account_totp_key_label}} <code id="totp-secret">{{.Secret}}</code></p>{{end}}
<input type="hidden" name="method" value="{{.Method}}"><label for="code">{{if eq .Method "backup"}}{{.T.backup_code_label}}{{else}}{{.T.code_label}}{{end}}</label>
<input id="code" name="code" {{if ne .Method "backup"}}inputmode="numeric" {{end}}autocomplete="one-time-code" required autofocus{{if .Error}} aria-invalid="true" aria-describedby="error"{{end}}>
<button type="submit">{{.T.continue_button}}</button>{{end}}
</form>{{end}}
{{with .Consent}}{{template "consent" $}}{{end}}
{{with .Device}}{{template "device" .}}{{end}}
{{if or .Passkey .Providers .LinkAction .SMSAction .Others}}<div class="other">
{{with .Passkey}}<form method="post" action="{{.Action}}" id="passkey" data-options="{{.Options}}">
<input type="hidden" name="authRequestID" value="{{$.AuthRequestID}}"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<input type="hidden" name="challengeId" value="{{.ChallengeID}}"><input type="hidden" name="credential" value="">
<button type="button" class="alt" id="passkey-button" hidden>{{$.T.passkey_button}}</button></form>{{end}}
{{range .Providers}}<form method="post" action="{{$.ProviderAction}}">
<input type="hidden" name="authRequestID" value="{{$.AuthRequestID}}"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<input type="hidden" name="provider" value="{{.Name}}"><button type="submit" class="alt">{{fill $.T.provider_button "provider" .Label}}</button></form>{{end}}
{{with .LinkAction}}<form method="post" action="{{.}}">
<input type="hidden" name="authRequestID" value="{{$.AuthRequestID}}"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<input type="hidden" name="email" value="{{$.Email}}"><button type="submit" class="alt">{{$.T.link_button}}</button></form>{{end}}
{{with .SMSAction}}<form method="post" action="{{.}}">
<input type="hidden" name="authRequestID" value="{{$.AuthRequestID}}"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<button type="submit" class="alt">{{$.T.sms_button}}</button></form>{{end}}
{{with .Others}}<ul>{{range .}}<li><a href="{{.URL}}">{{.Label}}</a></li>{{end}}</ul>{{end}}
</div>{{end}}
</main>{{if .Passkey}}<script nonce="{{.Nonce}}">` + passkeyScript + `</script>{{end}}</body></html>`)

// bearerErrorWriter answers op's refusals of a userinfo token (a bare
// 401 for a token it cannot verify, 403 for one the storage refuses)
// as RFC 6750 does: 401, WWW-Authenticate: Bearer error="invalid_token"
// and a JSON error.
type bearerErrorWriter struct {
	http.ResponseWriter
	refused bool
}

// WriteHeader replaces a refusal.
func (b *bearerErrorWriter) WriteHeader(status int) {
	if status != http.StatusUnauthorized && status != http.StatusForbidden {
		b.ResponseWriter.WriteHeader(status)
		return
	}
	b.refused = true
	h := b.Header()
	h.Del("Content-Length")
	h.Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	h.Set("Content-Type", "application/json")
	b.ResponseWriter.WriteHeader(http.StatusUnauthorized)
	b.ResponseWriter.Write([]byte(`{"error":"invalid_token","error_description":"The access token is not valid."}`))
}

// Write drops op's own body of a refusal.
func (b *bearerErrorWriter) Write(p []byte) (int, error) {
	if b.refused {
		return len(p), nil
	}
	return b.ResponseWriter.Write(p)
}
