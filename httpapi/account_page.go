package httpapi

import (
	"bytes"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"latchkey/auth"
)

// The account page under each issuer (docs/oidc.md, "Account page"):
// the browser's signed-in user (the hosted pages' single sign-on
// cookie) sees their sessions, passkeys, authenticator app, backup
// codes and address, and changes them. GET /account shows the page;
// each change is a form posted to /account/<action>, whose CSRF token
// is bound to the browser and expires (a stale form answers a page that
// says so), and each calls the use case of the API's equivalent. A
// change that needs recent authentication, on a session that has none,
// answers the page's step-up section: a TOTP code, a code texted to the
// enrolled phone, a passkey, or a new sign-in, depending on the account. The page works without scripts
// except for the passkey ceremonies (its own script, by nonce).

// Actions of the account page (POST /account/<action>).
const (
	acctEndSession    = "session-end"
	acctEndOthers     = "sessions-end-others"
	acctPasskeyAdd    = "passkey-add"
	acctPasskeyFinish = "passkey-finish"
	acctPasskeyRemove = "passkey-remove"
	acctTOTPEnroll    = "totp-enroll"
	acctTOTPConfirm   = "totp-confirm"
	acctBackupCodes   = "backup-codes"
	acctEmail         = "email"
	acctEmailConfirm  = "email-confirm"
	acctStepUpTOTP    = "stepup-totp"
	acctStepUpPasskey = "stepup-passkey"
	acctStepUpSignIn  = "stepup-signin"
	acctAppRevoke     = "app-revoke"
)

// accountNotices are the text keys of the page's notices after a
// change (?done=), by action: only these texts are ever shown.
var accountNotices = map[string]string{
	acctEndSession:    "account_notice_session_ended",
	acctEndOthers:     "account_notice_others_ended",
	acctPasskeyFinish: "account_notice_passkey_added",
	acctPasskeyRemove: "account_notice_passkey_removed",
	acctTOTPConfirm:   "account_notice_totp_set_up",
	acctEmailConfirm:  "account_notice_email_changed",
	acctAppRevoke:     "account_notice_app_revoked",
	acctTOTPRemove:    "account_notice_totp_removed",
	"verified":        "account_notice_verified",
}

// accountRoutes registers the account page and its actions.
func (s *Server) accountRoutes() {
	s.router.GET("/oidc/:project"+auth.AccountPath, s.accountPage)
	s.router.GET("/oidc/:project"+auth.AccountPath+"/:action", s.accountPage)
	s.router.POST("/oidc/:project"+auth.AccountPath+"/:action", s.accountAction)
}

// accountView is what the account page's template shows.
type accountView struct {
	// Title and Notice are text keys, worded by the render; Error is
	// set by it from Fail, the failure the page shows.
	Nonce, Title, Action, CSRF string
	Notice, Error              string
	Fail                       error
	// Panel is "" (the whole page), "stepup", "passkey", "totp",
	// "totp-confirm", "backup", "email-confirm" or "signed-out".
	Panel    string
	Overview *auth.AccountOverview
	Current  string // the browser's session id
	// Passkey: the ceremony of the "passkey" panel, or of the step-up's
	// passkey; Mode "create" or "get".
	Passkey *accountPasskey
	StepUp  auth.AccountStepUp
	// TOTP: a new secret (the "totp" panel).
	TOTP   *auth.TOTPEnrollment
	QR     template.URL // TOTP's data: URL
	Codes  []string     // new backup codes, shown once
	Email  string       // the pending address
	SignIn string       // the sign-in page's address
	Home   string       // the account page's address
	// Look, T and Accent: the page's branding, its texts by key and its
	// accent colour (page_look.go).
	Look   *auth.PageLook
	T      map[string]string
	Accent template.CSS
	// SMSSent: the step-up texted a code to the enrolled phone.
	SMSSent bool
}

// accountPasskey is a passkey ceremony on the account page.
type accountPasskey struct {
	Mode, Action, ChallengeID, Options string
}

// accountSession returns the browser's session for the account page,
// nil without a live one (write: a change, counted against the
// session's limit; err then says why, a 429 among them).
func (s *Server) accountSession(r *http.Request, p *projectOP, write bool) (*auth.Principal, error) {
	c, err := r.Cookie(p.cookieName(ssoCookie))
	if err != nil || c.Value == "" {
		return nil, auth.ErrInvalidSession
	}
	return s.auth.AccountSession(r.Context(), p.id, c.Value, write)
}

// accountSignIn sends the browser to the sign-in page, which brings it
// back to the account page.
func (s *Server) accountSignIn(w http.ResponseWriter, r *http.Request, p *projectOP) {
	noStore(w)
	http.Redirect(w, r, s.accountSignInURL(p), http.StatusSeeOther)
}

// accountSignInURL is the sign-in page of the account page.
func (s *Server) accountSignInURL(p *projectOP) string {
	return p.issuer + auth.ForwardAuthSignInPath + "?rd=" + url.QueryEscape(p.issuer+auth.AccountPath)
}

// accountPage shows the page (GET /account; GET /account/<action>, a
// reload of an action's answer, goes back to it), or sends a browser
// without a session to sign in.
func (s *Server) accountPage(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	p, err := s.projectOP(r, ps.ByName("project"))
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	w = pageWriterOf(w, r, p.id)
	if ps.ByName("action") != "" {
		noStore(w)
		http.Redirect(w, r, p.issuer+auth.AccountPath, http.StatusSeeOther)
		return
	}
	pr, err := s.accountSession(r, p, false)
	if err != nil {
		s.accountSignIn(w, r, p)
		return
	}
	s.accountShow(w, r, p, pr, http.StatusOK, accountView{Notice: accountNotices[r.URL.Query().Get("done")]})
}

// accountShow renders the page for session pr with v's panel, notice
// and error: the overview is read for the whole page.
func (s *Server) accountShow(w http.ResponseWriter, r *http.Request, p *projectOP, pr *auth.Principal, status int, v accountView) {
	ov, err := s.auth.AccountOverview(r.Context(), pr)
	if err != nil {
		if auth.AsError(err).Is(auth.ErrInvalidSession) {
			s.accountSignIn(w, r, p)
			return
		}
		s.oidcFail(w, err)
		return
	}
	v.Overview, v.Current = ov, pr.SessionID
	s.accountRender(w, r, p, status, v)
}

// accountRender writes the page with the hosted pages' headers; its
// CSP also allows its own script (by nonce) and data: images (the TOTP
// QR code).
func (s *Server) accountRender(w http.ResponseWriter, r *http.Request, p *projectOP, status int, v accountView) {
	v.Nonce = randomToken()
	v.Action = p.issuer + auth.AccountPath + "/"
	v.CSRF = s.auth.AccountFormToken(browserSecret(w, r, p))
	v.SignIn = s.accountSignInURL(p)
	v.Home = p.issuer + auth.AccountPath
	if v.Title == "" {
		v.Title = "account_title"
	}
	look, err := s.auth.PageLook(r.Context(), p.id, "", r.Header.Get("Accept-Language"))
	if err != nil {
		s.log.Error("hosted page look", "err", err)
	}
	v.Look, v.T, v.Accent = look, look.Texts, accentCSS(look)
	v.Title, v.Notice = pageText(v.T, v.Title), pageText(v.T, v.Notice)
	if v.Fail != nil {
		v.Error = failText(look, v.Fail)
	}
	var b bytes.Buffer
	if err := accountTmpl.Execute(&b, v); err != nil {
		s.log.Error("account page", "err", err)
		status, b = http.StatusInternalServerError, *bytes.NewBufferString("Internal error.")
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP("default-src 'none'; style-src 'nonce-"+v.Nonce+"'; script-src 'nonce-"+v.Nonce+
		"'; base-uri 'none'; frame-ancestors 'none'", "data:", look))
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	noStore(w)
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// accountAction runs a change posted from the page: the CSRF token
// first (a stale form gets a page saying so, and nothing changes),
// then the session (none: the sign-in), then the action's use case.
func (s *Server) accountAction(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	p, err := s.projectOP(r, ps.ByName("project"))
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	w = pageWriterOf(w, r, p.id)
	if !s.readPageForm(w, r) {
		return
	}
	browser := formSecret(r, p)
	if err := s.auth.CheckAccountForm(browser, r.PostForm.Get("csrf")); err != nil {
		s.accountRender(w, r, p, http.StatusForbidden, accountView{Title: "account_stale_title", Panel: "stale", Fail: err})
		return
	}
	pr, err := s.accountSession(r, p, true)
	if err != nil {
		if e := auth.AsError(err); e.Is(auth.ErrInvalidSession) {
			s.accountSignIn(w, r, p)
		} else {
			s.oidcFail(w, err)
		}
		return
	}
	ctx, m, f := r.Context(), s.meta(r, false), r.PostForm
	done := func(key string) {
		noStore(w)
		http.Redirect(w, r, p.issuer+auth.AccountPath+"?done="+url.QueryEscape(key), http.StatusSeeOther)
	}
	fail := func(err error, v accountView) { s.accountFailed(w, r, p, pr, err, v) }
	switch action := ps.ByName("action"); action {
	case acctEndSession:
		id := f.Get("sessionId")
		if id == pr.SessionID {
			s.accountSignOut(w, r, p, pr)
			return
		}
		if err := s.auth.RevokeSession(ctx, pr, id); err != nil {
			fail(err, accountView{})
			return
		}
		done(action)
	case acctAppRevoke:
		if err := s.auth.RevokeConsent(ctx, p.id, pr.UserID, f.Get("clientId")); err != nil {
			fail(err, accountView{})
			return
		}
		done(action)
	case acctEndOthers:
		if err := s.auth.Logout(ctx, pr, auth.LogoutOthers); err != nil {
			fail(err, accountView{})
			return
		}
		done(action)
	case acctPasskeyAdd:
		proj, err := s.auth.Project(ctx, p.id)
		if err != nil {
			s.oidcFail(w, err)
			return
		}
		c, err := s.auth.BeginPasskeyRegistration(ctx, proj, pr, "", m)
		if err != nil {
			fail(err, accountView{})
			return
		}
		s.accountShow(w, r, p, pr, http.StatusOK, accountView{Panel: "passkey", Title: "account_passkey_add",
			Passkey: &accountPasskey{Mode: "create", Action: acctPasskeyFinish, ChallengeID: c.ChallengeID, Options: string(c.Options)}})
	case acctPasskeyFinish:
		proj, err := s.auth.Project(ctx, p.id)
		if err != nil {
			s.oidcFail(w, err)
			return
		}
		if _, err := s.auth.FinishPasskeyRegistration(ctx, proj, pr, f.Get("challengeId"), json.RawMessage(f.Get("credential")), m); err != nil {
			fail(err, accountView{})
			return
		}
		done(action)
	case acctPasskeyRemove:
		if err := s.auth.DeleteSessionPasskey(ctx, pr, f.Get("credentialId"), m); err != nil {
			fail(err, accountView{})
			return
		}
		done(action)
	case acctTOTPEnroll:
		e, err := s.auth.EnrollTOTP(ctx, pr, m)
		if err != nil {
			fail(err, accountView{})
			return
		}
		s.accountShow(w, r, p, pr, http.StatusOK, accountView{Panel: "totp", Title: "account_totp_setup",
			TOTP: e, QR: template.URL(e.QRCodeDataURL)})
	case acctTOTPConfirm:
		if err := s.auth.VerifyTOTP(ctx, pr, f.Get("code"), m); err != nil {
			fail(err, accountView{Panel: "totp-confirm", Title: "account_totp_setup"})
			return
		}
		done(action)
	case acctBackupCodes:
		codes, err := s.auth.GenerateBackupCodes(ctx, pr, m)
		if err != nil {
			fail(err, accountView{})
			return
		}
		s.accountShow(w, r, p, pr, http.StatusOK, accountView{Panel: "backup", Title: "account_backup_title", Codes: codes})
	case acctEmail:
		email := f.Get("email")
		up, err := s.auth.UpdateUser(ctx, pr, auth.UserPatch{Email: &email}, m)
		if err != nil {
			fail(err, accountView{})
			return
		}
		if up.PendingEmail == "" { // a project that changes addresses at once
			done(acctEmailConfirm)
			return
		}
		s.accountShow(w, r, p, pr, http.StatusOK, accountView{Panel: "email-confirm", Title: "account_email_confirm_title", Email: up.PendingEmail})
	case acctEmailConfirm:
		if _, err := s.auth.VerifyAddress(ctx, pr, f.Get("code"), m); err != nil {
			fail(err, accountView{Panel: "email-confirm", Title: "account_email_confirm_title", Email: f.Get("email")})
			return
		}
		done(action)
	case acctStepUpTOTP:
		if err := s.auth.VerifyTOTP(ctx, pr, f.Get("code"), m); err != nil {
			fail(err, accountView{Panel: "stepup"})
			return
		}
		done("verified")
	case acctStepUpPasskey:
		s.accountStepUpPasskey(w, r, p, pr)
	case acctStepUpSignIn:
		// A new sign-in: this session ends, and the sign-in page brings
		// the browser back.
		if err := s.auth.Logout(ctx, pr, auth.LogoutThis); err != nil {
			s.oidcFail(w, err)
			return
		}
		s.clearSSOCookie(w, p)
		s.accountSignIn(w, r, p)
	default:
		s.accountMoreActions(w, r, p, pr, action)
	}
}

// accountFailed shows a refused change: the step-up section when it
// needs recent authentication, else v's panel (the whole page when
// none) with the error's message; an internal failure is the error page.
func (s *Server) accountFailed(w http.ResponseWriter, r *http.Request, p *projectOP, pr *auth.Principal, err error, v accountView) {
	e := auth.AsError(err)
	switch {
	case e.Code == auth.ErrInternal.Code || e.Is(auth.ErrUnavailable):
		s.oidcFail(w, err)
		return
	case e.Is(auth.ErrInvalidSession):
		s.accountSignIn(w, r, p)
		return
	case e.Is(auth.ErrStepUpRequired) || v.Panel == "stepup":
		s.accountShowStepUp(w, r, p, pr, statusOf(e), err, v.SMSSent)
		return
	}
	v.Fail = err
	s.accountShow(w, r, p, pr, statusOf(e), v)
}

// accountShowStepUp shows the step-up section for session pr: what
// proves it again on this account (a TOTP code, a code texted to the
// enrolled phone, a passkey, or a new sign-in), with the failure that
// asks for it, if any; smsSent shows the form for a texted code.
func (s *Server) accountShowStepUp(w http.ResponseWriter, r *http.Request, p *projectOP, pr *auth.Principal, status int, fail error, smsSent bool) {
	ctx := r.Context()
	opts, err := s.auth.AccountStepUpOptions(ctx, pr)
	if err != nil {
		s.accountFailed(w, r, p, pr, err, accountView{})
		return
	}
	v := accountView{Panel: "stepup", Title: "account_stepup_title", Fail: fail, StepUp: opts, SMSSent: smsSent}
	if opts.Passkey {
		if c, err := s.auth.AccountBeginPasskeyStepUp(ctx, pr, s.meta(r, false)); err == nil {
			v.Passkey = &accountPasskey{Mode: "get", Action: acctStepUpPasskey, ChallengeID: c.ChallengeID, Options: string(c.Options)}
		} else if e := auth.AsError(err); e.Code == auth.ErrInternal.Code {
			s.log.Error("account passkey step-up", "err", err)
		}
	}
	s.accountShow(w, r, p, pr, status, v)
}

// accountStepUpPasskey checks the step-up's passkey assertion: a
// passkey sign-in of the session's user (a new session, proven by the
// passkey, which becomes the browser's).
func (s *Server) accountStepUpPasskey(w http.ResponseWriter, r *http.Request, p *projectOP, pr *auth.Principal) {
	f := r.PostForm
	l, err := s.auth.AccountFinishPasskeyStepUp(r.Context(), pr, f.Get("challengeId"), json.RawMessage(f.Get("credential")), s.meta(r, false))
	if err != nil {
		s.accountFailed(w, r, p, pr, err, accountView{Panel: "stepup"})
		return
	}
	s.setSSOCookie(w, p, l.Token)
	noStore(w)
	http.Redirect(w, r, p.issuer+auth.AccountPath+"?done=verified", http.StatusSeeOther)
}

// accountSignOut ends the browser's own session from the page: the
// API's logout, the cookie cleared, a page that says so.
func (s *Server) accountSignOut(w http.ResponseWriter, r *http.Request, p *projectOP, pr *auth.Principal) {
	if err := s.auth.Logout(r.Context(), pr, auth.LogoutThis); err != nil {
		s.oidcFail(w, err)
		return
	}
	s.clearSSOCookie(w, p)
	s.accountRender(w, r, p, http.StatusOK, accountView{Panel: "signed-out", Title: "signed_out_title"})
}

// clearSSOCookie removes the browser's single sign-on cookie.
func (s *Server) clearSSOCookie(w http.ResponseWriter, p *projectOP) {
	c := oidcCookie(p, ssoCookie, "")
	c.MaxAge = -1
	http.SetCookie(w, c)
}

// accountTime shows an RFC 3339 time of a session as "2006-01-02 15:04 UTC".
func accountTime(t string) string {
	if len(t) < 16 {
		return t
	}
	return strings.Replace(t[:16], "T", " ", 1) + " UTC"
}

var accountTmpl = newPageTemplate("account", template.FuncMap{"when": accountTime,
	"since": func(t time.Time) string { return accountTime(t.UTC().Format(time.RFC3339)) },
	"join":  func(s []string) string { return strings.Join(s, " ") }}).from(`<!doctype html>
<html lang="{{.Look.Lang}}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer"><title>{{.Title}}</title>
<style nonce="{{.Nonce}}">:root{--accent:{{.Accent}}}body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f;overflow-wrap:anywhere}
h2{font-size:1.2rem;margin-top:2rem;border-top:1px solid #ddd;padding-top:1rem}label{display:block;margin:1rem 0 .3rem}
input{font-size:1.1rem;padding:.6rem;width:100%;box-sizing:border-box}
button{margin-top:.6rem;font-size:1rem;padding:.6rem 1.2rem;border:0;border-radius:.4rem;background:var(--accent);color:#fff;cursor:pointer}
button.alt{background:#fff;color:var(--accent);border:1px solid var(--accent)}button:focus-visible,a:focus-visible,input:focus-visible{outline:3px solid #f0b400;outline-offset:2px}
.error{color:#b00020}.notice{color:#0a6b2d}a{color:var(--accent)}ul{padding-left:0;list-style:none}li{margin:.6rem 0;padding:.6rem;border:1px solid #e3e3e3;border-radius:.4rem}
.meta{color:#555;font-size:.9rem}.tag{background:#e8f0fe;color:#1a3f9c;border-radius:.3rem;padding:0 .4rem;font-size:.85rem}
.codes{font-family:ui-monospace,monospace;font-size:1.1rem}.codes li{border:0;padding:0;margin:.2rem 0}img{max-width:100%;height:auto}[hidden]{display:none}
.brand{display:flex;align-items:center;gap:.6rem;font-weight:600}.brand img{max-height:2.5rem;max-width:10rem}</style></head>
<body>{{with .Look.Name}}<header class="brand" id="brand">{{with $.Look.LogoURL}}<img src="{{.}}" alt="">{{end}}<span>{{.}}</span></header>{{end}}<main><h1>{{.Title}}</h1>
{{with .Notice}}<p class="notice" role="status">{{.}}</p>{{end}}
{{with .Error}}<p class="error" role="alert">{{.}}</p>{{end}}
{{if eq .Panel "stale"}}<p><a href="{{.Home}}">{{.T.account_reload_link}}</a></p>
{{else if eq .Panel "signed-out"}}<p>{{.T.signed_out_text}}</p><p><a href="{{.SignIn}}">{{.T.account_sign_in_again}}</a></p>
{{else if eq .Panel "stepup"}}<p>{{.T.account_stepup_text}}</p>
{{template "stepup-sms-code" .}}{{if .StepUp.TOTP}}<form method="post" action="{{.Action}}stepup-totp"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="code">{{.T.account_stepup_totp_label}}</label>
<input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus>
<button type="submit">{{.T.account_confirm_button}}</button></form>{{end}}
{{template "stepup-sms-send" .}}{{with .Passkey}}{{template "passkey" $}}{{end}}
{{if .StepUp.SignInAgain}}<form method="post" action="{{.Action}}stepup-signin"><input type="hidden" name="csrf" value="{{.CSRF}}">
<p>{{.T.account_stepup_sign_in_text}}</p><button type="submit">{{.T.account_sign_in_again}}</button></form>{{end}}
<p><a href="{{.Home}}">{{.T.account_back_link}}</a></p>
{{else if eq .Panel "passkey"}}<p>{{.T.account_passkey_text}}</p>
{{template "passkey" .}}<p><a href="{{.Home}}">{{.T.account_cancel_link}}</a></p>
{{else if eq .Panel "totp"}}<p>{{.T.account_totp_scan_text}}</p>
<p><img src="{{.QR}}" width="256" height="256" alt="{{.T.account_totp_qr_alt}}"></p>
<p>{{.T.account_totp_key_label}} <code id="totp-secret">{{.TOTP.Secret}}</code></p>{{template "totp-confirm" .}}
{{else if eq .Panel "totp-confirm"}}<p>{{.T.account_totp_confirm_text}}</p>{{template "totp-confirm" .}}
{{else if eq .Panel "backup"}}<p>{{.T.account_backup_text}}</p>
<ul class="codes" id="backup-codes">{{range .Codes}}<li>{{.}}</li>{{end}}</ul><p><a href="{{.Home}}">{{.T.account_done_link}}</a></p>
{{else if eq .Panel "email-confirm"}}<p>{{fill .T.account_email_code_text "email" .Email}}</p>
<form method="post" action="{{.Action}}email-confirm"><input type="hidden" name="csrf" value="{{.CSRF}}"><input type="hidden" name="email" value="{{.Email}}">
<label for="code">{{.T.code_label}}</label><input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus>
<button type="submit">{{.T.account_confirm_button}}</button></form><p><a href="{{.Home}}">{{.T.account_cancel_link}}</a></p>
{{else}}{{with .Overview}}<p>{{$.T.account_signed_in_as}} <strong id="account-email">{{.User.Email}}</strong>{{if not .User.EmailVerified}} {{$.T.account_not_verified}}{{end}}.</p>
<h2 id="sessions">{{$.T.account_sessions}}</h2><ul>{{range .Sessions}}<li><div>{{.Method}}{{if eq .ID $.Current}} <span class="tag">{{$.T.account_this_browser}}</span>{{end}}</div>
<div class="meta">{{fill (fill $.T.account_session_meta "created" (when .CreatedAt)) "seen" (when .LastSeenAt)}}{{with .IP}} · {{.}}{{end}}</div>{{with .UserAgent}}<div class="meta">{{.}}</div>{{end}}
<form method="post" action="{{$.Action}}session-end"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="sessionId" value="{{.ID}}">
<button type="submit" class="alt">{{if eq .ID $.Current}}{{$.T.sign_out_button}}{{else}}{{$.T.account_end_session_button}}{{end}}</button></form></li>{{end}}</ul>
{{if gt (len .Sessions) 1}}<form method="post" action="{{$.Action}}sessions-end-others"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<button type="submit" class="alt">{{$.T.account_end_others_button}}</button></form>{{end}}
<h2 id="passkeys">{{$.T.account_passkeys}}</h2>{{if .Passkeys}}<ul>{{range .Passkeys}}<li><div>{{fill $.T.account_passkey_added "date" (when .CreatedAt)}}</div>
<form method="post" action="{{$.Action}}passkey-remove"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="credentialId" value="{{.CredentialID}}">
<button type="submit" class="alt">{{$.T.account_remove_button}}</button></form></li>{{end}}</ul>{{else}}<p>{{$.T.account_no_passkeys}}</p>{{end}}
<form method="post" action="{{$.Action}}passkey-add"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button type="submit">{{$.T.account_passkey_add}}</button></form>
<h2 id="totp">{{$.T.account_totp}}</h2>{{if .TOTP}}<p>{{$.T.account_totp_on_text}}</p>{{template "totp-remove" $}}{{else}}<p>{{$.T.account_totp_off_text}}</p>
<form method="post" action="{{$.Action}}totp-enroll"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button type="submit">{{$.T.account_totp_setup}}</button></form>{{end}}
<h2 id="backup">{{$.T.account_backup_codes}}</h2><p>{{fill $.T.account_backup_left "count" (printf "%d" .BackupCodesLeft)}}</p>
<form method="post" action="{{$.Action}}backup-codes"><input type="hidden" name="csrf" value="{{$.CSRF}}"><button type="submit">{{$.T.account_backup_button}}</button></form>
<h2 id="apps">{{$.T.account_apps}}</h2>{{if .Apps}}<ul>{{range .Apps}}<li><div>{{or .ClientName .ClientID}}</div>
<div class="meta">{{fill (fill $.T.account_app_allowed "date" (since .GrantedAt)) "scopes" (join .Scopes)}}</div>
<form method="post" action="{{$.Action}}app-revoke"><input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="clientId" value="{{.ClientID}}">
<button type="submit" class="alt">{{$.T.account_app_revoke_button}}</button></form></li>{{end}}</ul>{{else}}<p>{{$.T.account_no_apps}}</p>{{end}}
<h2 id="address">{{$.T.account_email}}</h2>
<form method="post" action="{{$.Action}}email"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<label for="email">{{$.T.account_email_label}}</label><input id="email" name="email" type="email" autocomplete="email" required>
<button type="submit">{{$.T.account_email_button}}</button></form>{{end}}{{end}}
</main>{{if .Passkey}}<script nonce="{{.Nonce}}">` + accountPasskeyScript + `</script>{{end}}</body></html>
{{define "totp-confirm"}}<form method="post" action="{{.Action}}totp-confirm"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="code">{{.T.account_totp_app_code_label}}</label><input id="code" name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus>
<button type="submit">{{.T.account_confirm_button}}</button></form><p><a href="{{.Home}}">{{.T.account_cancel_link}}</a></p>{{end}}
{{define "passkey"}}{{with .Passkey}}<form method="post" action="{{$.Action}}{{.Action}}" id="passkey" data-mode="{{.Mode}}" data-options="{{.Options}}"
data-unsupported="{{$.T.passkey_unsupported}}" data-waiting="{{$.T.passkey_waiting}}" data-failed="{{$.T.passkey_failed}}">
<input type="hidden" name="csrf" value="{{$.CSRF}}"><input type="hidden" name="challengeId" value="{{.ChallengeID}}"><input type="hidden" name="credential" value="">
<p id="passkey-status" role="status"></p>
<button type="button" id="passkey-button" hidden>{{if eq .Mode "create"}}{{$.T.account_passkey_create}}{{else}}{{$.T.account_passkey_confirm}}{{end}}</button></form>{{end}}{{end}}`)

// accountPasskeyScript runs the page's passkey ceremony when its button
// is pressed: create (adding a passkey) or get (the step-up), the
// credential posted with the page's passkey form. Without WebAuthn the
// button stays hidden and the page says why.
const accountPasskeyScript = `(function () {
  var f = document.getElementById("passkey");
  if (!f) return;
  var st = document.getElementById("passkey-status"), b = document.getElementById("passkey-button");
  if (!window.PublicKeyCredential || !navigator.credentials) { st.textContent = f.getAttribute("data-unsupported"); return; }
  var o = JSON.parse(f.getAttribute("data-options")).publicKey, create = f.getAttribute("data-mode") === "create";
  function bin(s) {
    var r = atob(s.replace(/-/g, "+").replace(/_/g, "/")), a = new Uint8Array(r.length);
    for (var i = 0; i < r.length; i++) a[i] = r.charCodeAt(i);
    return a.buffer;
  }
  function txt(v) {
    var a = new Uint8Array(v), r = "";
    for (var i = 0; i < a.length; i++) r += String.fromCharCode(a[i]);
    return btoa(r).replace(/[+]/g, "-").replace(/[\/]/g, "_").replace(/=+$/, "");
  }
  function ids(l) { return (l || []).map(function (c) { return {type: c.type, id: bin(c.id), transports: c.transports}; }); }
  function send(c) {
    var r = c.response, resp = {clientDataJSON: txt(r.clientDataJSON)};
    if (create) {
      resp.attestationObject = txt(r.attestationObject);
      resp.transports = r.getTransports ? r.getTransports() : [];
    } else {
      resp.authenticatorData = txt(r.authenticatorData);
      resp.signature = txt(r.signature);
      if (r.userHandle) resp.userHandle = txt(r.userHandle);
    }
    f.elements.credential.value = JSON.stringify({id: c.id, rawId: txt(c.rawId), type: c.type,
      authenticatorAttachment: c.authenticatorAttachment || undefined, response: resp,
      clientExtensionResults: c.getClientExtensionResults ? c.getClientExtensionResults() : {}});
    f.submit();
  }
  b.hidden = false;
  b.addEventListener("click", function () {
    st.textContent = f.getAttribute("data-waiting");
    var p;
    if (create) {
      var pk = {challenge: bin(o.challenge), rp: o.rp, user: {id: bin(o.user.id), name: o.user.name, displayName: o.user.displayName},
        pubKeyCredParams: o.pubKeyCredParams, timeout: o.timeout, attestation: o.attestation,
        authenticatorSelection: o.authenticatorSelection, excludeCredentials: ids(o.excludeCredentials), extensions: o.extensions};
      p = navigator.credentials.create({publicKey: pk});
    } else {
      p = navigator.credentials.get({publicKey: {challenge: bin(o.challenge), timeout: o.timeout, rpId: o.rpId,
        userVerification: o.userVerification, allowCredentials: ids(o.allowCredentials)}});
    }
    p.then(function (c) { if (c) send(c); }).catch(function (e) { st.textContent = f.getAttribute("data-failed").replace("{error}", e.name); });
  });
})();`
