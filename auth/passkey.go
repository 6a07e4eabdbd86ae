package auth

import (
	"context"
	"errors"

	"latchkey/store"
)

// isAuthError reports whether err is one of the taxonomy's errors (as
// opposed to a store failure).
func isAuthError(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// PasskeyView is a passkey as the management calls list it.
type PasskeyView struct {
	CredentialID string `json:"credentialId"`
	CreatedAt    string `json:"createdAt"`
}

// passkeyTime is the decided createdAt form: UTC, no zone, microseconds.
const passkeyTime = "2006-01-02T15:04:05.000000"

// Passkeys lists the passkeys of projectID's user userID, oldest first
// (an empty list when there are none).
func (s *Service) Passkeys(ctx context.Context, projectID, userID string) ([]PasskeyView, error) {
	out := []PasskeyView{}
	err := s.db.View(ctx, func(tx store.Tx) error {
		pks, err := tx.UserPasskeys(projectID, userID)
		for _, pk := range pks {
			out = append(out, PasskeyView{CredentialID: pk.ID, CreatedAt: pk.CreatedAt.UTC().Format(passkeyTime)})
		}
		return err
	})
	return out, internal(err)
}

// UserIDByExternal resolves a project's user by external id: 400
// VALIDATION_ERROR when ext is empty, 404 USER_NOT_FOUND when no user has it.
func (s *Service) UserIDByExternal(ctx context.Context, projectID, ext string) (string, error) {
	if ext == "" {
		return "", Invalid("externalUserId is required.")
	}
	var id string
	err := s.db.View(ctx, func(tx store.Tx) error {
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

// DeletePasskey removes one of a user's passkeys, for the app (DELETE
// /passkeys/by-external/:credentialId with an API key), and emits
// passkey.removed in the same transaction; 404 PASSKEY_NOT_FOUND when
// the user has no such credential in the project (another user's or
// project's credential is "not found" too). The app's backend vouches
// for the call: there is no session to check (DeleteSessionPasskey is
// the user's own call).
func (s *Service) DeletePasskey(ctx context.Context, projectID, userID, credentialID string, m Meta) error {
	return s.deletePasskey(ctx, projectID, userID, credentialID, nil, m)
}

// DeleteSessionPasskey removes one of the session user's passkeys
// (DELETE /passkeys/:credentialId), as DeletePasskey does. It may take
// away what guards the account (then any fresh sign-in would count as
// recent authentication), so it needs recent authentication
// (requireRecentAuth), checked before the passkey is looked up: else
// 403 STEP_UP_REQUIRED, recorded, nothing removed. 401 INVALID_SESSION
// when the session is gone.
func (s *Service) DeleteSessionPasskey(ctx context.Context, pr *Principal, credentialID string, m Meta) error {
	return s.deletePasskey(ctx, pr.ProjectID, pr.UserID, credentialID, pr, m)
}

// deletePasskey removes userID's passkey credentialID in projectID (see
// DeletePasskey), checking the session pr first when it is not nil
// (DeleteSessionPasskey). A removal changes the account's factors: a
// pending TOTP enrolment is dropped.
func (s *Service) deletePasskey(ctx context.Context, projectID, userID, credentialID string, pr *Principal, m Meta) error {
	a := s.attempt(ctx, projectID, "passkey", "remove", m)
	a.userID = userID
	err := a.update(func(tx store.Tx) error {
		if pr != nil {
			if _, refused, err := s.steppedUp(tx, a, pr); refused || err != nil {
				return err // a refusal is recorded: nil, so that it commits
			}
		}
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
		if err := dropPendingTOTP(tx, userID); err != nil {
			return err
		}
		if u, err := tx.User(userID); err == nil {
			a.email = u.Email
		}
		return a.ok(tx)
	})
	return a.result(err)
}
