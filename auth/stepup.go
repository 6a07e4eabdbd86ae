package auth

import (
	"errors"
	"time"

	"latchkey/store"
)

// Recent authentication (sudo mode). A session holder can make changes
// that would let them keep an account they do not own: enrolling TOTP,
// generating backup codes (a backup-code login is a step-up and a new
// session), adding a passkey (a login of its own). Once the account has a
// second factor (TOTP or SMS enrolled), those changes need a session that
// signed in, or passed a step-up (markStepUp), within StepUpWindow;
// otherwise 403 STEP_UP_REQUIRED. Moving SMS to another phone is
// stricter: only a step-up counts (SendSMSCode).

// errRecentAuthRequired refuses a change that needs recent
// authentication.
var errRecentAuthRequired = ErrStepUpRequired.With("Sign in again, or verify with a factor you already have (TOTP, your phone or a backup code), then retry.")

// requireRecentAuth returns errRecentAuthRequired when u has TOTP or SMS
// enrolled and the session pr neither signed in nor stepped up within
// StepUpWindow of now; nil otherwise. Reads only, inside tx.
func requireRecentAuth(tx store.Tx, pr *Principal, u *store.User, now time.Time) error {
	guarded := false
	for _, kind := range []string{factorTOTP, factorSMS} {
		f, err := tx.Factor(u.ID, kind)
		if err == nil && f.Status == factorEnrolled {
			guarded = true
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	if !guarded {
		return nil
	}
	sess, err := tx.Session(pr.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return ErrInvalidSession
	} else if err != nil {
		return err
	}
	if within(sess.IssuedAt, now) || within(sess.SteppedUpAt, now) {
		return nil
	}
	return errRecentAuthRequired
}

// within reports whether t is set and at most StepUpWindow before now.
func within(t, now time.Time) bool {
	return !t.IsZero() && now.Sub(t) <= StepUpWindow
}
