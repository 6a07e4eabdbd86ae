package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"latchkey/store"
)

// ChallengeLifetime is how long a WebAuthn ceremony may take: its
// challenge is refused after that, and go-webauthn enforces the same
// timeout on its session data.
const ChallengeLifetime = 5 * time.Minute

// Challenge kinds.
const (
	challengeRegister = "register"
	challengeLogin    = "login"
)

// relyingParty returns the project's WebAuthn relying party: RPID(p), the
// project's name, and its allowed origins (or the base URL's origin when
// it has none). A relying party id that is an IP address cannot hold
// passkeys (browsers and go-webauthn refuse it): 400 VALIDATION_ERROR
// naming the fix.
func (s *Service) relyingParty(p *store.Project) (*webauthn.WebAuthn, error) {
	rpID, origins := s.RPID(p), s.rpOrigins(p)
	if _, err := netip.ParseAddr(rpID); err == nil || rpID == "" {
		return nil, Invalid("Passkeys need a domain name as relying party id, not %q: set the project's rpId or allowedOrigins.", rpID)
	}
	timeout := webauthn.TimeoutConfig{Enforce: true, Timeout: ChallengeLifetime, TimeoutUVD: ChallengeLifetime}
	rp, err := webauthn.New(&webauthn.Config{
		RPID: rpID, RPDisplayName: p.Name, RPOrigins: origins,
		Timeouts: webauthn.TimeoutsConfig{Login: timeout, Registration: timeout},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.VerificationPreferred,
		},
		// Browsers and password managers add client extension outputs
		// nobody asked for; WebAuthn section 7.1, step 14 lets the relying
		// party ignore them, and none is trusted for anything here.
		ExtensionsUnsolicitedOutputPolicy: protocol.UnsolicitedOutputPolicyIgnore,
	})
	if err != nil {
		return nil, internal(err)
	}
	return rp, nil
}

// rpOrigins returns the origins a ceremony's clientData may name: the
// project's allowed origins, or the base URL's origin. When the rpId is
// "localhost" standing in for a loopback address (see RPID), each
// loopback origin's localhost twin is accepted too, as that is the
// address a browser can use.
func (s *Service) rpOrigins(p *store.Project) []string {
	origins := append([]string(nil), p.AllowedOrigins...)
	if len(origins) == 0 {
		origins = []string{s.baseOrigin()}
	}
	if s.RPID(p) != "localhost" {
		return origins
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || !isLoopbackIP(u.Hostname()) {
			continue
		}
		twin := u.Scheme + "://localhost"
		if port := u.Port(); port != "" {
			twin += ":" + port
		}
		if !contains(origins, twin) {
			origins = append(origins, twin)
		}
	}
	return origins
}

func (s *Service) baseOrigin() string {
	u, err := url.Parse(s.baseURL)
	if err != nil {
		return s.baseURL
	}
	o, _ := canonicalOrigin(u)
	return o
}

func isIP(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

func isLoopbackIP(host string) bool {
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// waUser adapts a user and their credentials to webauthn.User. The
// WebAuthn user handle is the user id's bytes.
type waUser struct {
	id, name string
	creds    []webauthn.Credential
}

func (u *waUser) WebAuthnID() []byte                         { return []byte(u.id) }
func (u *waUser) WebAuthnName() string                       { return u.name }
func (u *waUser) WebAuthnDisplayName() string                { return u.name }
func (u *waUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// loadWAUser returns u with its stored credentials.
func loadWAUser(tx store.Tx, u *store.User) (*waUser, error) {
	pks, err := tx.UserPasskeys(u.ProjectID, u.ID)
	if err != nil {
		return nil, err
	}
	wu := &waUser{id: u.ID, name: u.Email}
	for _, pk := range pks {
		var c webauthn.Credential
		if err := json.Unmarshal(pk.Credential, &c); err != nil {
			return nil, err
		}
		wu.creds = append(wu.creds, c)
	}
	return wu, nil
}

// Ceremony is a started WebAuthn ceremony: the id to send back with the
// browser's answer, and the options for navigator.credentials.
type Ceremony struct {
	ChallengeID string
	// Options is go-webauthn's PublicKeyCredentialCreationOptions or
	// PublicKeyCredentialRequestOptions JSON, holding the same object
	// again under "publicKey" so either reading of it works.
	Options json.RawMessage
}

// ceremonyOptions returns opts as JSON with a copy of itself under
// "publicKey".
func ceremonyOptions(opts any) (json.RawMessage, error) {
	raw, err := json.Marshal(opts)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	m["publicKey"] = raw
	return json.Marshal(m)
}

// challengeSession is what a challenge's Session holds: go-webauthn's
// session data and, for a passkey added from a session, that session's
// id (a challenge is finished by the session that started it only).
type challengeSession struct {
	webauthn.SessionData
	BoundSession string `json:"latchkeySession,omitempty"`
}

// putChallenge stores ch (project, kind and owner set by the caller) with
// a fresh random id, a 5-minute expiry (from when it started: ch's
// ExpiresAt minus ChallengeLifetime, when the caller set it) and
// go-webauthn's session data bound to the session bound ("" for none),
// and returns the ceremony for opts.
func (s *Service) putChallenge(ctx context.Context, ch *store.Challenge, sess *webauthn.SessionData, bound string, opts any) (*Ceremony, error) {
	ch.ID = uuid.NewString() // random: the id is the only handle on it
	if ch.ExpiresAt.IsZero() {
		ch.ExpiresAt = s.now().Add(ChallengeLifetime).UTC()
	}
	cs := challengeSession{BoundSession: bound}
	if sess != nil {
		cs.SessionData = *sess
	}
	var err error
	if ch.Session, err = json.Marshal(cs); err != nil {
		return nil, internal(err)
	}
	cer := &Ceremony{ChallengeID: ch.ID}
	if cer.Options, err = ceremonyOptions(opts); err != nil {
		return nil, internal(err)
	}
	if err := s.db.Update(ctx, func(tx store.Tx) error { return tx.PutChallenge(ch) }); err != nil {
		return nil, internal(err)
	}
	return cer, nil
}

// takeChallenge consumes challenge id of kind inside tx and returns its
// session data. A challenge of another project or kind, or one belongs
// refuses (given the session it is bound to, "" for none), is left
// alone; an expired one is deleted. All of these, and an unknown id,
// are 400 CHALLENGE_EXPIRED. A challenge is consumed before its
// ceremony is verified, so a failed verify cannot be retried.
func (s *Service) takeChallenge(tx store.Tx, p *store.Project, id, kind string, belongs func(ch *store.Challenge, bound string) bool) (*store.Challenge, *webauthn.SessionData, error) {
	ch, err := tx.Challenge(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, ErrChallengeExpired
	} else if err != nil {
		return nil, nil, err
	}
	if ch.ProjectID != p.ID || ch.Kind != kind {
		return nil, nil, ErrChallengeExpired
	}
	var sess challengeSession
	if err := json.Unmarshal(ch.Session, &sess); err != nil {
		return nil, nil, err
	}
	if belongs != nil && !belongs(ch, sess.BoundSession) {
		return nil, nil, ErrChallengeExpired
	}
	if err := tx.DeleteChallenge(id); err != nil {
		return nil, nil, err
	}
	if !s.now().Before(ch.ExpiresAt) {
		return nil, nil, ErrChallengeExpired
	}
	return ch, &sess.SessionData, nil
}

// checkFinish validates a verify call's body before anything is
// consumed: a challengeId and a credential that is a JSON object, else
// 400 VALIDATION_ERROR.
func checkFinish(challengeID string, credential json.RawMessage) error {
	if challengeID == "" {
		return Invalid("challengeId is required.")
	}
	if len(credential) == 0 || credential[0] != '{' {
		return ErrInvalidCredential.With("credential must be the browser's PublicKeyCredential JSON object.")
	}
	return nil
}

// BeginPasskeyRegistration starts adding a passkey. With pr (a session)
// it is for that user, excluding the credentials they already have,
// needs recent authentication (requireRecentAuth; else 403
// STEP_UP_REQUIRED), and only that session may finish it; otherwise it is a sign-up for rawEmail, which must
// not have an account (409 USER_EXISTS). Bad email: 400
// VALIDATION_ERROR; a denied IP: 403 RISK_BLOCKED.
func (s *Service) BeginPasskeyRegistration(ctx context.Context, p *store.Project, pr *Principal, rawEmail string, m Meta) (*Ceremony, error) {
	// One time for the check and the challenge: the finish checks the
	// session again as of the challenge's start.
	now := s.now().UTC()
	ch := &store.Challenge{ProjectID: p.ID, Kind: challengeRegister, ExpiresAt: now.Add(ChallengeLifetime)}
	a := s.attempt(ctx, p.ID, "passkey", "register_start", m)
	if pr == nil {
		if err := s.checkRisk(p, m); err != nil {
			return nil, a.reject(err)
		}
	}
	rp, err := s.relyingParty(p)
	if err != nil {
		return nil, err
	}
	var wu *waUser
	err = s.db.View(ctx, func(tx store.Tx) error {
		if pr != nil {
			u, err := s.sessionUserTx(tx, pr)
			if err != nil {
				return err
			}
			ch.UserID = u.ID
			if _, err := requireRecentAuth(tx, pr, now); err != nil {
				a.of(u)
				return err
			}
			wu, err = loadWAUser(tx, u)
			return err
		}
		email, err := NormalizeEmail(rawEmail)
		if err != nil {
			return err
		}
		ch.Email = email
		if _, err := tx.UserByEmail(p.ID, email); err == nil {
			return ErrUserExists
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		ch.UserID = newID()
		wu = &waUser{id: ch.UserID, name: email}
		return nil
	})
	if errors.Is(err, ErrUserExists) {
		a.email = ch.Email
		return nil, a.reject(err)
	} else if errors.Is(err, ErrStepUpRequired) {
		return nil, a.reject(err)
	} else if err != nil {
		return nil, internal(err)
	}
	exclude := make([]protocol.CredentialDescriptor, 0, len(wu.creds))
	for _, c := range wu.creds {
		exclude = append(exclude, c.Descriptor())
	}
	creation, sess, err := rp.BeginRegistration(wu, webauthn.WithExclusions(exclude),
		webauthn.WithExtensions(webauthn.WithExtensionCredProps()))
	if err != nil {
		return nil, internal(err)
	}
	bound := ""
	if pr != nil {
		bound = pr.SessionID
	}
	return s.putChallenge(ctx, ch, sess, bound, creation.Response)
}

// PasskeyRegistration is the outcome of a registration: the new
// credential's id and, for a sign-up, the login.
type PasskeyRegistration struct {
	CredentialID string
	Login        *Login
}

// FinishPasskeyRegistration verifies the browser's credential for a
// challenge and stores the passkey, emitting passkey.registered. A
// sign-up also creates the user (user.registered) and signs them in
// (session.created); such a user's emailVerified is false. A passkey
// added from a session needs the recent authentication the start
// needed, checked again now (requireRecentAuth as of the start; the
// account may have got a factor since), proves passkey on that session,
// and is the account's first factor or another (factorAdded); a
// sign-up's session is proven by passkey. Errors: 400
// VALIDATION_ERROR for a malformed body (nothing consumed); 400
// CHALLENGE_EXPIRED for an unknown, used, expired
// or foreign challenge (another user's, or started by another session);
// 403 STEP_UP_REQUIRED (the challenge consumed); 400 INVALID_CREDENTIAL
// when the credential does not verify or is already registered; 409
// USER_EXISTS when the email got an account meanwhile. Consuming the challenge, the failure's event or
// the new passkey, user, session and events are one transaction.
func (s *Service) FinishPasskeyRegistration(ctx context.Context, p *store.Project, pr *Principal, challengeID string, credential json.RawMessage, m Meta) (*PasskeyRegistration, error) {
	if err := checkFinish(challengeID, credential); err != nil {
		return nil, err
	}
	signup := pr == nil
	a := s.attempt(ctx, p.ID, "passkey", "register", m)
	if signup {
		// The sign-up names no account before its challenge is read: it
		// is counted per end-user IP only (none without one).
		if err := a.reserveRisk(p, subject{}); err != nil {
			return nil, a.reject(err)
		}
		defer a.release()
	}
	rp, err := s.relyingParty(p)
	if err != nil {
		return nil, err
	}
	parsed, parseErr := protocol.ParseCredentialCreationResponseBytes(credential)
	belongs := func(ch *store.Challenge, bound string) bool {
		if signup {
			return ch.Email != ""
		}
		return ch.Email == "" && ch.UserID == pr.UserID && bound == pr.SessionID
	}
	var out PasskeyRegistration
	err = a.update(func(tx store.Tx) error {
		out = PasskeyRegistration{}
		ch, sess, err := s.takeChallenge(tx, p, challengeID, challengeRegister, belongs)
		if isAuthError(err) {
			return a.fail(tx, err)
		} else if err != nil {
			return err
		}
		now := s.now().UTC()
		var u *store.User
		var wu *waUser
		var before store.Enrolled
		if signup {
			a.email = ch.Email
			if _, err := tx.UserByEmail(p.ID, ch.Email); err == nil {
				return a.fail(tx, ErrUserExists)
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			// Nobody proved the address, nor vouched for it: the
			// account is unverified until its user confirms it, and
			// a sign-in proving the address replaces it until then
			// (docs/security.md).
			u = &store.User{ID: ch.UserID, ProjectID: p.ID, Email: ch.Email, CreatedAt: now, UpdatedAt: now,
				EmailVerified: boolPtr(false), Vouched: boolPtr(false)}
			wu = &waUser{id: u.ID, name: u.Email}
		} else {
			if u, err = s.sessionUserTx(tx, pr); err != nil {
				return err
			}
			a.userID, a.email = u.ID, u.Email
			if before, err = requireRecentAuth(tx, pr, ch.ExpiresAt.Add(-ChallengeLifetime)); isAuthError(err) {
				return a.fail(tx, err)
			} else if err != nil {
				return err
			}
			if wu, err = loadWAUser(tx, u); err != nil {
				return err
			}
		}
		if parseErr != nil {
			return a.fail(tx, ErrInvalidCredential.Because(parseErr))
		}
		cred, err := rp.CreateCredential(wu, *sess, parsed)
		if err != nil {
			r := parsed.Response
			return a.fail(tx, s.ceremonyRefusal(p, sess, "register", r.CollectedClientData.Origin, r.AttestationObject.AuthData.RPIDHash, err))
		}
		credID := base64.RawURLEncoding.EncodeToString(cred.ID)
		if _, err := tx.Passkey(p.ID, credID); err == nil {
			return a.fail(tx, ErrInvalidCredential.With("This passkey is already registered."))
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if signup {
			if err := tx.PutUser(u); err != nil {
				return err
			}
			if err := s.emit(tx, p.ID, "user.registered", map[string]string{"email": u.Email, "user_id": u.ID}); err != nil {
				return err
			}
		}
		raw, err := json.Marshal(cred)
		if err != nil {
			return err
		}
		if err := tx.PutPasskey(&store.Passkey{ID: credID, UserID: u.ID, ProjectID: p.ID, Credential: raw, CreatedAt: now}); err != nil {
			return err
		}
		if err := s.emit(tx, p.ID, "passkey.registered", map[string]string{"user_id": u.ID, "credential_id": credID}); err != nil {
			return err
		}
		out.CredentialID = credID
		if signup {
			if out.Login, err = s.startLogin(tx, p, u, "passkey", a.m); err != nil {
				return err
			}
			out.Login.IsNewUser = true
		} else {
			if err := s.markProof(tx, pr.SessionID, amrPasskey, now); err != nil {
				return err
			}
			if err := factorAdded(tx, u.ID, before, amrPasskey); err != nil {
				return err
			}
		}
		a.userID, a.email = u.ID, u.Email
		return a.ok(tx)
	})
	if err := a.result(err); err != nil {
		return nil, err
	}
	if out.Login != nil {
		if out.Login, err = s.finish(out.Login); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// BeginPasskeyLogin starts a sign-in: for rawEmail's passkeys, or, with
// no email, for a discoverable credential. Errors: 400 VALIDATION_ERROR
// for a bad email; 404 USER_NOT_FOUND when the email has no account or no
// passkey (an enrolment lookup: docs/choices.md, "Passkeys"); 403
// USER_DISABLED; 403 RISK_BLOCKED.
func (s *Service) BeginPasskeyLogin(ctx context.Context, p *store.Project, rawEmail string, m Meta) (*Ceremony, error) {
	email, _ := NormalizeEmail(rawEmail) // a bad address fails in passkeyUser
	a := s.attempt(ctx, p.ID, "passkey", "login_start", m)
	if err := a.reserveRisk(p, subject{email: email}); err != nil {
		return nil, a.reject(err)
	}
	defer a.release()
	rp, err := s.relyingParty(p)
	if err != nil {
		return nil, err
	}
	var (
		assertion *protocol.CredentialAssertion
		sess      *webauthn.SessionData
	)
	if rawEmail == "" {
		assertion, sess, err = rp.BeginDiscoverableLogin()
	} else {
		var wu *waUser
		if wu, err = s.passkeyUser(ctx, a, p, rawEmail); err != nil {
			return nil, err
		}
		assertion, sess, err = rp.BeginLogin(wu)
	}
	if err != nil {
		return nil, internal(err)
	}
	return s.putChallenge(ctx, &store.Challenge{ProjectID: p.ID, Kind: challengeLogin}, sess, "", assertion.Response)
}

// passkeyUser returns the user with rawEmail and their passkeys for a
// sign-in: 404 USER_NOT_FOUND when there is no account or no passkey,
// 403 USER_DISABLED for a disabled account, both recorded as a's.
func (s *Service) passkeyUser(ctx context.Context, a *attempt, p *store.Project, rawEmail string) (*waUser, error) {
	email, err := NormalizeEmail(rawEmail)
	if err != nil {
		return nil, err
	}
	var u *store.User
	var wu *waUser
	err = s.db.View(ctx, func(tx store.Tx) error {
		u, err = tx.UserByEmail(p.ID, email)
		if errors.Is(err, store.ErrNotFound) {
			u = nil
			return nil
		} else if err != nil {
			return err
		}
		wu, err = loadWAUser(tx, u)
		return err
	})
	switch {
	case err != nil:
		return nil, internal(err)
	case u == nil || len(wu.creds) == 0:
		a.email = email
		return nil, a.reject(ErrNoPasskey)
	case u.Disabled:
		a.userID, a.email = u.ID, email
		return nil, a.reject(ErrUserDisabled)
	}
	return wu, nil
}

// FinishPasskeyLogin verifies an assertion and signs its user in. Errors:
// 400 VALIDATION_ERROR without a challengeId and 400 INVALID_CREDENTIAL
// when credential is not a JSON object (nothing consumed); 400
// CHALLENGE_EXPIRED; 400 INVALID_CREDENTIAL when the assertion does not
// verify (signature, origin, rpId, challenge, flags) or its sign counter
// did not advance; 401 INVALID_CREDENTIAL (generic) when the credential
// or its user is unknown, is not the started email's, or (discoverable)
// the user handle is not the credential's user; 403 USER_DISABLED
// for a valid assertion of a disabled user; 403 RISK_BLOCKED; and, for any
// failure inside the service, passkey sign-in's catch-all 401
// INTERNAL_ERROR. Consuming the challenge, the failure's event or the
// updated counter, session and events are one transaction.
func (s *Service) FinishPasskeyLogin(ctx context.Context, p *store.Project, challengeID string, credential json.RawMessage, m Meta) (*Login, error) {
	if err := checkFinish(challengeID, credential); err != nil {
		return nil, err
	}
	parsed, parseErr := protocol.ParseCredentialRequestResponseBytes(credential)
	var who subject
	if parseErr == nil {
		who.credential = base64.RawURLEncoding.EncodeToString(parsed.RawID)
	}
	a := s.attempt(ctx, p.ID, "passkey", "login", m)
	if err := a.reserveRisk(p, who); err != nil {
		if !errors.Is(err, ErrRiskBlocked) {
			// The shared store's velocity count failed: the catch-all,
			// as for any failure inside the sign-in (below).
			s.log.Error("passkey login", "err", err)
			a.userID, a.email = "", ""
			err = ErrPasskeyLoginInternal.Because(err)
		}
		return nil, a.reject(err)
	}
	defer a.release()
	rp, err := s.relyingParty(p)
	if err != nil {
		return nil, err
	}
	var login *Login
	err = a.update(func(tx store.Tx) error {
		login = nil
		_, sess, err := s.takeChallenge(tx, p, challengeID, challengeLogin, nil)
		if isAuthError(err) {
			return a.fail(tx, err)
		} else if err != nil {
			return err
		}
		if parseErr != nil {
			return a.fail(tx, ErrInvalidCredential.Because(parseErr))
		}
		pk, err := tx.Passkey(p.ID, base64.RawURLEncoding.EncodeToString(parsed.RawID))
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, ErrUnknownCredential)
		} else if err != nil {
			return err
		}
		u, err := tx.User(pk.UserID)
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, ErrUnknownCredential)
		} else if err != nil {
			return err
		}
		a.userID, a.email = u.ID, u.Email
		if len(sess.UserID) > 0 && string(sess.UserID) != u.ID {
			return a.fail(tx, ErrUnknownCredential) // another user's passkey
		}
		if len(sess.UserID) == 0 && string(parsed.Response.UserHandle) != u.ID {
			return a.fail(tx, ErrUnknownCredential) // the handle names no user, or another
		}
		wu, err := loadWAUser(tx, u)
		if err != nil {
			return err
		}
		var cred *webauthn.Credential
		if len(sess.UserID) > 0 {
			cred, err = rp.ValidateLogin(wu, *sess, parsed)
		} else {
			cred, err = rp.ValidateDiscoverableLogin(func(_, userHandle []byte) (webauthn.User, error) {
				if string(userHandle) != u.ID {
					return nil, errors.New("user handle is not the credential's user")
				}
				return wu, nil
			}, *sess, parsed)
		}
		if err != nil {
			r := parsed.Response
			return a.fail(tx, s.ceremonyRefusal(p, sess, "login", r.CollectedClientData.Origin, r.AuthenticatorData.RPIDHash, err))
		}
		if cred.Authenticator.CloneWarning {
			return a.fail(tx, ErrInvalidCredential.With("The passkey's sign counter did not advance; it may be cloned."))
		}
		if u.Disabled {
			return a.fail(tx, ErrUserDisabled)
		}
		raw, err := json.Marshal(cred)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		pk.Credential, pk.LastUsedAt = raw, &now
		if err := tx.PutPasskey(pk); err != nil {
			return err
		}
		if login, err = s.startLogin(tx, p, u, "passkey", a.m); err != nil {
			return err
		}
		return a.ok(tx)
	})
	if err == nil && a.failure != nil {
		return nil, a.failure
	}
	if err == nil {
		login, err = s.finish(login)
	}
	if err != nil {
		e := ErrPasskeyLoginInternal.Because(err)
		s.log.Error("passkey login", "err", err)
		a.userID, a.email = "", "" // the catch-all names no user
		return nil, a.reject(e)
	}
	return login, nil
}

// ceremonyRefusal is the 400 INVALID_CREDENTIAL for a ceremony that
// go-webauthn refused with err. When the browser's origin is not one the
// project allows, or the authenticator worked for another relying party
// id, the error says so (these are set-up mistakes, not attacks one must
// keep quiet about) and a warning is logged with the project, the origin
// and what was expected; otherwise the generic text stands, with err as
// the cause.
func (s *Service) ceremonyRefusal(p *store.Project, sess *webauthn.SessionData, ceremony, origin string, rpIDHash []byte, err error) error {
	origin = printable(origin, 200)
	origins := sess.GetOrigins(s.rpOrigins(p))
	if !protocol.IsOriginInHaystack(origin, origins) {
		s.log.Warn("passkey refused: origin not allowed", "project", p.ID, "ceremony", ceremony, "origin", origin, "allowed_origins", origins)
		what := "The passkey was created for origin %s, which is not an allowed origin of this project."
		if ceremony == "login" {
			what = "The passkey sign-in came from origin %s, which is not an allowed origin of this project."
		}
		return ErrInvalidCredential.With(fmt.Sprintf(what, origin)).Because(err)
	}
	rpID := sess.GetRelyingPartyID(s.RPID(p))
	if want := sha256.Sum256([]byte(rpID)); len(rpIDHash) > 0 && !bytes.Equal(rpIDHash, want[:]) {
		s.log.Warn("passkey refused: relying party id does not match", "project", p.ID, "ceremony", ceremony, "origin", origin, "rp_id", rpID)
		return ErrInvalidCredential.With(fmt.Sprintf("The passkey is for another relying party id than this project's (%s): set the project's rpId to the domain of the page at %s, or open the page on %s.", rpID, origin, rpID)).Because(err)
	}
	return ErrInvalidCredential.Because(err)
}

// printable returns s without control characters, cut to at most n
// bytes, for an error text or a log line.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// isAuthError reports whether err is one of the taxonomy's errors (as
// opposed to a store failure).
func isAuthError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// PasskeyView is a passkey as the management calls list it.
type PasskeyView struct {
	CredentialID string `json:"credentialId"`
	CreatedAt    string `json:"createdAt"`
}

// passkeyTime is the decided createdAt form: UTC, no zone, microseconds.
const passkeyTime = "2006-01-02T15:04:05.000000"

// Passkeys lists the passkeys of projectID's user userID, oldest first
// (an empty list when there are none).
func (s *Service) Passkeys(ctx context.Context, projectID, userID string) ([]PasskeyView, error) {
	out := []PasskeyView{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		pks, err := tx.UserPasskeys(projectID, userID)
		for _, pk := range pks {
			out = append(out, PasskeyView{CredentialID: pk.ID, CreatedAt: pk.CreatedAt.UTC().Format(passkeyTime)})
		}
		return err
	})
	return out, internal(err)
}

// UserIDByExternal resolves a project's user by external id: 400
// VALIDATION_ERROR when ext is empty, 404 USER_NOT_FOUND when no user has it.
func (s *Service) UserIDByExternal(ctx context.Context, projectID, ext string) (string, error) {
	if ext == "" {
		return "", Invalid("externalUserId is required.")
	}
	var id string
	err := s.db.View(ctx, func(tx store.Tx) error {
		u, err := tx.UserByExternalID(projectID, ext)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		id = u.ID
		return nil
	})
	return id, internal(err)
}

// DeletePasskey removes one of a user's passkeys, for the app (DELETE
// /passkeys/by-external/:credentialId with an API key), and emits
// passkey.removed in the same transaction; 404 PASSKEY_NOT_FOUND when
// the user has no such credential in the project (another user's or
// project's credential is "not found" too). The app's backend vouches
// for the call: there is no session to check (DeleteSessionPasskey is
// the user's own call).
func (s *Service) DeletePasskey(ctx context.Context, projectID, userID, credentialID string, m Meta) error {
	return s.deletePasskey(ctx, projectID, userID, credentialID, nil, m)
}

// DeleteSessionPasskey removes one of the session user's passkeys
// (DELETE /passkeys/:credentialId), as DeletePasskey does. It may take
// away what guards the account (then any fresh sign-in would count as
// recent authentication), so it needs recent authentication
// (requireRecentAuth), checked before the passkey is looked up: else
// 403 STEP_UP_REQUIRED, recorded, nothing removed. 401 INVALID_SESSION
// when the session is gone.
func (s *Service) DeleteSessionPasskey(ctx context.Context, pr *Principal, credentialID string, m Meta) error {
	return s.deletePasskey(ctx, pr.ProjectID, pr.UserID, credentialID, pr, m)
}

// deletePasskey removes userID's passkey credentialID in projectID (see
// DeletePasskey), checking the session pr first when it is not nil
// (DeleteSessionPasskey). A removal changes the account's factors: a
// pending TOTP enrolment is dropped.
func (s *Service) deletePasskey(ctx context.Context, projectID, userID, credentialID string, pr *Principal, m Meta) error {
	a := s.attempt(ctx, projectID, "passkey", "remove", m)
	a.userID = userID
	err := a.update(func(tx store.Tx) error {
		if pr != nil {
			u, err := s.sessionUserTx(tx, pr)
			if err != nil {
				return err
			}
			a.of(u)
			if _, err := requireRecentAuth(tx, pr, s.now().UTC()); isAuthError(err) {
				return a.fail(tx, err)
			} else if err != nil {
				return err
			}
		}
		pk, err := tx.Passkey(projectID, credentialID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && pk.UserID != userID) {
			return ErrPasskeyNotFound
		} else if err != nil {
			return err
		}
		if err := tx.DeletePasskey(pk); err != nil {
			return err
		}
		if err := s.emit(tx, projectID, "passkey.removed", map[string]string{"user_id": userID, "credential_id": credentialID}); err != nil {
			return err
		}
		if err := dropPendingTOTP(tx, userID); err != nil {
			return err
		}
		if u, err := tx.User(userID); err == nil {
			a.email = u.Email
		}
		return a.ok(tx)
	})
	return a.result(err)
}
