package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
)

// The device flow of the providers (RFC 8628; docs/oidc.md, "Device
// flow"): the device authorization endpoint, op's behind a check of
// the client, and the device page <issuer>/device, where a person
// enters the code a device shows (verification_uri_complete fills it
// in), signs in if the browser has no session (the hosted sign-in,
// which comes back here), and allows or denies the device. The page is
// one of the hosted pages: the same template, headers and CSRF tokens.

// oidcDeviceAuthorizationPath is op's device authorization endpoint,
// under an issuer.
const oidcDeviceAuthorizationPath = "/device_authorization"

var _ = oidcTmpl.add("device", oidcDeviceTmpl)

// oidcDeviceAuthorization is the device authorization endpoint: a
// confidential client with the device grant must authenticate (HTTP
// Basic, as when it polls), which op does not ask here; op does the
// rest (a client without the grant is unauthorized_client).
func (s *Server) oidcDeviceAuthorization(w http.ResponseWriter, r *http.Request, p *projectOP) {
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		id, authenticated, err := op.ClientIDFromRequest(r, p.lk)
		if err == nil && !authenticated {
			c, cerr := p.storage.GetClientByClientID(r.Context(), id)
			if cerr == nil && op.IsConfidentialType(c) && op.ValidateGrantType(c, oidc.GrantTypeDeviceCode) {
				err = oidc.ErrInvalidClient().WithDescription("A confidential client must authenticate (HTTP Basic or client_secret_post).")
			}
		}
		if err != nil {
			op.RequestError(w, r, err, nil)
			return
		}
	}
	p.handler.ServeHTTP(w, r)
}

// oidcDevicePage is what the device page shows (oidcPage.Device).
type oidcDevicePage struct {
	Action, CSRF, UserCode string
	// Confirm: the allow/deny form for ClientName and its scopes
	// (worded by the render, as the consent page's), instead of the
	// code form.
	Confirm    bool
	ClientName string
	Scopes     []string
	// T and Error: the page's texts by key and the code form's error
	// (set by the render).
	T     map[string]string
	Error string
}

// oidcDevice is the device page: GET shows the code form (filled in
// from ?user_code=); POST of a code shows the allow/deny form when the
// browser's session may answer, else sends it to sign in first; POST of
// a decision answers the device.
func (s *Server) oidcDevice(w http.ResponseWriter, r *http.Request, p *projectOP) {
	if r.Method != http.MethodPost {
		s.oidcDeviceForm(w, r, p, http.StatusOK, r.URL.Query().Get("user_code"), nil)
		return
	}
	if !s.readPageForm(w, r) {
		return
	}
	ctx := r.Context()
	typed, decision := r.PostForm.Get("user_code"), r.PostForm.Get("decision")
	bound := "device:"
	if decision != "" {
		code, _ := auth.OIDCDeviceUserCode(typed)
		bound += code
	}
	browser := formSecret(r, p)
	if !s.auth.OIDCFormTokenValid(browser, bound, r.PostForm.Get("csrf")) {
		s.oidcError(w, http.StatusForbidden, "error_device_form_not_from_page")
		return
	}
	pr := s.oidcSession(r, p)
	if decision != "" {
		if decision != "allow" && decision != "deny" {
			s.oidcError(w, http.StatusBadRequest, "choose_allow_deny")
			return
		}
		if err := s.auth.OIDCDeviceDecide(ctx, p.id, typed, pr, decision == "allow", s.meta(r, false)); err != nil {
			s.oidcFail(w, err)
			return
		}
		if decision == "allow" {
			s.oidcRender(w, http.StatusOK, oidcPage{Title: "device_connected_title", Text: "device_connected_text"})
		} else {
			s.oidcRender(w, http.StatusOK, oidcPage{Title: "device_denied_title", Text: "device_denied_text"})
		}
		return
	}
	d, err := s.auth.OIDCDeviceLookup(ctx, p.id, typed, s.meta(r, false).IP)
	if err != nil {
		e := auth.AsError(err)
		if e.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((e.RetryAfter+time.Second-1)/time.Second)))
		}
		if e.Code == auth.ErrInternal.Code {
			s.log.Error("oidc device page", "err", err)
		}
		s.oidcDeviceForm(w, r, p, statusOf(e), typed, err)
		return
	}
	ready, err := s.auth.OIDCDeviceSessionReady(ctx, p.id, d, pr)
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	if !ready {
		id, err := s.auth.OIDCDeviceSignIn(ctx, p.id, d)
		if err != nil {
			s.oidcFail(w, err)
			return
		}
		noStore(w)
		http.Redirect(w, r, p.issuer+auth.OIDCLoginPath+"?authRequestID="+url.QueryEscape(id), http.StatusSeeOther)
		return
	}
	dp := &oidcDevicePage{Action: p.issuer + auth.OIDCDevicePath, Confirm: true, UserCode: d.UserCode,
		CSRF: s.auth.OIDCFormToken(browserSecret(w, r, p), "device:"+d.UserCode), ClientName: d.ClientName}
	for _, sc := range d.Scopes {
		dp.Scopes = append(dp.Scopes, sc) // worded by the render
	}
	s.oidcRender(w, http.StatusOK, oidcPage{Title: "device_title", Device: dp,
		Text: "device_confirm_text"})
}

// oidcDeviceForm shows the device page's code form, typed filled in and
// its failure, if any.
func (s *Server) oidcDeviceForm(w http.ResponseWriter, r *http.Request, p *projectOP, status int, typed string, fail error) {
	if code, ok := auth.OIDCDeviceUserCode(typed); ok {
		typed = code
	}
	if len(typed) > 32 {
		typed = ""
	}
	s.oidcRender(w, status, oidcPage{Title: "device_title", Fail: fail,
		Text: "device_text",
		Device: &oidcDevicePage{Action: p.issuer + auth.OIDCDevicePath, UserCode: typed,
			CSRF: s.auth.OIDCFormToken(browserSecret(w, r, p), "device:")}})
}

// oidcDeviceTmpl is the device page's part of the pages' template.
const oidcDeviceTmpl = `{{if .Confirm}}<p>{{.T.code_label}} <strong>{{.UserCode}}</strong></p>
<p>{{fillStrong .T.device_asks "client" .ClientName}}</p><ul>{{range .Scopes}}<li>{{.}}</li>{{end}}</ul>
<form method="post" action="{{.Action}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="user_code" value="{{.UserCode}}">
<button type="submit" name="decision" value="allow">{{.T.allow_button}}</button>
<button type="submit" name="decision" value="deny" class="alt">{{.T.deny_button}}</button></form>
{{else}}<form method="post" action="{{.Action}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label for="user_code">{{.T.code_label}}</label>
<input id="user_code" name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus value="{{.UserCode}}"{{if .Error}} aria-invalid="true" aria-describedby="error"{{end}}>
<button type="submit">{{.T.continue_button}}</button></form>{{end}}`
