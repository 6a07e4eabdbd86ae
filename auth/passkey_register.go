package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"latchkey/store"
)

// errPasskeyRegistered refuses a passkey the user already has.
var errPasskeyRegistered = ErrInvalidCredential.With("This passkey is already registered.")

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
			return a.fail(tx, errPasskeyRegistered)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if signup {
			if err := tx.PutUser(u); err != nil {
				return err
			}
			if err := s.emit(tx, p.ID, "user.registered", userRegistered{Email: u.Email, UserID: u.ID}); err != nil {
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
			if out.Login, err = s.startLoginAs(tx, p, u, loginAs{method: "passkey", synced: cred.Flags.BackupEligible}, a.m); err != nil {
				return err
			}
			out.Login.IsNewUser = true
		} else {
			if err := s.markPasskeyProof(tx, pr.SessionID, cred.Flags.BackupEligible, now); err != nil {
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
