package auth

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"

	"latchkey/store"
)

// The hosted sign-in of the projects' OpenID providers (docs/oidc.md,
// "Sign-in pages"): the use cases behind the pages under an issuer. A
// sign-in there is an email code through the same use case as the
// API's (its throttles, lockouts, risk checks and events), and makes an
// ordinary session whose method is "oidc:<client name>"; a browser
// holds it in a cookie whose value is the session's token, checked by
// the session check of the API. A user with TOTP or SMS enrolled, or a
// client that requires a second factor, proves one on the session
// before the request is answered.

// Paths of the hosted pages, under an issuer.
const (
	OIDCLoginPath        = "/login"
	OIDCLoginCodePath    = "/login/code"
	OIDCSecondFactorPath = "/login/mfa"
)

// oidcMethodPrefix starts the method of a hosted sign-in's session.
const oidcMethodPrefix = "oidc:"

// Refusals of the hosted pages (shown on an error page, never in JSON).
var (
	// ErrAuthRequestGone: the request is unknown, expired or answered.
	ErrAuthRequestGone = ErrNotFound.With("This sign-in request has expired or was already used. Go back to the application and sign in again.")
	// errNoSecondFactor: a TOTP set-up asked of the second-factor page
	// when it does not offer one (OIDCEnrollTOTP): the client requires
	// no second factor, or the user has one.
	errNoSecondFactor = ErrStepUpRequired.With("This application requires a second factor (an authenticator app or a phone), and this account has none. Add one in the application's account settings, then sign in again.")
)

// OIDCSignIn is an authorization request as the hosted pages see it.
type OIDCSignIn struct {
	ID         string
	Project    *store.Project
	ClientName string
	LoginHint  string
	UILocales  []string
	// PromptNone: the client asked for no interaction.
	PromptNone bool
}

// OIDCSignInRequest returns projectID's authorization request id when
// it may still be answered (ErrAuthRequestGone otherwise).
func (s *Service) OIDCSignInRequest(ctx context.Context, projectID, id string) (*OIDCSignIn, error) {
	p, err := s.project(ctx, projectID)
	if err != nil {
		return nil, err
	}
	var r *store.OIDCAuthRequest
	var c *store.OIDCClient
	err = s.db.View(ctx, func(tx store.Tx) (err error) {
		if r, err = s.liveAuthRequest(tx, projectID, id); err != nil {
			return err
		}
		c, err = tx.OIDCClient(projectID, r.ClientID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrAuthRequestGone
	} else if err != nil {
		return nil, internal(err)
	}
	return &OIDCSignIn{ID: r.ID, Project: p, ClientName: c.Name, LoginHint: r.LoginHint, UILocales: r.UILocales,
		PromptNone: slices.Contains(r.Prompt, oidc.PromptNone)}, nil
}

// OIDCBrowserSession checks a hosted sign-in's cookie (a session token
// of projectID) with the session check; 401 INVALID_SESSION when it is
// not a live session of the project.
func (s *Service) OIDCBrowserSession(ctx context.Context, projectID, cookie string) (*Principal, error) {
	pr, err := s.AuthenticateSession(ctx, "Bearer "+cookie)
	if err != nil {
		return nil, err
	}
	if pr.ProjectID != projectID {
		return nil, ErrInvalidSession
	}
	return pr, nil
}

// OIDCSendCode emails a sign-in code to email for request id: SendOTP's
// checks, throttles and events.
func (s *Service) OIDCSendCode(ctx context.Context, projectID, id, email string, m Meta) error {
	sr, err := s.OIDCSignInRequest(ctx, projectID, id)
	if err != nil {
		return err
	}
	return s.SendOTP(ctx, sr.Project, email, m)
}

// OIDCVerifyCode checks an emailed code for request id and signs the
// user in (VerifyOTP's checks, lockouts and events): a new session,
// method "oidc:<client name>", proven by the code.
func (s *Service) OIDCVerifyCode(ctx context.Context, projectID, id, email, code string, m Meta) (*Login, error) {
	sr, err := s.OIDCSignInRequest(ctx, projectID, id)
	if err != nil {
		return nil, err
	}
	return s.verifyOTP(ctx, sr.Project, OTPInput{Email: email, Code: code}, m,
		loginAs{method: oidcMethodPrefix + sr.ClientName, proof: amrOTP, noRefresh: true})
}

// OIDCStep is what a hosted sign-in does next.
type OIDCStep int

// The steps of a hosted sign-in.
const (
	// OIDCStepSignIn: the browser has no session the request may use.
	OIDCStepSignIn OIDCStep = iota
	// OIDCStepSecondFactor: the session must prove a second factor
	// (TOTP or SMS; a backup code signs in again).
	OIDCStepSecondFactor
	// OIDCStepDone: the request is answered; its code may be issued.
	OIDCStepDone
	// OIDCStepConsent: the user signed in, and must allow the
	// (third-party) client first (oidc_consent.go).
	OIDCStepConsent
	// OIDCStepPasskeyFirst: the client requires a second factor, the
	// user's only factor is a passkey, and the session did not prove it
	// recently: setting up a second factor needs a passkey sign-in
	// first (recentAuth), which the sign-in page asks for in words.
	OIDCStepPasskeyFirst
)

// OIDCContinue takes request id as far as the browser's session pr
// allows (nil: none), in one transaction: it answers the request with
// the session (user, session, auth_time, amr, acr) when the session may
// serve it. fresh says the session was signed in by this request's own
// page, which satisfies prompt=login and max_age. A session may not
// serve the request when the client asked for a new sign-in (prompt
// login or select_account, max_age passed since the session's last
// proof, an id_token_hint or login_hint of someone else): the browser
// signs in again. A second factor is needed first when the user has
// TOTP or SMS enrolled and the session proved neither, or the client
// requires one (a user who has none is offered to enrol TOTP there). A
// third-party client then needs the user's consent
// (needsConsent): the request is signed in but not answered
// (OIDCStepConsent) until the user allows it (OIDCDecideConsent).
func (s *Service) OIDCContinue(ctx context.Context, projectID, id string, pr *Principal, fresh bool) (OIDCStep, error) {
	if pr == nil {
		return OIDCStepSignIn, nil
	}
	step := OIDCStepSignIn
	err := s.db.Batch(ctx, func(tx store.Tx) error {
		step = OIDCStepSignIn
		r, err := s.liveAuthRequest(tx, projectID, id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrAuthRequestGone
		} else if err != nil {
			return err
		}
		var write bool
		if step, write, err = s.answerWithSession(tx, r, pr, fresh); err != nil || !write {
			return err
		}
		return tx.PutOIDCAuthRequest(r)
	})
	if err != nil {
		return OIDCStepSignIn, internal(err)
	}
	return step, nil
}

// answerWithSession takes request r, read or made inside tx, as far as
// the browser's session pr allows (OIDCContinue's rules) and returns the
// step and whether r changed and must be written: answered (user,
// session, auth_time, amr, acr, Done) for OIDCStepDone, answered but not
// Done for OIDCStepConsent, or, for OIDCStepSecondFactor, given the
// session that signed in fresh. OIDCStepSignIn leaves r as it was.
func (s *Service) answerWithSession(tx store.Tx, r *store.OIDCAuthRequest, pr *Principal, fresh bool) (OIDCStep, bool, error) {
	sess, en, err := tx.SessionEnrolled(pr.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return OIDCStepSignIn, false, nil
	} else if err != nil {
		return OIDCStepSignIn, false, err
	}
	now := s.now()
	if sess.UserID != pr.UserID || sess.ProjectID != r.ProjectID || !now.Before(sess.ExpiresAt) {
		return OIDCStepSignIn, false, nil
	}
	u, err := tx.User(sess.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return OIDCStepSignIn, false, nil
	} else if err != nil {
		return OIDCStepSignIn, false, err
	}
	// A session this request's own page signed in (now, or before its
	// second factor) is fresh.
	fresh = fresh || r.SessionID == sess.ID
	if !fresh && mustSignInAgain(r, sess, u, now) {
		return OIDCStepSignIn, false, nil
	}
	c, err := tx.OIDCClient(r.ProjectID, r.ClientID)
	if errors.Is(err, store.ErrNotFound) {
		return OIDCStepSignIn, false, ErrAuthRequestGone
	} else if err != nil {
		return OIDCStepSignIn, false, err
	}
	mfa := secondFactorProven(sess.Proofs)
	if secondFactorPending(sess.Proofs, en) || (c.RequireMFA && !mfa) {
		// A user without TOTP or SMS is offered to enrol TOTP on the
		// second-factor page (OIDCSecondFactors' Enroll), which, as the
		// API's enrolment, needs a recent sign-in (recentAuth: of a
		// passkey, for an account that has one): a session without one,
		// this request's own after ten minutes included, signs in again
		// first.
		if !en.TOTP && !en.SMS && !recentAuth(sess.Proofs, en, now) {
			if !en.Passkey {
				return OIDCStepSignIn, false, nil
			}
			// The session is noted as the request's own, as for the
			// second factor, so that the sign-in page it goes back to
			// still says why when the client asked for a new sign-in
			// (prompt=login, max_age): nothing is answered until the
			// passkey signs in.
			if fresh && r.SessionID != sess.ID {
				r.SessionID = sess.ID
				return OIDCStepPasskeyFirst, true, nil
			}
			return OIDCStepPasskeyFirst, false, nil
		}
		if fresh && r.SessionID != sess.ID {
			r.SessionID = sess.ID
			return OIDCStepSecondFactor, true, nil
		}
		return OIDCStepSecondFactor, false, nil
	}
	// A request this session already answered (its consent given) stays
	// answered.
	answered := r.Done && r.SessionID == sess.ID
	r.UserID, r.SessionID, r.AuthTime = sess.UserID, sess.ID, lastProof(sess.Proofs)
	r.AMR, r.ACR, r.Done = oidcAMR(sess.Proofs), ACRSingleFactor, true
	if mfa {
		r.ACR = ACRMultiFactor
	}
	if !answered {
		ask, err := needsConsent(tx, r, c, sess.UserID)
		if err != nil {
			return OIDCStepSignIn, false, err
		}
		if ask {
			r.Done = false
			return OIDCStepConsent, true, nil
		}
	}
	return OIDCStepDone, true, nil
}

// OIDCSecondFactor checks a second factor of the browser's session pr
// for request id: a TOTP code on the session (VerifyTOTP: its lockouts
// and events), a texted code on the session (VerifySMSCode), or a
// backup code, which is a sign-in of its own as in the API
// (VerifyBackupCode, for the session's user): the new session is
// returned then, and nil otherwise. A backup code is refused when the
// page does not offer it (OIDCSecondFactors).
func (s *Service) OIDCSecondFactor(ctx context.Context, projectID, id string, pr *Principal, method, code string, m Meta) (*Login, error) {
	sr, err := s.OIDCSignInRequest(ctx, projectID, id)
	if err != nil {
		return nil, err
	}
	switch method {
	case OIDCFactorSMS:
		return nil, s.VerifySMSCode(ctx, pr, code, m)
	case OIDCFactorBackup:
		f, err := s.OIDCSecondFactors(ctx, projectID, id, pr)
		if err != nil {
			return nil, err
		}
		if !f.Backup {
			return nil, errNoBackupHere
		}
		u, err := s.SessionUser(ctx, pr)
		if err != nil {
			return nil, err
		}
		return s.verifyBackupCode(ctx, sr.Project, BackupInput{Email: &u.Email, Code: code},
			loginAs{method: oidcMethodPrefix + sr.ClientName, proof: amrBackupCode, noRefresh: true}, m)
	}
	return nil, s.VerifyTOTP(ctx, pr, code, m)
}

// errNoBackupHere: a backup code where the page does not take one (no
// codes left, or a client that requires a second factor).
var errNoBackupHere = ErrStepUpRequired.With("A backup code cannot be used for this sign-in: enter a code from your authenticator app or phone.")

// OIDCCallbackAllowed reports whether the browser whose session is pr
// may collect request id's code: the request was answered with that
// session. Anyone else holding the request's id gets nothing, and a
// device page's sign-in (OIDCDeviceSignIn) never gets a code.
func (s *Service) OIDCCallbackAllowed(ctx context.Context, projectID, id string, pr *Principal) bool {
	if pr == nil || isDeviceSignIn(id) {
		return false
	}
	ok := false
	var r *store.OIDCAuthRequest
	var c *store.OIDCClient
	_ = s.db.View(ctx, func(tx store.Tx) (err error) {
		r, c = nil, nil
		if r, err = s.liveAuthRequest(tx, projectID, id); err != nil {
			return nil
		}
		if ok = r.Done && r.SessionID == pr.SessionID; ok {
			// What op's callback asks for next (oidc_memo.go).
			c, _ = tx.OIDCClient(projectID, r.ClientID)
		}
		return nil
	})
	if sc := scratchOf(ctx); ok && sc != nil {
		sc.request = r
		noteClient(ctx, c)
	}
	return ok
}

// OIDCAnswerError returns request id as the error redirect of op needs
// it (redirect URI, state, response mode), for a refusal the client
// must hear of (prompt=none without a session); nil when the request
// cannot be answered any more.
func (s *Service) OIDCAnswerError(ctx context.Context, projectID, id string) *OIDCErrorTarget {
	var out *OIDCErrorTarget
	_ = s.db.View(ctx, func(tx store.Tx) error {
		r, err := s.liveAuthRequest(tx, projectID, id)
		if err == nil {
			out = &OIDCErrorTarget{r: oidcAuthRequest{r}}
		}
		return nil
	})
	return out
}

// OIDCErrorTarget is an authorization request an error is redirected
// to (op.ErrAuthRequest).
type OIDCErrorTarget struct{ r oidcAuthRequest }

// GetRedirectURI returns the client's redirect URI.
func (t *OIDCErrorTarget) GetRedirectURI() string { return t.r.GetRedirectURI() }

// GetResponseType returns the request's response type.
func (t *OIDCErrorTarget) GetResponseType() oidc.ResponseType { return t.r.GetResponseType() }

// GetState returns the client's state.
func (t *OIDCErrorTarget) GetState() string { return t.r.GetState() }

// GetResponseMode returns the request's response mode.
func (t *OIDCErrorTarget) GetResponseMode() oidc.ResponseMode { return t.r.GetResponseMode() }

// mustSignInAgain reports whether request r asks for a new sign-in
// rather than session sess of user u: prompt login or select_account,
// max_age passed since the session's last proof (op makes prompt=login
// a max_age of 0), an id_token_hint or a login_hint naming someone
// else.
func mustSignInAgain(r *store.OIDCAuthRequest, sess *store.Session, u *store.User, now time.Time) bool {
	if slices.Contains(r.Prompt, oidc.PromptLogin) || slices.Contains(r.Prompt, oidc.PromptSelectAccount) {
		return true
	}
	if r.MaxAge != nil && now.Sub(lastProof(sess.Proofs)) > time.Duration(*r.MaxAge)*time.Second {
		return true
	}
	if r.MaxAge != nil && *r.MaxAge == 0 {
		return true
	}
	if r.HintUserID != "" && r.HintUserID != sess.UserID {
		return true
	}
	if hint := strings.ToLower(strings.TrimSpace(r.LoginHint)); hint != "" && strings.Contains(hint, "@") && hint != u.Email {
		return true
	}
	return false
}

// lastProof returns when the session was last proven (auth_time).
func lastProof(proofs []store.Proof) time.Time {
	var t time.Time
	for _, p := range proofs {
		if p.At.After(t) {
			t = p.At
		}
	}
	return t
}

// secondFactorProven reports whether proofs hold a second factor (TOTP
// or SMS) beside another proof.
func secondFactorProven(proofs []store.Proof) bool {
	if len(proofs) < 2 {
		return false
	}
	for _, p := range proofs {
		switch p.Method {
		case amrTOTP, amrSMS, amrMFA:
			return true
		}
	}
	return false
}

// oidcAMR maps a session's proofs to RFC 8176 amr values, each once in
// the order first proven: codes (email, link, TOTP, SMS, backup code)
// are otp; a passkey is swk when it is a synced one (backup eligible:
// its key may leave the device, to the platform's cloud) and hwk when
// it is bound to its authenticator (a security key, a device-bound
// platform passkey); a provider or an external method is fed; mfa joins
// them once a second factor is proven.
func oidcAMR(proofs []store.Proof) []string {
	var out []string
	add := func(v string) {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	for _, p := range proofs {
		switch {
		case p.Method == amrPasskey && p.Synced:
			add("swk")
		case p.Method == amrPasskey:
			add("hwk")
		case p.Method == amrExternal || strings.HasPrefix(p.Method, "oauth:"):
			add("fed")
		default:
			add("otp")
		}
	}
	if secondFactorProven(proofs) {
		add("mfa")
	}
	return out
}

// signOIDC signs claims with k as a JWS of type typ (at+jwt for access
// tokens).
func signOIDC(k *OIDCSigningKey, typ string, claims any) (string, error) {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(k.Alg),
		Key: &jose.JSONWebKey{Key: k.Private, KeyID: k.ID}}, (&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return jws.CompactSerialize()
}

// oidcFormDomain is the keyed-hash domain of the hosted pages' CSRF
// tokens.
const oidcFormDomain = "oidc-form"

// OIDCFormToken returns the CSRF token of the hosted pages' forms for
// request id in the browser whose CSRF cookie holds browser: a keyed
// hash of both, so that a form works only in the browser that got it,
// and only for its request.
func (s *Service) OIDCFormToken(browser, id string) string {
	h := s.keys.HashString(oidcFormDomain, browser+"\x00"+id)
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// OIDCFormTokenValid reports whether token is the CSRF token of request
// id for browser (constant-time compare); never without a browser
// cookie.
func (s *Service) OIDCFormTokenValid(browser, id, token string) bool {
	if browser == "" || token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(s.OIDCFormToken(browser, id)), []byte(token)) == 1
}
