package auth

import (
	"context"
	"errors"
	"time"

	"latchkey/auth/totp"
	"latchkey/store"
)

// TOTP hardening (stricter than the common form of this API, which sets
// no limit: docs/security.md, "Guessing limits and lockouts"): each run
// of TOTPMaxFailures consecutive
// failures locks every try out, for TOTPLockout after the first run and
// twice as long after each further run, up to TOTPMaxLockout;
// TOTPFailureCap consecutive failures with no success lock it until a
// backup-code login or an admin reset (NIST SP 800-63B 5.2.2).
const (
	TOTPMaxFailures = 10
	TOTPLockout     = 15 * time.Minute
	TOTPMaxLockout  = 24 * time.Hour
	TOTPFailureCap  = 100
	// TOTPPendingLifetime is how long a pending TOTP enrolment may be
	// confirmed: after that, totp/verify answers as if none were
	// pending, and the secret must be enrolled again.
	TOTPPendingLifetime = 10 * time.Minute
	factorTOTP          = "totp"
	factorPending       = "pending"
	factorEnrolled      = "enrolled"
)

// totpLockout returns the lockout that the failures-th consecutive
// failure starts: none unless it ends a run of TOTPMaxFailures, then
// 15 minutes doubled per earlier run, capped at TOTPMaxLockout.
func totpLockout(failures int) time.Duration {
	if failures <= 0 || failures%TOTPMaxFailures != 0 {
		return 0
	}
	d := TOTPLockout
	for run := failures / TOTPMaxFailures; run > 1 && d < TOTPMaxLockout; run-- {
		d *= 2
	}
	return min(d, TOTPMaxLockout)
}

// TOTP failures: the wire answer is always 401 VERIFICATION_FAILED; the
// category tells them apart on the event.
var (
	errTOTPReused = ErrVerificationFailed.withCategory(CatAlreadyUsed).With("This code was already used. Wait for the next code.")
	errTOTPLocked = ErrVerificationFailed.withCategory(CatRateLimited).With("Too many failed attempts. Try again later.")
	errTOTPCapped = ErrVerificationFailed.withCategory(CatRateLimited).With("Too many failed attempts. Sign in with a backup code to use TOTP again.")
)

// errTOTPPendingExpired answers the verify of a pending enrolment older
// than TOTPPendingLifetime: as no enrolment (404 TOTP_NOT_ENROLLED).
var errTOTPPendingExpired = ErrTOTPNotEnrolled.withCategory(CatExpired).With("The TOTP enrolment expired (10 minutes); enroll again.")

// TOTPEnrollment is a new pending TOTP secret, shown once.
type TOTPEnrollment struct {
	OtpauthURL    string // otpauth://totp/<project>:<email>?…
	QRCodeDataURL string // data:image/png;base64,… of a 256×256 QR code of OtpauthURL
	Secret        string // base32, for manual entry
}

// totpAAD binds a sealed TOTP secret to its user's factor row.
func totpAAD(userID string) []byte { return []byte("totp:" + userID) }

// EnrollTOTP makes a new TOTP secret for the session user (issuer = the
// project's name, account = the user's email) and stores it sealed as a
// pending factor, replacing a pending one; VerifyTOTP may confirm it for
// TOTPPendingLifetime. 403 STEP_UP_REQUIRED without recent
// authentication (requireRecentAuth), checked first; then 409
// ALREADY_ENROLLED once the factor is enrolled.
func (s *Service) EnrollTOTP(ctx context.Context, pr *Principal, m Meta) (*TOTPEnrollment, error) {
	u, p, err := s.sessionUserProject(ctx, pr)
	if err != nil {
		return nil, err
	}
	key, err := totp.Generate(p.Name, u.Email)
	if err != nil {
		return nil, internal(err)
	}
	qr, err := totp.QRDataURL(key.URL)
	if err != nil {
		return nil, internal(err)
	}
	sealed, err := s.keys.Seal(key.Secret, totpAAD(u.ID))
	if err != nil {
		return nil, internal(err)
	}
	a := s.attempt(ctx, u.ProjectID, "totp", "enroll", m)
	err = a.update(func(tx store.Tx) error {
		u, err := s.sessionUserTx(tx, pr)
		if err != nil {
			return err
		}
		a.of(u)
		// One time for the check and the enrolment: confirming it checks
		// the session again as of CreatedAt.
		now := s.now().UTC()
		en, err := requireRecentAuth(tx, pr, now)
		if isAuthError(err) {
			return a.fail(tx, err)
		} else if err != nil {
			return err
		}
		if en.TOTP {
			return a.fail(tx, ErrAlreadyEnrolled)
		}
		f := &store.Factor{UserID: u.ID, ProjectID: u.ProjectID, Kind: factorTOTP, Status: factorPending,
			Secret: sealed, CreatedAt: now}
		if err := tx.PutFactor(f); err != nil {
			return err
		}
		return a.ok(tx)
	})
	if err := a.result(err); err != nil {
		return nil, err
	}
	return &TOTPEnrollment{OtpauthURL: key.URL, QRCodeDataURL: qr, Secret: key.Base32}, nil
}

// VerifyTOTP checks a code against the session user's TOTP factor: the
// current step ±1, and only a step newer than the last accepted one. The
// first correct code enrolls a pending factor (event totp.enrolled);
// later ones are step-up checks. A correct code resets the failure count
// and records a step-up on the session. Confirming a pending factor
// adds a way in: it needs the recent authentication enrolling needed,
// checked again now (requireRecentAuth as of the enrolment; the account
// may have got a factor since), and it makes the factor the account's
// first one, or another (factorAdded). Errors: 400 VALIDATION_ERROR for
// an empty or non-digit code; 404 TOTP_NOT_ENROLLED without a factor,
// or with a pending one older than TOTPPendingLifetime (deleted); 403
// STEP_UP_REQUIRED confirming a pending one without recent
// authentication (no try counted); 401 VERIFICATION_FAILED for a wrong
// or reused code (each counts as a failure), for every try during a
// lockout (totpLockout; tries then count nothing) and, after
// TOTPFailureCap consecutive failures, for every try until a
// backup-code login or ResetTOTP.
func (s *Service) VerifyTOTP(ctx context.Context, pr *Principal, code string, m Meta) error {
	a := s.attempt(ctx, pr.ProjectID, "totp", "verify", m)
	if err := checkCodeShape(code); err != nil {
		return s.rejectStepUp(pr, a, err)
	}
	err := a.update(func(tx store.Tx) error {
		u, err := s.sessionUserTx(tx, pr)
		if err != nil {
			return err
		}
		a.of(u)
		f, err := tx.Factor(u.ID, factorTOTP)
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, ErrTOTPNotEnrolled)
		} else if err != nil {
			return err
		}
		now := s.now().UTC()
		enrolling := f.Status != factorEnrolled
		var before store.Enrolled
		if enrolling {
			if !now.Before(f.CreatedAt.Add(TOTPPendingLifetime)) {
				if err := tx.DeleteFactor(u.ID, factorTOTP); err != nil {
					return err
				}
				return a.fail(tx, errTOTPPendingExpired)
			}
			if before, err = requireRecentAuth(tx, pr, f.CreatedAt); isAuthError(err) {
				return a.fail(tx, err)
			} else if err != nil {
				return err
			}
		}
		if f.Failures >= TOTPFailureCap {
			return a.fail(tx, errTOTPCapped)
		}
		if now.Before(f.LockedUntil) {
			return a.fail(tx, errTOTPLocked)
		}
		secret, err := s.keys.Open(f.Secret, totpAAD(u.ID))
		if err != nil {
			return a.fail(tx, ErrInternal.Because(err))
		}
		step, matched := totp.Match(secret, code, now)
		if !matched || step <= f.LastStep {
			f.Failures++
			if d := totpLockout(f.Failures); d > 0 {
				f.LockedUntil = now.Add(d)
			}
			if err := tx.PutFactor(f); err != nil {
				return err
			}
			if matched {
				return a.fail(tx, errTOTPReused)
			}
			return a.fail(tx, ErrVerificationFailed)
		}
		f.LastStep, f.Failures, f.LockedUntil = step, 0, time.Time{}
		if enrolling {
			f.Status, f.EnrolledAt = factorEnrolled, &now
			if err := s.emit(tx, u.ProjectID, "totp.enrolled", map[string]string{"user_id": u.ID}); err != nil {
				return err
			}
			if err := factorAdded(tx, u.ID, before, factorTOTP); err != nil {
				return err
			}
		}
		if err := tx.PutFactor(f); err != nil {
			return err
		}
		if err := s.markProof(tx, pr.SessionID, amrTOTP, now); err != nil {
			return err
		}
		return a.ok(tx)
	})
	return a.result(err)
}

// clearTOTPFailures resets userID's TOTP failure count and lockout inside
// tx (a backup-code login, an admin reset); ErrNotFound without a factor.
func clearTOTPFailures(tx store.Tx, userID string) error {
	return clearFactorFailures(tx, userID, factorTOTP)
}

// ResetTOTP clears a user's TOTP failure count and lockout, the
// permanent one after TOTPFailureCap failures included, and keeps the
// enrolment (POST /api/v1/admin/users/:id/factors/totp/reset). The reset
// is recorded as an authentication event (method totp, action reset).
// Errors: 404 USER_NOT_FOUND, 404 TOTP_NOT_ENROLLED when the user has no
// TOTP factor.
func (s *Service) ResetTOTP(ctx context.Context, userID string, m Meta) error {
	a := s.attempt(ctx, "", "totp", "reset", m)
	err := a.update(func(tx store.Tx) error {
		u, err := tx.User(userID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		a.of(u)
		if err := clearTOTPFailures(tx, u.ID); errors.Is(err, store.ErrNotFound) {
			return ErrTOTPNotEnrolled
		} else if err != nil {
			return err
		}
		return a.ok(tx)
	})
	return a.result(err)
}

// rejectStepUp records a step-up try refused before any factor is read
// (a malformed code) against the session's user and returns fail; an
// invalid session answers with its own error instead.
func (s *Service) rejectStepUp(pr *Principal, a *attempt, fail error) error {
	u, err := s.SessionUser(a.ctx, pr)
	if err != nil {
		return err
	}
	return a.of(u).reject(fail)
}
