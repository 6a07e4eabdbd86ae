package auth

import (
	"context"
	"errors"

	"latchkey/store"
)

// MaxUserSessions is the most sessions AdminUserDetail returns.
const MaxUserSessions = 100

// TOTPState is a user's TOTP factor as the operator sees it.
type TOTPState struct {
	// Status is "pending" (enrolment not confirmed yet) or "enrolled".
	Status string
	// Failures counts the consecutive failed codes.
	Failures int
	// LockedUntil is when a timed lockout ends (RFC 3339 UTC); "" when
	// none is running.
	LockedUntil string
	// Capped is true after TOTPFailureCap consecutive failures: TOTP is
	// locked until a backup-code login or ResetTOTP.
	Capped bool
}

// SMSState is a user's enrolled phone's guessing limits as the operator
// sees them (see SMSMaxFailures).
type SMSState struct {
	// Failures counts the consecutive failed codes of the enrolled phone.
	Failures int
	// LockedUntil is when a timed lockout ends (RFC 3339 UTC); "" when
	// none is running.
	LockedUntil string
	// Capped is true after SMSFailureCap consecutive failures: SMS is
	// locked until a backup-code login or ResetSMS.
	Capped bool
}

// UserDetail is one user as the dashboard's user page shows it.
type UserDetail struct {
	User AdminUser
	// TOTP is the TOTP factor, nil when the user has none (a pending
	// enrolment older than TOTPPendingLifetime is none).
	TOTP *TOTPState
	// SMS is the enrolled phone, nil when the user has none.
	SMS *SMSState
	// Passkeys counts the user's passkeys.
	Passkeys int
	// BackupCodes is true when the user has a batch of backup codes.
	BackupCodes bool
	// Sessions are the user's live sessions, newest first: at most
	// the limit asked for; MoreSessions says when older ones exist.
	Sessions     []SessionView
	MoreSessions bool
}

// AdminUserDetail returns user id with its factors and up to
// sessionLimit (at most MaxUserSessions) of its newest sessions, in one
// read transaction that reads at most sessionLimit+1 session index
// entries. 404 USER_NOT_FOUND for an unknown id.
func (s *Service) AdminUserDetail(ctx context.Context, id string, sessionLimit int) (UserDetail, error) {
	sessionLimit = min(max(sessionLimit, 1), MaxUserSessions)
	var d UserDetail
	var rows []*store.Session
	err := s.db.View(ctx, func(tx store.Tx) error {
		u, err := tx.User(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		if d.User, err = viewAdminUser(tx, u); err != nil {
			return err
		}
		if f, err := tx.Factor(u.ID, factorTOTP); err == nil && (f.Status == factorEnrolled || s.now().Before(f.CreatedAt.Add(TOTPPendingLifetime))) {
			st := &TOTPState{Status: f.Status, Failures: f.Failures, Capped: f.Failures >= TOTPFailureCap}
			if s.now().Before(f.LockedUntil) {
				st.LockedUntil = formatTime(f.LockedUntil)
			}
			d.TOTP = st
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if f, err := tx.Factor(u.ID, factorSMS); err == nil && f.Status == factorEnrolled {
			st := &SMSState{Failures: f.Failures, Capped: f.Failures >= SMSFailureCap}
			if s.now().Before(f.LockedUntil) {
				st.LockedUntil = formatTime(f.LockedUntil)
			}
			d.SMS = st
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		pks, err := tx.UserPasskeys(u.ProjectID, u.ID)
		if err != nil {
			return err
		}
		d.Passkeys = len(pks)
		if _, err := tx.BackupCodes(u.ID); err == nil {
			d.BackupCodes = true
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		rows, d.MoreSessions, err = tx.RecentUserSessions(u.ID, sessionLimit)
		return err
	})
	if err != nil {
		return UserDetail{}, internal(err)
	}
	d.Sessions = s.viewSessions(rows)
	return d, nil
}
