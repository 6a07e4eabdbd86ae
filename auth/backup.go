package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"latchkey/store"
)

// Backup code parameters: batches of 10 codes; 5 failures per identifier
// within 15 minutes lock it out (docs/security.md, "Guessing limits and
// lockouts").
const (
	BackupBatchSize   = 10
	BackupMaxFailures = 5
	BackupFailWindow  = 15 * time.Minute
	// backupAlphabet has no look-alikes: no 0, O, 1, I or L (31
	// characters, so a code holds about 49.5 bits). Codes generated
	// before it may hold them and still verify: normalizeBackupCode
	// accepts all of A-Z and 0-9 and maps none onto another.
	backupAlphabet     = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
	hashDomainBackup   = "backup"
	throttleBackupFail = "backup_fail" // failures per identifier (email or externalUserId)
)

// GenerateBackupCodes makes a new batch of 10 codes for the session user,
// replacing (invalidating) the whole previous batch in the same
// transaction. The codes are returned once; only keyed hashes are kept.
// It needs recent authentication (requireRecentAuth): else 403
// STEP_UP_REQUIRED, recorded, and nothing changes.
func (s *Service) GenerateBackupCodes(ctx context.Context, pr *Principal, m Meta) ([]string, error) {
	codes := make([]string, BackupBatchSize)
	hashes := make([][]byte, BackupBatchSize)
	for i := range codes {
		c := randomString(backupAlphabet, 10)
		codes[i] = c[:5] + "-" + c[5:]
		h := s.keys.HashString(hashDomainBackup, pr.UserID+"\x00"+c)
		hashes[i] = h[:]
	}
	a := s.attempt(ctx, pr.ProjectID, "backup_code", "generate", m)
	err := a.update(func(tx store.Tx) error {
		u, refused, err := s.steppedUp(tx, a, pr)
		if refused || err != nil {
			return err // a refusal is recorded: nil, so that it commits
		}
		b := &store.BackupCodes{UserID: u.ID, ProjectID: u.ProjectID, Hashes: hashes, Used: make([]bool, BackupBatchSize), CreatedAt: s.now().UTC()}
		if err := tx.PutBackupCodes(b); err != nil {
			return err
		}
		if err := s.emit(tx, u.ProjectID, "backup_codes.generated", map[string]string{"user_id": u.ID}); err != nil {
			return err
		}
		return a.ok(tx)
	})
	if err := a.result(err); err != nil {
		return nil, err
	}
	return codes, nil
}

// sessionUserTx returns the principal's user inside tx, checking the
// session row again (401 INVALID_SESSION).
func (s *Service) sessionUserTx(tx store.Tx, pr *Principal) (*store.User, error) {
	if live, err := tx.SessionExists(pr.SessionID); err != nil {
		return nil, err
	} else if !live {
		return nil, ErrInvalidSession
	}
	u, err := tx.User(pr.UserID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && u.Disabled) {
		return nil, ErrInvalidSession
	}
	return u, err
}

// BackupInput is the body of backup-codes/verify: email or
// externalUserId, not both (a null field counts as absent), and the code.
// DeviceToken, optional, exempts a known device from the velocity block.
type BackupInput struct {
	Email          *string `json:"email"`
	ExternalUserID *string `json:"externalUserId"`
	Code           string  `json:"code"`
	DeviceToken    string  `json:"deviceToken"`
}

// maxBackupCodeInput bounds the code field; longer input is malformed.
const maxBackupCodeInput = 64

// hasBackupCode reports whether user has a backup code left to use.
func hasBackupCode(tx store.Tx, user string) (bool, error) {
	b, err := tx.BackupCodes(user)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	if b != nil {
		for _, used := range b.Used {
			if !used {
				return true, nil
			}
		}
	}
	return false, nil
}

// checkBackupCodeShape rejects a code that is empty, longer than 64
// characters, or holds anything but ASCII letters, digits and hyphens
// (whitespace, Unicode): 400 VALIDATION_ERROR, nothing counted.
func checkBackupCodeShape(code string) error {
	if code == "" {
		return Invalid("code is required.")
	}
	if len(code) > maxBackupCodeInput {
		return Invalid("code must be a backup code: XXXXX-XXXXX.")
	}
	for i := 0; i < len(code); i++ {
		c := code[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return Invalid("code must be a backup code: XXXXX-XXXXX.")
		}
	}
	return nil
}

// normalizeBackupCode uppercases a code and drops the hyphen between the
// two groups; false when the result is not 10 characters of A–Z and 0–9
// (a wrong code). It maps no character onto another (O onto 0, say): a
// code is stored as the keyed hash of exactly this form, and codes made
// before the look-alike-free alphabet hold 0, O, 1, I and L as printed.
func normalizeBackupCode(code string) (string, bool) {
	c := strings.ToUpper(code)
	if len(c) == 11 && c[5] == '-' {
		c = c[:5] + c[6:]
	}
	if len(c) != 10 {
		return "", false
	}
	for i := 0; i < len(c); i++ {
		if !(c[i] >= 'A' && c[i] <= 'Z' || c[i] >= '0' && c[i] <= '9') {
			return "", false
		}
	}
	return c, true
}

// VerifyBackupCode signs a user in with one of their backup codes,
// consuming it. Both or neither of email and externalUserId, and a
// malformed code, are 400 VALIDATION_ERROR. Wrong, used, invalidated
// codes (including well-formed strings of the wrong length) and unknown
// users are 401 INVALID_CODE; once an identifier (the email or the
// externalUserId as given) has 5 failures within 15 minutes, every
// further try with it is 429 TOO_MANY_ATTEMPTS until the oldest leaves
// the window. Failures count per identifier whether or not it names a
// user, so an unknown identifier answers exactly as a known one. A
// disabled user is 403 USER_DISABLED. A login clears the user's TOTP
// failures and lockout (the way out of TOTP's permanent lock); its
// session is proven by backup_code, which counts as recent
// authentication for StepUpWindow (the factors' recovery) and leaves no
// second factor pending.
func (s *Service) VerifyBackupCode(ctx context.Context, p *store.Project, in BackupInput, m Meta) (*Login, error) {
	return s.verifyBackupCode(ctx, p, in, loginAs{method: "backup_code"}, m)
}

// verifyBackupCode is VerifyBackupCode for a session as says.
func (s *Service) verifyBackupCode(ctx context.Context, p *store.Project, in BackupInput, as loginAs, m Meta) (*Login, error) {
	a := s.attempt(ctx, p.ID, "backup_code", "verify", m)
	if (in.Email == nil) == (in.ExternalUserID == nil) {
		return nil, a.reject(Invalid("Send either email or externalUserId."))
	}
	if err := checkBackupCodeShape(in.Code); err != nil {
		return nil, a.reject(err)
	}
	var email, ext, ident string
	if in.Email != nil {
		var err error
		if email, err = NormalizeEmail(*in.Email); err != nil {
			return nil, a.reject(err)
		}
		ident = "email:" + email
	} else {
		ext = *in.ExternalUserID
		if ext == "" || len(ext) > 255 {
			return nil, a.reject(Invalid("externalUserId must be 1 to 255 characters."))
		}
		ident = "ext:" + ext
	}
	a.email = email
	if in.DeviceToken != "" {
		a.m.DeviceToken = in.DeviceToken
	}
	if err := a.reserveRisk(p, subject{email: email, externalID: ext}); err != nil {
		return nil, a.reject(err)
	}
	defer a.release()
	code, wellFormed := normalizeBackupCode(in.Code)
	var login *Login
	err := a.update(func(tx store.Tx) error {
		login = nil
		now := s.now().UTC()
		var u *store.User
		var err error
		if email != "" {
			u, err = tx.UserByEmail(p.ID, email)
		} else {
			u, err = tx.UserByExternalID(p.ID, ext)
		}
		if errors.Is(err, store.ErrNotFound) {
			u = nil
		} else if err != nil {
			return err
		}
		if u != nil {
			a.userID, a.email = u.ID, u.Email
		}
		if u != nil && u.Disabled {
			return a.fail(tx, ErrUserDisabled)
		}
		th, err := tx.Throttle(throttleBackupFail, p.ID, ident)
		if err != nil {
			return err
		}
		recent := th.Sends[:0]
		for _, t := range th.Sends {
			if now.Sub(t) < BackupFailWindow {
				recent = append(recent, t)
			}
		}
		th.Sends = recent
		if n := len(recent); n >= BackupMaxFailures {
			// Locked until the failure that leaves the window brings
			// the count under the limit.
			return a.fail(tx, ErrTooManyAttempts.WithRetry(recent[n-BackupMaxFailures].Add(BackupFailWindow).Sub(now)))
		}
		idx := -1
		var b *store.BackupCodes
		if u != nil {
			if b, err = tx.BackupCodes(u.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		if b != nil && wellFormed {
			h := s.keys.HashString(hashDomainBackup, u.ID+"\x00"+code)
			for i, hh := range b.Hashes {
				if subtle.ConstantTimeCompare(h[:], hh) == 1 {
					idx = i
				}
			}
		}
		if idx < 0 || b.Used[idx] {
			th.Sends = append(th.Sends, now)
			if err := tx.PutThrottle(throttleBackupFail, p.ID, ident, th); err != nil {
				return err
			}
			switch {
			case u == nil:
				return a.fail(tx, ErrInvalidCode.withCategory(CatUserNotFound))
			case idx >= 0:
				return a.fail(tx, ErrInvalidCode.withCategory(CatAlreadyUsed))
			}
			return a.fail(tx, ErrInvalidCode)
		}
		b.Used[idx] = true
		if err := tx.PutBackupCodes(b); err != nil {
			return err
		}
		for _, kind := range []string{factorTOTP, factorSMS} {
			if err := clearFactorFailures(tx, u.ID, kind); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
		}
		login, err = s.startLoginAs(tx, p, u, as, a.m)
		if err != nil {
			return err
		}
		return a.ok(tx)
	})
	if err := a.result(err); err != nil {
		return nil, err
	}
	return s.finish(login)
}
