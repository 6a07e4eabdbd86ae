package httpapi

import (
	"net/http"
	"net/url"

	"latchkey/auth"
)

// The account page's second-factor actions beyond the first ones: a
// step-up by a code texted to the enrolled phone (the API's sms/send
// without a phone, then sms/verify: their throttles, lockouts and
// events), and the authenticator app's removal (auth.RemoveTOTP, behind
// step-up recency, totp.removed).

// More actions of the account page (POST /account/<action>).
const (
	acctStepUpSMSSend = "stepup-sms-send"
	acctStepUpSMS     = "stepup-sms"
	acctTOTPRemove    = "totp-remove"
)

// accountMoreActions runs the page's actions of this file for session
// pr (its form's CSRF token and the session already checked); any other
// action is a page that does not exist.
func (s *Server) accountMoreActions(w http.ResponseWriter, r *http.Request, p *projectOP, pr *auth.Principal, action string) {
	ctx, m, f := r.Context(), s.meta(r, false), r.PostForm
	switch action {
	case acctStepUpSMSSend:
		if err := s.auth.SendSMSCode(ctx, pr, "", m); err != nil {
			s.accountFailed(w, r, p, pr, err, accountView{Panel: "stepup"})
			return
		}
		s.accountShowStepUp(w, r, p, pr, http.StatusOK, nil, true)
	case acctStepUpSMS:
		if err := s.auth.VerifySMSCode(ctx, pr, f.Get("code"), m); err != nil {
			s.accountFailed(w, r, p, pr, err, accountView{Panel: "stepup", SMSSent: true})
			return
		}
		noStore(w)
		http.Redirect(w, r, p.issuer+auth.AccountPath+"?done=verified", http.StatusSeeOther)
	case acctTOTPRemove:
		if err := s.auth.RemoveTOTP(ctx, pr, m); err != nil {
			s.accountFailed(w, r, p, pr, err, accountView{})
			return
		}
		noStore(w)
		http.Redirect(w, r, p.issuer+auth.AccountPath+"?done="+url.QueryEscape(action), http.StatusSeeOther)
	default:
		s.oidcError(w, http.StatusNotFound, "error_no_such_page")
	}
}

// The templates of these actions, in the account page's set: the
// step-up's SMS code form (once a code was texted; first, so that it
// has the focus) and its send button, and the authenticator app's
// removal on the overview.
var _ = accountTmpl.add("account-factors", `
{{define "stepup-sms-code"}}{{if and .StepUp.SMS .SMSSent}}<p class="notice" role="status">{{fill .T.account_sms_sent_text "digits" .StepUp.PhoneEnding}}</p>
<form method="post" action="{{.Action}}stepup-sms"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="sms-code">{{.T.account_sms_code_label}}</label>
<input id="sms-code" name="code" inputmode="numeric" autocomplete="one-time-code" required autofocus>
<button type="submit">{{.T.account_confirm_button}}</button></form>{{end}}{{end}}
{{define "stepup-sms-send"}}{{if .StepUp.SMS}}<form method="post" action="{{.Action}}stepup-sms-send"><input type="hidden" name="csrf" value="{{.CSRF}}">
{{if .SMSSent}}<button type="submit" class="alt">{{.T.account_sms_again_button}}</button>{{else}}<p>{{fill .T.account_sms_offer_text "digits" .StepUp.PhoneEnding}}</p>
<button type="submit"{{if or .StepUp.TOTP .Passkey}} class="alt"{{end}}>{{.T.sms_button}}</button>{{end}}</form>{{end}}{{end}}
{{define "totp-remove"}}<form method="post" action="{{.Action}}totp-remove"><input type="hidden" name="csrf" value="{{.CSRF}}">
<button type="submit" class="alt">{{.T.account_totp_remove_button}}</button></form>{{end}}`)
