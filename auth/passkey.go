package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"latchkey/store"
)

// ChallengeLifetime is how long a WebAuthn ceremony may take.
const ChallengeLifetime = 5 * time.Minute

// relyingParty returns the project's WebAuthn relying party: rpId, the
// project's name, and its allowed origins (or the base URL's origin).
func (s *Service) relyingParty(p *store.Project) (*webauthn.WebAuthn, error) {
	origins := p.AllowedOrigins
	rpID := s.RPID(p)
	if len(origins) == 0 {
		origins = []string{s.baseOrigin()}
	}
	timeout := webauthn.TimeoutConfig{Enforce: true, Timeout: ChallengeLifetime, TimeoutUVD: ChallengeLifetime}
	return webauthn.New(&webauthn.Config{
		RPID: rpID, RPDisplayName: p.Name, RPOrigins: origins,
		Timeouts: webauthn.TimeoutsConfig{Login: timeout, Registration: timeout},
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.VerificationPreferred,
		},
	})
}

func (s *Service) baseOrigin() string {
	u, err := url.Parse(s.baseURL)
	if err != nil {
		return s.baseURL
	}
	o, _ := canonicalOrigin(u)
	return o
}

// waUser adapts a user and their credentials to webauthn.User.
type waUser struct {
	id, name string
	creds    []webauthn.Credential
}

func (u *waUser) WebAuthnID() []byte                         { return []byte(u.id) }
func (u *waUser) WebAuthnName() string                       { return u.name }
func (u *waUser) WebAuthnDisplayName() string                { return u.name }
func (u *waUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// loadWAUser returns u with its stored credentials.
func loadWAUser(tx *store.Tx, u *store.User) (*waUser, []*store.Passkey, error) {
	pks, err := tx.UserPasskeys(u.ProjectID, u.ID)
	if err != nil {
		return nil, nil, err
	}
	wu := &waUser{id: u.ID, name: u.Email}
	for _, pk := range pks {
		var c webauthn.Credential
		if err := json.Unmarshal(pk.Credential, &c); err != nil {
			return nil, nil, err
		}
		wu.creds = append(wu.creds, c)
	}
	return wu, pks, nil
}

// Ceremony is a started WebAuthn ceremony: the id to send back and the
// options for navigator.credentials.
type Ceremony struct {
	ChallengeID string
	Options     any
}

// BeginPasskeyRegistration starts adding a passkey. With pr (a session)
// it is for that user; otherwise it is a sign-up for email, which must
// not have an account (409 USER_EXISTS).
func (s *Service) BeginPasskeyRegistration(p *store.Project, pr *Principal, rawEmail string, m Meta) (*Ceremony, error) {
	rp, err := s.relyingParty(p)
	if err != nil {
		return nil, internal(err)
	}
	ch := &store.Challenge{ID: uuid.NewString(), ProjectID: p.ID, Kind: "register", ExpiresAt: s.now().Add(ChallengeLifetime).UTC()}
	var wu *waUser
	err = s.db.View(func(tx *store.Tx) error {
		if pr != nil {
			u, err := s.sessionUserTx(tx, pr)
			if err != nil {
				return err
			}
			wu, _, err = loadWAUser(tx, u)
			ch.UserID = u.ID
			return err
		}
		email, err := NormalizeEmail(rawEmail)
		if err != nil {
			return err
		}
		if _, err := tx.UserByEmail(p.ID, email); err == nil {
			return ErrUserExists
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		ch.UserID, ch.Email = newID(), email
		wu = &waUser{id: ch.UserID, name: email}
		return nil
	})
	if err != nil {
		return nil, s.recordOnly(p.ID, "", ch.Email, "passkey", "register_start", err, m)
	}
	var exclude []protocol.CredentialDescriptor
	for _, c := range wu.creds {
		exclude = append(exclude, c.Descriptor())
	}
	creation, sess, err := rp.BeginRegistration(wu, webauthn.WithExclusions(exclude),
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementPreferred))
	if err != nil {
		return nil, internal(err)
	}
	if ch.Session, err = json.Marshal(sess); err != nil {
		return nil, internal(err)
	}
	if err := s.db.Update(func(tx *store.Tx) error { return tx.PutChallenge(ch) }); err != nil {
		return nil, internal(err)
	}
	return &Ceremony{ChallengeID: ch.ID, Options: creation}, nil
}

// takeChallenge loads and deletes a challenge of kind for project: every
// challenge is used once, whatever the outcome. Unknown, used, expired or
// foreign challenges are 400 CHALLENGE_EXPIRED.
func (s *Service) takeChallenge(p *store.Project, id, kind string) (*store.Challenge, *webauthn.SessionData, error) {
	var ch *store.Challenge
	err := s.db.Update(func(tx *store.Tx) error {
		var err error
		ch, err = tx.Challenge(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrChallengeExpired
		} else if err != nil {
			return err
		}
		return tx.DeleteChallenge(id)
	})
	if err != nil {
		return nil, nil, internal(err)
	}
	if ch.ProjectID != p.ID || ch.Kind != kind || !s.now().Before(ch.ExpiresAt) {
		return nil, nil, ErrChallengeExpired
	}
	var sess webauthn.SessionData
	if err := json.Unmarshal(ch.Session, &sess); err != nil {
		return nil, nil, internal(err)
	}
	return ch, &sess, nil
}

// PasskeyRegistration is the outcome of a registration: the new
// credential's id and, for a sign-up, the login.
type PasskeyRegistration struct {
	CredentialID string
	Login        *Login
}

// FinishPasskeyRegistration verifies the browser's credential for a
// challenge and stores the passkey (400 INVALID_CREDENTIAL when it does
// not verify). A sign-up creates the user and signs them in.
func (s *Service) FinishPasskeyRegistration(p *store.Project, pr *Principal, challengeID string, credential json.RawMessage, m Meta) (*PasskeyRegistration, error) {
	if challengeID == "" || len(credential) == 0 {
		return nil, Invalid("challengeId and credential are required.")
	}
	ch, sess, err := s.takeChallenge(p, challengeID, "register")
	if err != nil {
		return nil, s.recordOnly(p.ID, "", "", "passkey", "register", err, m)
	}
	if (pr == nil) != (ch.Email != "") || (pr != nil && pr.UserID != ch.UserID) {
		return nil, s.recordOnly(p.ID, "", "", "passkey", "register", ErrChallengeExpired, m)
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(credential)
	if err != nil {
		return nil, s.recordOnly(p.ID, ch.UserID, ch.Email, "passkey", "register", ErrInvalidCredential.Because(err), m)
	}
	rp, err := s.relyingParty(p)
	if err != nil {
		return nil, internal(err)
	}
	var out PasskeyRegistration
	var fail error
	err = s.db.Update(func(tx *store.Tx) error {
		out, fail = PasskeyRegistration{}, nil
		now := s.now().UTC()
		var u *store.User
		var wu *waUser
		var err error
		if pr != nil {
			if u, err = s.sessionUserTx(tx, pr); err != nil {
				return err
			}
			if wu, _, err = loadWAUser(tx, u); err != nil {
				return err
			}
		} else {
			if _, err := tx.UserByEmail(p.ID, ch.Email); err == nil {
				fail = ErrUserExists
				return s.record(tx, p.ID, "", ch.Email, "passkey", "register", fail, m)
			}
			wu = &waUser{id: ch.UserID, name: ch.Email}
		}
		cred, err := rp.CreateCredential(wu, *sess, parsed)
		if err != nil {
			fail = ErrInvalidCredential.Because(err)
			return s.record(tx, p.ID, ch.UserID, ch.Email, "passkey", "register", fail, m)
		}
		credID := base64.RawURLEncoding.EncodeToString(cred.ID)
		if _, err := tx.Passkey(p.ID, credID); err == nil {
			fail = ErrInvalidCredential.With("This passkey is already registered.")
			return s.record(tx, p.ID, ch.UserID, ch.Email, "passkey", "register", fail, m)
		}
		if pr == nil {
			u = &store.User{ID: ch.UserID, ProjectID: p.ID, Email: ch.Email, CreatedAt: now, UpdatedAt: now}
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
		if pr == nil {
			if out.Login, err = s.startLogin(tx, p, u, "passkey", m); err != nil {
				return err
			}
			out.Login.IsNewUser = true
		}
		return s.record(tx, p.ID, u.ID, u.Email, "passkey", "register", nil, m)
	})
	if err != nil {
		return nil, internal(err)
	}
	if fail != nil {
		return nil, fail
	}
	if out.Login != nil {
		if out.Login, err = s.finish(out.Login); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// BeginPasskeyLogin starts a sign-in: for email's credentials, or with
// none for a discoverable credential. An unknown email gets discoverable
// options, so the call does not reveal whether an account exists.
func (s *Service) BeginPasskeyLogin(p *store.Project, rawEmail string, m Meta) (*Ceremony, error) {
	if err := s.checkRisk(p, m, true); err != nil {
		return nil, s.recordOnly(p.ID, "", "", "passkey", "login_start", err, m)
	}
	rp, err := s.relyingParty(p)
	if err != nil {
		return nil, internal(err)
	}
	var wu *waUser
	if rawEmail != "" {
		email, err := NormalizeEmail(rawEmail)
		if err != nil {
			return nil, err
		}
		err = s.db.View(func(tx *store.Tx) error {
			u, err := tx.UserByEmail(p.ID, email)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			} else if err != nil {
				return err
			}
			wu, _, err = loadWAUser(tx, u)
			return err
		})
		if err != nil {
			return nil, internal(err)
		}
	}
	var assertion *protocol.CredentialAssertion
	var sess *webauthn.SessionData
	if wu != nil && len(wu.creds) > 0 {
		assertion, sess, err = rp.BeginLogin(wu)
	} else {
		assertion, sess, err = rp.BeginDiscoverableLogin()
	}
	if err != nil {
		return nil, internal(err)
	}
	ch := &store.Challenge{ID: uuid.NewString(), ProjectID: p.ID, Kind: "login", ExpiresAt: s.now().Add(ChallengeLifetime).UTC()}
	if ch.Session, err = json.Marshal(sess); err != nil {
		return nil, internal(err)
	}
	if err := s.db.Update(func(tx *store.Tx) error { return tx.PutChallenge(ch) }); err != nil {
		return nil, internal(err)
	}
	return &Ceremony{ChallengeID: ch.ID, Options: assertion}, nil
}

// FinishPasskeyLogin verifies an assertion and signs its user in. An
// unknown credential or user is 401 INVALID_CREDENTIAL (generic); a bad
// assertion or a sign counter that went backwards is 400.
func (s *Service) FinishPasskeyLogin(p *store.Project, challengeID string, credential json.RawMessage, m Meta) (*Login, error) {
	if challengeID == "" || len(credential) == 0 {
		return nil, Invalid("challengeId and credential are required.")
	}
	if err := s.checkRisk(p, m, true); err != nil {
		return nil, s.recordOnly(p.ID, "", "", "passkey", "login", err, m)
	}
	_, sess, err := s.takeChallenge(p, challengeID, "login")
	if err != nil {
		return nil, s.recordOnly(p.ID, "", "", "passkey", "login", err, m)
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(credential)
	if err != nil {
		return nil, s.recordOnly(p.ID, "", "", "passkey", "login", ErrInvalidCredential.Because(err), m)
	}
	rp, err := s.relyingParty(p)
	if err != nil {
		return nil, internal(err)
	}
	credID := base64.RawURLEncoding.EncodeToString(parsed.RawID)
	var login *Login
	var fail error
	err = s.db.Update(func(tx *store.Tx) error {
		login, fail = nil, nil
		pk, err := tx.Passkey(p.ID, credID)
		if errors.Is(err, store.ErrNotFound) {
			fail = ErrUnknownCredential
			return s.record(tx, p.ID, "", "", "passkey", "login", fail, m)
		} else if err != nil {
			return err
		}
		u, err := tx.User(pk.UserID)
		if errors.Is(err, store.ErrNotFound) {
			fail = ErrUnknownCredential
			return s.record(tx, p.ID, "", "", "passkey", "login", fail, m)
		} else if err != nil {
			return err
		}
		failWith := func(e error) error {
			fail = e
			return s.record(tx, p.ID, u.ID, u.Email, "passkey", "login", e, m)
		}
		if u.Disabled {
			return failWith(ErrUserDisabled)
		}
		wu, _, err := loadWAUser(tx, u)
		if err != nil {
			return err
		}
		var cred *webauthn.Credential
		if len(sess.UserID) > 0 {
			if string(sess.UserID) != u.ID {
				return failWith(ErrUnknownCredential)
			}
			cred, err = rp.ValidateLogin(wu, *sess, parsed)
		} else {
			cred, err = rp.ValidateDiscoverableLogin(func(rawID, userHandle []byte) (webauthn.User, error) {
				if string(userHandle) != u.ID {
					return nil, errors.New("user handle does not match the credential")
				}
				return wu, nil
			}, *sess, parsed)
		}
		if err != nil {
			return failWith(ErrInvalidCredential.Because(err))
		}
		if cred.Authenticator.CloneWarning {
			return failWith(ErrInvalidCredential.With("The passkey's sign counter went backwards; it may be cloned."))
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
		if login, err = s.startLogin(tx, p, u, "passkey", m); err != nil {
			return err
		}
		return s.record(tx, p.ID, u.ID, u.Email, "passkey", "login", nil, m)
	})
	if err != nil {
		return nil, internal(err)
	}
	if fail != nil {
		return nil, fail
	}
	return s.finish(login)
}

// PasskeyView is a passkey as the management calls list it.
type PasskeyView struct {
	CredentialID string `json:"credentialId"`
	CreatedAt    string `json:"createdAt"`
}

// passkeyTime is the decided createdAt form: UTC, no zone, microseconds.
const passkeyTime = "2006-01-02T15:04:05.000000"

// Passkeys lists a user's passkeys; the user is the session's, or the
// project's user with externalUserID (unknown: an empty list).
func (s *Service) Passkeys(projectID, userID string) ([]PasskeyView, error) {
	out := []PasskeyView{}
	err := s.db.View(func(tx *store.Tx) error {
		pks, err := tx.UserPasskeys(projectID, userID)
		for _, pk := range pks {
			out = append(out, PasskeyView{CredentialID: pk.ID, CreatedAt: pk.CreatedAt.UTC().Format(passkeyTime)})
		}
		return err
	})
	return out, internal(err)
}

// UserIDByExternal resolves a project's user by external id; 404
// USER_NOT_FOUND when none.
func (s *Service) UserIDByExternal(projectID, ext string) (string, error) {
	if ext == "" {
		return "", Invalid("externalUserId is required.")
	}
	var id string
	err := s.db.View(func(tx *store.Tx) error {
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

// DeletePasskey removes one of a user's passkeys (404 PASSKEY_NOT_FOUND
// when the user has no such credential) and emits passkey.removed.
func (s *Service) DeletePasskey(projectID, userID, credentialID string, m Meta) error {
	err := s.db.Update(func(tx *store.Tx) error {
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
		return s.record(tx, projectID, userID, "", "passkey", "remove", nil, m)
	})
	return internal(err)
}
