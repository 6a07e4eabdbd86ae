package auth

import (
	"context"
	"errors"

	"latchkey/store"
)

// The backup code on forward-auth's and the account page's sign-in
// (docs/forward-auth.md, "Sign-in, cookie and sign-out"), as the
// provider's second-factor page offers it (OIDCSecondFactor): a user
// with TOTP or SMS enrolled who has lost the authenticator app or the
// phone signs in with one of their backup codes instead. It is the API's
// backup-code sign-in (VerifyBackupCode: its throttle, lockout, risk
// checks and events), for the session's user: a new session, proven by
// the backup code, which the browser's cookies then hold. A backup code
// is the factors' recovery, not a second factor, so a rule with policy
// mfa does not take it.

// ForwardAuthFactors returns what the second-factor page of sign-in t
// offers the browser's session pr: TOTP and SMS when enrolled, and
// Backup when the user has an unused backup code and t's rule (if any)
// does not have policy mfa. 401 INVALID_SESSION when the session is gone.
func (s *Service) ForwardAuthFactors(ctx context.Context, t *ForwardAuthTarget, pr *Principal) (OIDCFactors, error) {
	var f OIDCFactors
	err := s.db.View(ctx, func(tx store.Tx) error {
		f = OIDCFactors{}
		sess, en, err := tx.SessionEnrolled(pr.SessionID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && sess.UserID != pr.UserID) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		f.TOTP, f.SMS = en.TOTP, en.SMS
		if t.rule != nil && t.rule.Policy == ForwardAuthMFA {
			return nil
		}
		f.Backup, err = hasBackupCode(tx, pr.UserID)
		return err
	})
	return f, internal(err)
}

// ForwardAuthBackupCode signs the user of the browser's session pr in
// with one of their backup codes for sign-in t: VerifyBackupCode's
// checks, throttle (failures counted per address, 429
// TOO_MANY_ATTEMPTS), lockouts and events, for pr's user, consuming the
// code. The new session (method "forward-auth", or "account" on the
// account page's sign-in, proven by backup_code, without a refresh
// token) is returned. 403 STEP_UP_REQUIRED when the page does not take
// a backup code (ForwardAuthFactors: a rule with policy mfa, or no
// unused code); 401 INVALID_SESSION when pr has ended.
func (s *Service) ForwardAuthBackupCode(ctx context.Context, t *ForwardAuthTarget, pr *Principal, code string, m Meta) (*Login, error) {
	if pr.ProjectID != t.Project.ID {
		return nil, ErrInvalidSession
	}
	f, err := s.ForwardAuthFactors(ctx, t, pr)
	if err != nil {
		return nil, err
	}
	if !f.Backup {
		return nil, errNoForwardBackup
	}
	u, err := s.SessionUser(ctx, pr)
	if err != nil {
		return nil, err
	}
	in := BackupInput{Email: &u.Email, Code: code}
	if u.Email == "" {
		in = BackupInput{ExternalUserID: &u.ExternalUserID, Code: code}
	}
	return s.verifyBackupCode(ctx, t.Project, in, loginAs{method: t.method, proof: amrBackupCode, noRefresh: true}, m)
}

// errNoForwardBackup: a backup code where the page does not take one.
var errNoForwardBackup = ErrStepUpRequired.With("A backup code cannot be used here: this address requires a second factor (a code from your authenticator app or phone), or you have no unused backup code left.")
