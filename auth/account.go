package auth

import (
	"errors"
	"strings"
	"unicode/utf8"

	"latchkey/store"
)

// SessionUser returns the user of a verified session (401 INVALID_SESSION
// when it is gone or disabled).
func (s *Service) SessionUser(pr *Principal) (*store.User, error) {
	var u *store.User
	err := s.db.View(func(tx *store.Tx) error {
		var err error
		u, err = tx.User(pr.UserID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.Disabled) {
		return nil, ErrInvalidSession
	}
	return u, internal(err)
}

// UserPatch is the body of PATCH /user; nil fields are unchanged.
type UserPatch struct {
	Email     *string `json:"email"`
	FirstName *string `json:"firstName"`
}

// UpdateUser changes the session user's email and/or first name (409
// EMAIL_IN_USE when another user of the project has the address) and
// emits user.updated.
func (s *Service) UpdateUser(pr *Principal, in UserPatch) (*store.User, error) {
	if in.Email == nil && in.FirstName == nil {
		return nil, Invalid("Send email or firstName.")
	}
	var email, first string
	if in.Email != nil {
		var err error
		if email, err = NormalizeEmail(*in.Email); err != nil {
			return nil, err
		}
	}
	if in.FirstName != nil {
		first = strings.TrimSpace(*in.FirstName)
		if n := utf8.RuneCountInString(first); n < 1 || n > 100 || strings.ContainsAny(first, "\r\n\x00") {
			return nil, Invalid("firstName must be 1 to 100 characters.")
		}
	}
	var u *store.User
	err := s.db.Update(func(tx *store.Tx) error {
		if !tx.SessionExists(pr.SessionID) {
			return ErrInvalidSession
		}
		var err error
		u, err = tx.User(pr.UserID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		if in.Email != nil {
			u.Email = email
		}
		if in.FirstName != nil {
			u.FirstName = first
		}
		u.UpdatedAt = s.now().UTC()
		if err := tx.PutUser(u); errors.Is(err, store.ErrConflict) {
			return ErrEmailInUse
		} else if err != nil {
			return err
		}
		return s.emit(tx, u.ProjectID, "user.updated", map[string]string{"user_id": u.ID, "email": u.Email})
	})
	if err != nil {
		return nil, internal(err)
	}
	return u, nil
}

// DeleteUser deletes the session user, all their sessions, factors and
// passkeys, and what could still sign their address or identity in
// (dropPending), and emits user.deleted, in one transaction.
func (s *Service) DeleteUser(pr *Principal) error {
	err := s.db.Update(func(tx *store.Tx) error {
		u, err := tx.User(pr.UserID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		return s.deleteUser(tx, u)
	})
	return internal(err)
}

// AdminDeleteUser is DeleteUser for the operator: the user id, with
// everything that belongs to the user, in one transaction; user.deleted
// (and session.revoked for each session) is emitted. An unknown id is
// 404 USER_NOT_FOUND.
func (s *Service) AdminDeleteUser(id string) error {
	err := s.db.Update(func(tx *store.Tx) error {
		u, err := tx.User(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		return s.deleteUser(tx, u)
	})
	return internal(err)
}

// deleteUser removes u inside tx: sessions (each emitting
// session.revoked), pending codes, links and grants (dropPending), the
// user with factors, backup codes and passkeys; then emits user.deleted.
func (s *Service) deleteUser(tx *store.Tx, u *store.User) error {
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
// code and every magic link of the address, the pending SMS code, and
// unredeemed external grants for u's externalUserId; and u's own send
// and failure histories (keyed by the user id, which is never reused).
// The address's email send histories stay: they limit mail to the
// address, whoever holds it.
func (s *Service) dropPending(tx *store.Tx, u *store.User) error {
	for _, c := range []*store.Code{
		{Kind: codeKindOTP, ProjectID: u.ProjectID, Subject: u.Email},
		{Kind: codeKindSMS, ProjectID: u.ProjectID, Subject: u.ID},
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
	for _, kind := range []string{throttleBackupFail, throttleSMSSend} {
		if err := tx.PutThrottle(kind, u.ProjectID, u.ID, &store.Throttle{}); err != nil {
			return err
		}
	}
	return nil
}

// Logout deletes the session; its JWT fails from now on.
func (s *Service) Logout(pr *Principal) error {
	err := s.db.Update(func(tx *store.Tx) error {
		sess, err := tx.Session(pr.SessionID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		if err := tx.DeleteSession(sess); err != nil {
			return err
		}
		return s.emit(tx, sess.ProjectID, "session.revoked", map[string]string{"user_id": sess.UserID, "session_id": sess.ID})
	})
	return internal(err)
}
