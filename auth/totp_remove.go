package auth

import (
	"context"
	"errors"

	"latchkey/store"
)

// RemoveTOTP removes the session user's authenticator app (the account
// page's "Remove"; the API has no call for it): the enrolled TOTP factor
// is deleted and totp.removed is emitted in the same transaction. It
// takes away what guards the account, so, like a passkey's removal, it
// needs recent authentication (requireRecentAuth), checked first: else
// 403 STEP_UP_REQUIRED, recorded, nothing removed. 404
// TOTP_NOT_ENROLLED when the user has no enrolled TOTP (a pending
// enrolment is not one, and stays). 401 INVALID_SESSION when the
// session is gone. The account's backup codes stay: they were made
// with a factor's proof. Recorded as an authentication event (method
// totp, action remove).
func (s *Service) RemoveTOTP(ctx context.Context, pr *Principal, m Meta) error {
	a := s.attempt(ctx, pr.ProjectID, "totp", "remove", m)
	err := a.update(func(tx store.Tx) error {
		u, refused, err := s.steppedUp(tx, a, pr)
		if refused || err != nil {
			return err // a refusal is recorded: nil, so that it commits
		}
		f, err := tx.Factor(u.ID, factorTOTP)
		if errors.Is(err, store.ErrNotFound) || (err == nil && f.Status != factorEnrolled) {
			return a.fail(tx, ErrTOTPNotEnrolled)
		} else if err != nil {
			return err
		}
		if err := tx.DeleteFactor(u.ID, factorTOTP); err != nil {
			return err
		}
		if err := s.emit(tx, u.ProjectID, "totp.removed", map[string]string{"user_id": u.ID}); err != nil {
			return err
		}
		return a.ok(tx)
	})
	return a.result(err)
}
