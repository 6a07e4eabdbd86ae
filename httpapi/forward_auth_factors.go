package httpapi

import (
	"net/http"
	"net/url"

	"latchkey/auth"
)

// The second-factor step of forward-auth's and the account page's
// sign-in (docs/forward-auth.md): the authenticator app's code, a code
// texted to the enrolled phone, or one of the user's backup codes, as
// the provider's second-factor page offers them (oidcShowFactor), each
// through the API's use case. A backup code signs in anew (the API's
// backup-code sign-in): the browser's cookies then hold the new session.

// forwardAuthMethod returns the second factor the page shows for f when
// asked for method (?method=totp, sms or backup): method when the user
// has it, else the authenticator app when the user has one, else the
// phone.
func forwardAuthMethod(f auth.OIDCFactors, method string) string {
	switch {
	case method == auth.OIDCFactorTOTP && f.TOTP, method == auth.OIDCFactorSMS && f.SMS, method == auth.OIDCFactorBackup && f.Backup:
		return method
	case f.TOTP || !f.SMS:
		return auth.OIDCFactorTOTP
	}
	return auth.OIDCFactorSMS
}

// forwardAuthFactor asks session pr for its second factor, the one the
// browser asked for (?method=) when the user has it: for a code texted
// to the enrolled phone, the code is sent now, through the API's use
// case and its throttle (a refused send shows why on the same form).
func (s *Server) forwardAuthFactor(w http.ResponseWriter, r *http.Request, p *projectOP, t *auth.ForwardAuthTarget, pr *auth.Principal) {
	f, err := s.auth.ForwardAuthFactors(r.Context(), t, pr)
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	method := forwardAuthMethod(f, r.Form.Get("method"))
	if method == auth.OIDCFactorSMS {
		if err := s.auth.SendSMSCode(r.Context(), pr, "", s.meta(r, false)); err != nil {
			s.forwardAuthFactorForm(w, r, p, t, f, method, statusOf(auth.AsError(err)), err)
			return
		}
	}
	s.forwardAuthFactorForm(w, r, p, t, f, method, http.StatusOK, nil)
}

// forwardAuthSecondFactor checks the second factor's code (the form's
// method) on the browser's session: the authenticator app's, the code
// texted to the enrolled phone, or a backup code, which signs in anew.
func (s *Server) forwardAuthSecondFactor(w http.ResponseWriter, r *http.Request, p *projectOP, t *auth.ForwardAuthTarget) {
	pr, tok := s.forwardAuthSession(r, p, t)
	if pr == nil {
		s.forwardAuthForm(w, r, p, t, http.StatusUnauthorized, "email", "", textKey("error_forward_sign_in_ended"))
		return
	}
	ctx, code, m := r.Context(), r.PostForm.Get("code"), s.meta(r, false)
	f, err := s.auth.ForwardAuthFactors(ctx, t, pr)
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	asked := r.PostForm.Get("method")
	method := forwardAuthMethod(f, asked)
	switch {
	case asked == auth.OIDCFactorBackup:
		// Refused with words when the page does not take one.
		var l *auth.Login
		if l, err = s.auth.ForwardAuthBackupCode(ctx, t, pr, code, m); err == nil {
			s.forwardAuthSignedIn(w, r, p, t, l, "")
			return
		}
	case method == auth.OIDCFactorSMS:
		err = s.auth.VerifySMSCode(ctx, pr, code, m)
	default:
		err = s.auth.VerifyTOTP(ctx, pr, code, m)
	}
	if err != nil {
		s.forwardAuthFactorForm(w, r, p, t, f, method, statusOf(auth.AsError(err)), err)
		return
	}
	s.forwardAuthNext(w, r, p, t, pr, tok, "")
}

// forwardAuthSignedIn makes l, a sign-in on the pages, the browser's
// session (its single sign-on cookie), then takes the sign-in on: to
// the second factor, or back to the app with the forward-auth cookie.
func (s *Server) forwardAuthSignedIn(w http.ResponseWriter, r *http.Request, p *projectOP, t *auth.ForwardAuthTarget, l *auth.Login, email string) {
	pr, err := s.auth.OIDCBrowserSession(r.Context(), p.id, l.Token)
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	s.setSSOCookie(w, p, l.Token)
	// The forward-auth cookie, which every app under the domain sees,
	// only once the sign-in is done (forwardAuthNext), never while its
	// second factor is pending.
	s.forwardAuthNext(w, r, p, t, pr, l.Token, email)
}

// forwardAuthFactorForm shows the second-factor form of method for
// sign-in t, with links to the user's other factors (f) and its
// failure, if any.
func (s *Server) forwardAuthFactorForm(w http.ResponseWriter, r *http.Request, p *projectOP, t *auth.ForwardAuthTarget, f auth.OIDCFactors, method string, status int, fail error) {
	action := p.issuer + auth.ForwardAuthSecondFactorPath + "?rd=" + url.QueryEscape(t.RD)
	d := oidcPage{Form: "mfa", Title: "mfa_title", Action: action, Method: method, Fail: fail,
		CSRF: s.auth.ForwardAuthFormToken(browserSecret(w, r, p), t.RD)}
	switch method {
	case auth.OIDCFactorSMS: // texted as the page opened
		d.Text = "mfa_sms_sent_text"
	case auth.OIDCFactorBackup:
		d.Text = "mfa_backup_text"
	default:
		d.Text = "mfa_totp_text"
	}
	has := map[string]bool{auth.OIDCFactorTOTP: f.TOTP, auth.OIDCFactorSMS: f.SMS, auth.OIDCFactorBackup: f.Backup}
	d.Others = otherFactors(has, method, action+"&")
	s.oidcRender(w, status, d)
}
