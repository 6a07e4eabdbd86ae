package httpapi

import (
	"net/http"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"latchkey/auth"
)

// The consent page of the providers' third-party clients (docs/oidc.md,
// "Consent"): GET shows what the client asks for, in plain words; POST
// takes the answer (decision=allow or deny) with the form's CSRF token.
// Allow goes on to the callback that issues the code; deny answers the
// client error=access_denied (with iss). Only the browser whose session
// signed in for the request sees the page.

// errConsentRequired answers prompt=none when the user has not allowed
// the client (OpenID Connect Core, section 3.1.2.6).
var errConsentRequired = &oidc.Error{ErrorType: "consent_required", Description: "The user has not allowed this application."}

// oidcConsentAsk is the consent page's question.
type oidcConsentAsk struct {
	ClientName string
	Scopes     []auth.ScopeText
	ReturnTo   string // a self-registered client's redirect host
}

// oidcConsentTmpl is the consent form, a block of the pages' template.
var _ = oidcTmpl.add("consent", `<form method="post" action="{{.Action}}">
<input type="hidden" name="authRequestID" value="{{.AuthRequestID}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
<p>{{fillStrong .T.consent_asks "client" .Consent.ClientName}}</p>
<ul>{{range .Consent.Scopes}}<li>{{.Text}}</li>{{end}}</ul>
{{if .Consent.ReturnTo}}<p id="consent-return">{{fillStrong .T.consent_returns_to "host" .Consent.ReturnTo}}</p>{{end}}
<button type="submit" name="decision" value="allow">{{.T.allow_button}}</button>
<button type="submit" name="decision" value="deny" class="alt">{{.T.deny_button}}</button>
</form>`)

// oidcConsent is the consent page.
func (s *Server) oidcConsent(w http.ResponseWriter, r *http.Request, p *projectOP) {
	ctx := r.Context()
	pr := s.oidcSession(r, p)
	if r.Method != http.MethodPost {
		id := r.URL.Query().Get("authRequestID")
		ask, err := s.auth.OIDCConsentRequest(ctx, p.id, id, pr)
		if err != nil {
			s.oidcFail(w, err)
			return
		}
		s.oidcShowConsent(w, r, p, http.StatusOK, id, ask, nil)
		return
	}
	id, ok := s.oidcForm(w, r, p)
	if !ok {
		return
	}
	decision := r.PostForm.Get("decision")
	if decision != "allow" && decision != "deny" {
		ask, err := s.auth.OIDCConsentRequest(ctx, p.id, id, pr)
		if err != nil {
			s.oidcFail(w, err)
			return
		}
		s.oidcShowConsent(w, r, p, http.StatusBadRequest, id, ask, textKey("choose_allow_deny"))
		return
	}
	allowed, err := s.auth.OIDCDecideConsent(ctx, p.id, id, pr, decision == "allow")
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	if !allowed {
		s.oidcAnswerError(w, r, p, id, oidc.ErrAccessDenied().WithDescription("The user denied the application access."))
		return
	}
	s.oidcNext(w, r, p, id, auth.OIDCStepDone)
}

// oidcShowConsent shows the consent form of request id.
func (s *Server) oidcShowConsent(w http.ResponseWriter, r *http.Request, p *projectOP, status int, id string, ask *auth.OIDCConsentAsk, fail error) {
	d := oidcPage{Title: "consent_title", Action: p.issuer + auth.OIDCConsentPath, AuthRequestID: id,
		CSRF: s.auth.OIDCFormToken(browserSecret(w, r, p), id), Fail: fail,
		Text:    "consent_text",
		Consent: &oidcConsentAsk{ClientName: ask.ClientName, Scopes: ask.Scopes, ReturnTo: ask.ReturnTo}}
	s.oidcRender(w, status, d)
}
