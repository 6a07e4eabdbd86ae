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
	return s.finishPasskeyLogin(ctx, p, challengeID, credential, loginAs{method: "passkey"}, m)
}

// finishPasskeyLogin is FinishPasskeyLogin for a session as says.
func (s *Service) finishPasskeyLogin(ctx context.Context, p *store.Project, challengeID string, credential json.RawMessage, as loginAs, m Meta) (*Login, error) {
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
		as.synced = cred.Flags.BackupEligible
		if login, err = s.startLoginAs(tx, p, u, as, a.m); err != nil {
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
