package auth

import (
	"errors"

	"latchkey/store"
)

// Verified addresses (docs/security.md). A user's emailVerified is true
// once a code or link sent to the address signed them in, they
// confirmed the address from their session, or an app vouched for it
// (an external method); a passkey sign-up by email, and an address
// changed directly (emailChange "direct"), leave it false; an import
// sets it as its line says. A sign-in by code or link that proves the
// address of an unverified account replaces that account when it
// registered itself (replaceUnverified): whoever registered the address
// first without proving it cannot keep it. An account the operator
// vouched for (an import wrote it) is kept and marked verified instead:
// its owner finds it as imported (replaceable tells the two apart).

// settleVerified makes u.EmailVerified definite and reports whether it
// was not (a row written before the field existed), so the caller may
// store it. Such rows count as verified: those users signed up by code,
// link or an external method, which prove the address, except for
// passkey sign-ups, which created the user and its first passkey in one
// transaction at one instant and never named an externalUserId; those
// count as unverified, like every passkey sign-up since.
func settleVerified(tx store.Tx, u *store.User) (changed bool, err error) {
	if u.EmailVerified != nil {
		return false, nil
	}
	verified := true
	if u.ExternalUserID == "" {
		pks, err := tx.UserPasskeys(u.ProjectID, u.ID)
		if err != nil {
			return false, err
		}
		for _, pk := range pks {
			if pk.CreatedAt.Equal(u.CreatedAt) {
				verified = false
				break
			}
		}
	}
	u.EmailVerified = &verified
	return true, nil
}

// isVerified reports u's settled emailVerified.
func isVerified(u *store.User) bool { return u.EmailVerified != nil && *u.EmailVerified }

// setVerified marks u's address proven inside tx, writing the row only
// when that changes it.
func (s *Service) setVerified(tx store.Tx, u *store.User) error {
	if isVerified(u) {
		return nil
	}
	u.EmailVerified = boolPtr(true)
	u.UpdatedAt = s.now().UTC()
	return tx.PutUser(u)
}

// provenUser returns p's user with email for a sign-in that proved the
// address (an email code or a magic link; an app vouching for it): a new
// user when there is none (user.registered); the account, marked
// verified, when it is verified or the operator vouched for it; and,
// when it is an unverified account that registered itself, a new user
// replacing it (replaceUnverified). A disabled account is returned as
// it is, for the caller's 403. isNew is true for a created user.
func (s *Service) provenUser(tx store.Tx, p *store.Project, email string) (u *store.User, isNew bool, err error) {
	u, err = tx.UserByEmail(p.ID, email)
	return s.provenUserRead(tx, p, email, u, err)
}

// provenUserRead is provenUser for a caller that already read the
// address's user in tx: u and err are what tx.UserByEmail returned.
func (s *Service) provenUserRead(tx store.Tx, p *store.Project, email string, u *store.User, err error) (*store.User, bool, error) {
	if errors.Is(err, store.ErrNotFound) {
		u, err = s.newUser(tx, p, email, true)
		return u, err == nil, err
	} else if err != nil {
		return nil, false, err
	}
	if u.Disabled {
		return u, false, nil
	}
	changed, err := settleVerified(tx, u)
	if err != nil {
		return nil, false, err
	}
	replace, err := replaceable(tx, u)
	if err != nil {
		return nil, false, err
	}
	if replace {
		u, err = s.replaceUnverified(tx, p, u)
		return u, err == nil, err
	}
	if !isVerified(u) {
		return u, false, s.setVerified(tx, u)
	}
	if changed {
		err = tx.PutUser(u)
	}
	return u, false, err
}

// replaceable reports whether u, its emailVerified settled, is an
// account that a sign-in proving its address replaces: an unverified
// account that registered itself (a passkey sign-up, an address changed
// directly), not one the operator vouched for (store.User.Vouched: an
// import wrote it). A verified account is never replaced.
//
// Rows written before Vouched existed count as vouched for when nobody
// can sign in to them: no passkey, no session, no backup codes, no
// enrolled TOTP or SMS. Those are the imported users that never signed
// in (imports left them unverified by default). An unverified account
// that registered itself holds one of those while anyone can use it (a
// passkey sign-up its passkey and session, an address changed directly
// the session that changed it), so it is replaced as before. The answer
// is worked out each time, not stored.
func replaceable(tx store.Tx, u *store.User) (bool, error) {
	if isVerified(u) {
		return false, nil
	}
	if u.Vouched != nil {
		return !*u.Vouched, nil
	}
	sums, err := tx.FactorSummaries(u.ProjectID, []string{u.ID})
	if err != nil {
		return false, err
	}
	sum := sums[u.ID]
	if sum.Passkeys || sum.BackupCodes {
		return true, nil
	}
	for _, status := range sum.Factors {
		if status == factorEnrolled {
			return true, nil
		}
	}
	sessions, err := tx.UserSessions(u.ID)
	return len(sessions) > 0, err
}

// replaceUnverified deletes the unverified account old the way DELETE
// /user does (sessions, factors, backup codes, passkeys, pending codes,
// links and grants; user.deleted) and creates a new, verified user with
// its address (user.registered), inside tx.
func (s *Service) replaceUnverified(tx store.Tx, p *store.Project, old *store.User) (*store.User, error) {
	if err := s.deleteAccount(tx, old); err != nil {
		return nil, err
	}
	return s.newUser(tx, p, old.Email, true)
}

// newUser creates p's user with email inside tx and emits
// user.registered. An unverified one registered itself (Vouched false:
// a sign-in proving the address replaces it).
func (s *Service) newUser(tx store.Tx, p *store.Project, email string, verified bool) (*store.User, error) {
	now := s.now().UTC()
	u := &store.User{ID: newID(), ProjectID: p.ID, Email: email, CreatedAt: now, UpdatedAt: now, EmailVerified: boolPtr(verified)}
	if !verified {
		u.Vouched = boolPtr(false)
	}
	if err := tx.PutUser(u); err != nil {
		return nil, err
	}
	if err := s.emit(tx, p.ID, "user.registered", userRegistered{Email: email, UserID: u.ID}); err != nil {
		return nil, err
	}
	return u, nil
}

func boolPtr(b bool) *bool { return &b }
