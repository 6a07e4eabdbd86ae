package httpapi

import (
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"

	"latchkey/auth"
)

// The hosted sign-in's other ways in and second factors (docs/oidc.md,
// "Sign-in pages"): a magic link instead of the code, a passkey (the
// sign-in page's script: autofill by conditional mediation, or its
// button), the project's providers, and SMS and backup codes on the
// second-factor page. Each goes through the API's use case; each sign-in
// becomes the browser's session (oidcSignedIn) like the email code's.

// oauthCookie holds, per project, the PKCE verifier that binds a
// provider sign-in started on the pages to the browser (SameSite=Lax:
// the provider's redirect back is a top-level GET from another site).
const oauthCookie = "lk_oauth_"

// oidcOtherWays fills the sign-in page's passkey ceremony and provider
// buttons.
func (s *Server) oidcOtherWays(r *http.Request, p *projectOP, id string, d *oidcPage) {
	sr, err := s.auth.OIDCSignInRequest(r.Context(), p.id, id)
	if err != nil {
		return
	}
	if d.Providers = auth.OIDCProviders(sr.Project); len(d.Providers) > 0 {
		d.ProviderAction = p.issuer + auth.OIDCProviderPath
	}
	c, err := s.auth.OIDCBeginPasskey(r.Context(), p.id, id, s.meta(r, false))
	if err != nil {
		// No passkey on this page (a risk refusal, say): the other ways
		// stay.
		if e := auth.AsError(err); e.Code == auth.ErrInternal.Code {
			s.log.Error("oidc passkey start", "err", err)
		}
		return
	}
	if c != nil {
		d.Passkey = &oidcPasskeyOffer{Action: p.issuer + auth.OIDCPasskeyPath, ChallengeID: c.ChallengeID, Options: string(c.Options)}
	}
}

// oidcSendLink is the code page's "email me a link instead": a magic
// link for the request, then a page saying where it went.
func (s *Server) oidcSendLink(w http.ResponseWriter, r *http.Request, p *projectOP) {
	id, ok := s.oidcPostForm(w, r, p)
	if !ok {
		return
	}
	email := r.PostForm.Get("email")
	if err := s.auth.OIDCSendLink(r.Context(), p.id, id, email, s.meta(r, false)); err != nil {
		s.oidcRetry(w, r, p, err, id, "code", email)
		return
	}
	s.oidcRender(w, http.StatusOK, oidcPage{Title: "link_sent_title", Text: "link_sent_text", Email: email})
}

// oidcLink is a magic link's page: GET (the link itself) shows a
// confirm button and uses nothing, so that a mail scanner opening the
// link cannot use it up; POST (the button) signs in.
func (s *Server) oidcLink(w http.ResponseWriter, r *http.Request, p *projectOP) {
	ctx := r.Context()
	if r.Method != http.MethodPost {
		q := r.URL.Query()
		id := q.Get("authRequestID")
		if _, err := s.auth.OIDCSignInRequest(ctx, p.id, id); err != nil {
			s.oidcFail(w, err)
			return
		}
		s.oidcRender(w, http.StatusOK, oidcPage{Title: "sign_in_title", Text: "link_confirm_text",
			Form: "link", Action: p.issuer + auth.OIDCLinkPath, AuthRequestID: id, Token: q.Get("token"),
			CSRF: s.auth.OIDCFormToken(browserSecret(w, r, p), id)})
		return
	}
	id, ok := s.oidcForm(w, r, p)
	if !ok {
		return
	}
	l, err := s.auth.OIDCVerifyLink(ctx, p.id, id, r.PostForm.Get("token"), s.meta(r, false))
	if err != nil {
		s.oidcFail(w, err)
		return
	}
	s.oidcSignedIn(w, r, p, id, l)
}

// oidcPasskey is the sign-in page's passkey form, posted by its script
// with the browser's assertion.
func (s *Server) oidcPasskey(w http.ResponseWriter, r *http.Request, p *projectOP) {
	id, ok := s.oidcPostForm(w, r, p)
	if !ok {
		return
	}
	cred := json.RawMessage(r.PostForm.Get("credential"))
	l, err := s.auth.OIDCFinishPasskey(r.Context(), p.id, id, r.PostForm.Get("challengeId"), cred, s.meta(r, false))
	if err != nil {
		s.oidcRetry(w, r, p, err, id, "email", "")
		return
	}
	s.oidcSignedIn(w, r, p, id, l)
}

// oidcProvider is a provider button's POST, which sends the browser to
// the provider, and (GET) where the provider's sign-in returns: with a
// one-time code, exchanged with the verifier the browser kept, or an
// error code.
func (s *Server) oidcProvider(w http.ResponseWriter, r *http.Request, p *projectOP) {
	ctx := r.Context()
	if r.Method == http.MethodPost {
		id, ok := s.oidcForm(w, r, p)
		if !ok {
			return
		}
		verifier := randomToken()
		to, err := s.auth.OIDCStartProvider(ctx, p.id, id, r.PostForm.Get("provider"), verifier, s.meta(r, false))
		if err != nil {
			s.oidcRetry(w, r, p, err, id, "email", "")
			return
		}
		c := oidcCookie(p, oauthCookie, verifier)
		c.SameSite, c.MaxAge = http.SameSiteLaxMode, int(auth.OAuthStateLifetime.Seconds())
		http.SetCookie(w, c)
		noStore(w)
		http.Redirect(w, r, to, http.StatusSeeOther)
		return
	}
	q := r.URL.Query()
	id := q.Get("authRequestID")
	if _, err := s.auth.OIDCSignInRequest(ctx, p.id, id); err != nil {
		s.oidcFail(w, err)
		return
	}
	verifier := ""
	if c, err := r.Cookie(p.cookieName(oauthCookie)); err == nil {
		verifier = c.Value
	}
	gone := oidcCookie(p, oauthCookie, "")
	gone.MaxAge = -1
	http.SetCookie(w, gone)
	if q.Get("error") != "" || q.Get("code") == "" {
		s.oidcShowForm(w, r, p, http.StatusOK, id, "email", "", textKey("error_provider_incomplete"))
		return
	}
	if verifier == "" {
		s.oidcShowForm(w, r, p, http.StatusForbidden, id, "email", "", textKey("error_provider_other_browser"))
		return
	}
	l, err := s.auth.OIDCFinishProvider(ctx, p.id, id, q.Get("code"), verifier, s.meta(r, false))
	if err != nil {
		s.oidcShowForm(w, r, p, statusOf(auth.AsError(err)), id, "email", "", err)
		return
	}
	s.oidcSignedIn(w, r, p, id, l)
}

// oidcSendSMS texts a code to the enrolled phone of the browser's
// session and shows the SMS code form.
func (s *Server) oidcSendSMS(w http.ResponseWriter, r *http.Request, p *projectOP) {
	id, ok := s.oidcPostForm(w, r, p)
	if !ok {
		return
	}
	pr := s.oidcSession(r, p)
	if pr == nil {
		s.oidcError(w, http.StatusUnauthorized, "error_sign_in_ended")
		return
	}
	if err := s.auth.OIDCSendSMS(r.Context(), p.id, id, pr, s.meta(r, false)); err != nil {
		s.oidcShowFactor(w, r, p, statusOf(auth.AsError(err)), id, pr, auth.OIDCFactorSMS, "", err)
		return
	}
	s.oidcShowFactor(w, r, p, http.StatusOK, id, pr, auth.OIDCFactorSMS, "mfa_sms_sent_text", nil)
}

// oidcShowFactor shows the second-factor form of method (totp, sms or
// backup; the first the user has when it has not that one) for the
// browser's session pr, with links to the others it has, text (a key)
// instead of the method's and its failure, if any.
func (s *Server) oidcShowFactor(w http.ResponseWriter, r *http.Request, p *projectOP, status int, id string, pr *auth.Principal, method, text string, fail error) {
	f, err := s.auth.OIDCSecondFactors(r.Context(), p.id, id, pr)
	if err != nil {
		s.oidcStepError(w, r, p, id, err)
		return
	}
	if f.Enroll {
		step := enrollIntro
		if method == auth.OIDCFactorEnroll && fail != nil {
			step = enrollAgain
		}
		s.oidcShowEnroll(w, r, p, status, id, pr, step, fail)
		return
	}
	has := map[string]bool{auth.OIDCFactorTOTP: f.TOTP, auth.OIDCFactorSMS: f.SMS, auth.OIDCFactorBackup: f.Backup}
	if !has[method] {
		method = auth.OIDCFactorTOTP
		if !f.TOTP {
			method = auth.OIDCFactorSMS
		}
	}
	d := oidcPage{Form: "mfa", Title: "mfa_title", Action: p.issuer + auth.OIDCSecondFactorPath, AuthRequestID: id,
		Method: method, Fail: fail, CSRF: s.auth.OIDCFormToken(browserSecret(w, r, p), id)}
	switch method {
	case auth.OIDCFactorTOTP:
		d.Text = "mfa_totp_text"
	case auth.OIDCFactorSMS:
		d.Text, d.SMSAction = "mfa_sms_text", p.issuer+auth.OIDCSendSMSPath
	case auth.OIDCFactorBackup:
		d.Text = "mfa_backup_text"
	}
	if text != "" {
		d.Text = text
	}
	d.Others = otherFactors(has, method, p.issuer+auth.OIDCSecondFactorPath+"?authRequestID="+url.QueryEscape(id)+"&")
	s.oidcRender(w, status, d)
}

// The steps of the TOTP set-up on the second-factor page.
type enrollStep int

const (
	enrollIntro enrollStep = iota // why, and a button that starts it (a POST: GET changes nothing)
	enrollShow                    // a new secret: its QR code and key, and the code's field
	enrollAgain                   // a wrong code: the field again, for the secret already shown
)

// enrollStart is the set-up's start, posted from its intro with the
// page's CSRF token.
const enrollStart = "enroll-start"

// oidcShowEnroll is the second-factor page of a client that requires a
// second factor, for a user who has none: it sets up TOTP. Its intro's
// button posts enrollStart, which makes a new secret (OIDCEnrollTOTP:
// counted against the session's limit) and shows its QR code and key;
// the app's code then goes to OIDCSecondFactor, checked as TOTP's,
// which confirms the set-up. A set-up that needs a newer sign-in (the
// session is older than the step-up window) sends the browser to sign in
// again.
func (s *Server) oidcShowEnroll(w http.ResponseWriter, r *http.Request, p *projectOP, status int, id string, pr *auth.Principal, step enrollStep, fail error) {
	d := oidcPage{Form: "mfa", Title: "account_totp_setup", Text: "mfa_enroll_text", Action: p.issuer + auth.OIDCSecondFactorPath,
		AuthRequestID: id, Method: auth.OIDCFactorEnroll, Fail: fail, CSRF: s.auth.OIDCFormToken(browserSecret(w, r, p), id)}
	switch step {
	case enrollIntro:
		d.Method = enrollStart
	case enrollAgain:
		d.Text = "account_totp_confirm_text"
	case enrollShow:
		e, err := s.auth.OIDCEnrollTOTP(r.Context(), p.id, id, pr, s.meta(r, false))
		if auth.AsError(err).Is(auth.ErrStepUpRequired) {
			s.oidcNext(w, r, p, id, auth.OIDCStepSignIn)
			return
		} else if err != nil {
			s.oidcStepError(w, r, p, id, err)
			return
		}
		d.Text, d.Enroll = "", &oidcEnroll{QR: template.URL(e.QRCodeDataURL), Secret: e.Secret}
	}
	s.oidcRender(w, status, d)
}

// otherFactors are the second-factor form's links to the factors the
// user has (has) besides method, each to base followed by
// method=<factor> (base ends in ? or &).
func otherFactors(has map[string]bool, method, base string) []oidcLink {
	var links []oidcLink
	for _, l := range []struct{ method, label string }{
		{auth.OIDCFactorTOTP, "use_totp_link"},
		{auth.OIDCFactorSMS, "use_sms_link"},
		{auth.OIDCFactorBackup, "use_backup_link"},
	} {
		if has[l.method] && l.method != method {
			links = append(links, oidcLink{Label: l.label, URL: base + "method=" + l.method})
		}
	}
	return links
}

// passkeyScript is the sign-in page's passkey ceremony: autofill
// (conditional mediation: the browser offers the passkeys it holds for
// the email field) when the browser has it, and the passkey button; the
// assertion is posted with the page's passkey form. Without WebAuthn it
// does nothing and the button stays hidden.
const passkeyScript = `(function () {
  var f = document.getElementById("passkey");
  if (!f || !window.PublicKeyCredential || !navigator.credentials) return;
  var o = JSON.parse(f.getAttribute("data-options")).publicKey;
  function bin(s) {
    var r = atob(s.replace(/-/g, "+").replace(/_/g, "/")), a = new Uint8Array(r.length);
    for (var i = 0; i < r.length; i++) a[i] = r.charCodeAt(i);
    return a.buffer;
  }
  function txt(b) {
    var a = new Uint8Array(b), r = "";
    for (var i = 0; i < a.length; i++) r += String.fromCharCode(a[i]);
    return btoa(r).replace(/[+]/g, "-").replace(/[\/]/g, "_").replace(/=+$/, "");
  }
  var pk = {challenge: bin(o.challenge), timeout: o.timeout, rpId: o.rpId, userVerification: o.userVerification,
    allowCredentials: (o.allowCredentials || []).map(function (c) { return {type: c.type, id: bin(c.id)}; })};
  var pending = null;
  function send(c) {
    var r = c.response;
    f.elements.credential.value = JSON.stringify({id: c.id, rawId: txt(c.rawId), type: c.type,
      authenticatorAttachment: c.authenticatorAttachment || undefined,
      response: {clientDataJSON: txt(r.clientDataJSON), authenticatorData: txt(r.authenticatorData),
        signature: txt(r.signature), userHandle: r.userHandle ? txt(r.userHandle) : undefined},
      clientExtensionResults: c.getClientExtensionResults ? c.getClientExtensionResults() : {}});
    f.submit();
  }
  function get(mediation) {
    if (pending) pending.abort();
    pending = new AbortController();
    var req = {publicKey: pk, signal: pending.signal};
    if (mediation) req.mediation = mediation;
    return navigator.credentials.get(req).then(function (c) { if (c) send(c); });
  }
  var b = document.getElementById("passkey-button");
  b.hidden = false;
  b.addEventListener("click", function () {
    get("").catch(function (e) { if (e.name !== "AbortError") console.log("passkey: " + e.name); });
  });
  if (PublicKeyCredential.isConditionalMediationAvailable) {
    PublicKeyCredential.isConditionalMediationAvailable().then(function (ok) {
      if (ok) get("conditional").catch(function () {});
    });
  }
})();`
