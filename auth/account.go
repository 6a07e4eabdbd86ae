package auth

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"latchkey/store"
)

// SessionUser returns the user of a verified session (401 INVALID_SESSION
// when it is gone or disabled), its emailVerified settled.
func (s *Service) SessionUser(ctx context.Context, pr *Principal) (*store.User, error) {
	var u *store.User
	err := s.db.View(ctx, func(tx store.Tx) error {
		var err error
		if u, err = tx.User(pr.UserID); err != nil {
			return err
		}
		_, err = settleVerified(tx, u)
		return err
	})
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.Disabled) {
		return nil, ErrInvalidSession
	}
	return u, internal(err)
}

// sessionUserProject returns SessionUser's user with its project.
func (s *Service) sessionUserProject(ctx context.Context, pr *Principal) (*store.User, *store.Project, error) {
	u, err := s.SessionUser(ctx, pr)
	if err != nil {
		return nil, nil, err
	}
	p, err := s.project(ctx, u.ProjectID)
	if err != nil {
		return nil, nil, internal(err)
	}
	return u, p, nil
}

// checkFirstName trims a first name and checks it is 1 to 100
// characters without line breaks (400 VALIDATION_ERROR).
func checkFirstName(raw string) (string, error) {
	first := strings.TrimSpace(raw)
	if n := utf8.RuneCountInString(first); n < 1 || n > 100 || strings.ContainsAny(first, "\r\n\x00") {
		return "", Invalid("firstName must be 1 to 100 characters.")
	}
	return first, nil
}

// DeleteUser deletes the session user, all their sessions, factors and
// passkeys, and what could still sign their address or identity in
// (dropPending), and emits user.deleted, in one transaction. It needs
// recent authentication (requireRecentAuth): else 403 STEP_UP_REQUIRED
// and nothing changes.
func (s *Service) DeleteUser(ctx context.Context, pr *Principal) error {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(pr.UserID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		if _, err := requireRecentAuth(tx, pr, s.now().UTC()); err != nil {
			return err
		}
		return s.deleteAccount(tx, u)
	})
	return internal(err)
}

// AdminDeleteUser is DeleteUser for the operator: the user id, with
// everything that belongs to the user, in one transaction (deleteAccount);
// user.deleted (and session.revoked for each session) is emitted. An
// unknown id is 404 USER_NOT_FOUND.
func (s *Service) AdminDeleteUser(ctx context.Context, id string) error {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		return s.deleteAccount(tx, u)
	})
	return internal(err)
}

// deleteAccount deletes u inside tx as DELETE /user does: every session
// (session.revoked each), factors, backup codes and passkeys, what could
// still sign the address or identity in (dropPending), the user and its
// indexes; it emits user.deleted.
func (s *Service) deleteAccount(tx store.Tx, u *store.User) error {
	if err := s.revokeAll(tx, u); err != nil {
		return err
	}
	if err := s.dropPending(tx, u); err != nil {
		return err
	}
	if err := tx.DeleteUser(u); err != nil {
		return err
	}
	return s.emit(tx, u.ProjectID, "user.deleted", map[string]string{"user_id": u.ID})
}

// dropPending deletes, inside tx, what could sign u's address or
// identity in again after the account is deleted: the pending email
// code and every magic link of the address, the pending SMS code and
// address confirmation, and unredeemed external grants for u's
// externalUserId; and u's own SMS send history (keyed by the user id,
// which is never reused). The address's email send histories and the
// guessing limits of the address and of backup-code identifiers stay:
// they hold for the address or identifier, whoever holds it.
func (s *Service) dropPending(tx store.Tx, u *store.User) error {
	for _, c := range []*store.Code{
		{Kind: codeKindOTP, ProjectID: u.ProjectID, Subject: u.Email},
		{Kind: codeKindSMS, ProjectID: u.ProjectID, Subject: u.ID},
		{Kind: codeKindEmail, ProjectID: u.ProjectID, Subject: u.ID},
	} {
		if err := tx.DeleteCode(c); err != nil {
			return err
		}
	}
	if _, err := tx.DeleteMagicLinks(u.ProjectID, u.Email); err != nil {
		return err
	}
	if u.ExternalUserID != "" {
		if _, err := tx.DeleteGrants(u.ProjectID, u.ExternalUserID); err != nil {
			return err
		}
	}
	return tx.PutThrottle(throttleSMSSend, u.ProjectID, u.ID, &store.Throttle{})
}
