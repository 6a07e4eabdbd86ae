package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"latchkey/store"
)

// SMS parameters: codes live 10 minutes and take 5 tries (docs/api.md,
// "SMS"). The send throttle (one per 30 s, ten per hour per user) is
// latchkey's own, against SMS pumping.
//
// The enrolled phone's codes also have TOTP's guessing limits (a new
// code every 30 seconds would otherwise allow guesses without end):
// wrong codes of the enrolled phone are counted on the SMS factor,
// consecutively over all its codes, and each run of SMSMaxFailures locks
// every try for as long as TOTP's run would (totpLockout); SMSFailureCap
// consecutive failures lock it until a backup-code login or an admin
// reset (ResetSMS). A code sent to another phone is not the factor's:
// only the session that asked for it, with recent authentication, can
// use it (SendSMSCode), and its tries are its own five.
const (
	SMSLifetime     = 10 * time.Minute
	SMSMaxAttempts  = 5
	SMSSendInterval = 30 * time.Second
	SMSSendsPerHour = 10
	SMSMaxFailures  = TOTPMaxFailures
	SMSFailureCap   = TOTPFailureCap
	codeKindSMS     = "sms"
	factorSMS       = "sms"
	hashDomainSMS   = "sms"
	throttleSMSSend = "sms_send"
)

// smsSends throttles SMS sends per user.
var smsSends = sendLimit{SMSSendInterval, SMSSendsPerHour}

// errSMSThrottled is the 429 of an SMS send over the per-user throttle.
var errSMSThrottled = ErrTooManyRequests.With("Too many SMS codes sent for this account; wait before asking again.")

// The enrolled phone's lockouts: 401 VERIFICATION_FAILED as TOTP's.
var (
	errSMSLocked = ErrVerificationFailed.withCategory(CatRateLimited).With("Too many failed attempts. Try again later.")
	errSMSCapped = ErrVerificationFailed.withCategory(CatRateLimited).With("Too many failed attempts. Sign in with a backup code to use SMS again.")
)

// A texted code's failures: 401 VERIFICATION_FAILED, expired, or with
// its attempts used up.
var (
	errSMSCodeExpired = ErrVerificationFailed.withCategory(CatExpired)
	errSMSCodeLocked  = ErrVerificationFailed.withCategory(CatRateLimited)
)

// smsHash is the keyed hash a texted code is kept as: bound to the
// user, the phone and the session that asked for it, so that only that
// session can use the code.
func (s *Service) smsHash(userID, phone, sessionID, code string) [32]byte {
	return s.keys.HashString(hashDomainSMS, userID+"\x00"+phone+"\x00"+sessionID+"\x00"+code)
}

// ValidPhone reports whether phone is E.164 as latchkey takes it: "+"
// then 8 to 15 ASCII digits, nothing else (no spaces to normalise).
func ValidPhone(phone string) bool {
	if len(phone) < 9 || len(phone) > 16 || phone[0] != '+' {
		return false
	}
	for i := 1; i < len(phone); i++ {
		if phone[i] < '0' || phone[i] > '9' {
			return false
		}
	}
	return true
}

// SendSMSCode texts a 6-digit code for the session user: to phone, or,
// once SMS is enrolled and phone is empty or the enrolled one, to the
// enrolled phone. The code is bound to this session (smsHash): another
// session cannot use it. Any other phone (the first one too) needs
// recent authentication (requireRecentAuth): on an account with SMS
// enrolled, TOTP or a passkey, a proof on this session within
// StepUpWindow by one of them (the enrolled phone's code, a TOTP code, a
// passkey) or a backup-code sign-in; else 403 STEP_UP_REQUIRED. The
// code's CreatedAt is the time that was checked at (VerifySMSCode checks
// again as of then). A bad phone, or none
// while SMS is not enrolled, is 400 VALIDATION_ERROR. The provider is
// called outside any transaction; a failed send stores nothing and is 502
// SEND_FAILED. Sends the provider
// accepted are throttled per user (one per 30 s, ten per hour): over
// that, 429 TOO_MANY_REQUESTS with a Retry-After and no message. A send
// holds its slot from before the provider call, so concurrent sends
// cannot slip past the throttle together; a failed send gives the slot
// back.
func (s *Service) SendSMSCode(ctx context.Context, pr *Principal, phone string, m Meta) error {
	u, err := s.SessionUser(ctx, pr)
	if err != nil {
		return err
	}
	a := s.attempt(ctx, u.ProjectID, "sms", "send", m).of(u)
	if phone != "" && !ValidPhone(phone) {
		return a.reject(Invalid("phone must be in E.164 format: + then 8 to 15 digits."))
	}
	p, err := s.project(ctx, u.ProjectID)
	if err != nil {
		return internal(err)
	}
	code := randomDigits(6)
	slot, phone, err := s.reserveSMSSend(pr, a, phone)
	if err != nil {
		return err
	}
	body := fmt.Sprintf("Your %s code is %s. It expires in %d minutes.", p.Name, code, int(SMSLifetime/time.Minute))
	err = s.sms.SendSMS(ctx, phone, body)
	// What follows records the provider's answer: the text went out, or
	// the slot goes back. A caller that hangs up now must not make the
	// store forget either.
	a.ctx = context.WithoutCancel(a.ctx)
	if err != nil {
		fail := ErrSendFailed.Because(err)
		err := a.update(func(tx store.Tx) error {
			if err := s.releaseSMSSend(tx, u, slot); err != nil {
				return err
			}
			return a.fail(tx, fail)
		})
		if err != nil {
			s.log.Error("release SMS send slot", "err", err)
		}
		return fail
	}
	h := s.smsHash(u.ID, phone, pr.SessionID, code)
	return a.result(a.update(func(tx store.Tx) error {
		now := s.now().UTC()
		c := &store.Code{Kind: codeKindSMS, ProjectID: u.ProjectID, Subject: u.ID, Phone: phone, Hash: h[:], CreatedAt: slot, ExpiresAt: now.Add(SMSLifetime)}
		if err := tx.PutCode(c); err != nil {
			return err
		}
		return a.ok(tx)
	}))
}

// reserveSMSSend decides, in one transaction that checks the session
// again, where a send goes (phone, or the enrolled phone when phone is
// empty), refuses it (recorded) without a phone, without recent
// authentication for a phone other than the enrolled one
// (requireRecentAuth), without a provider, or over the user's throttle
// (the 429 with the wait), and otherwise takes a throttle slot at the
// current time. It returns the slot and the phone to text. Refusals are
// recorded as a's failures.
func (s *Service) reserveSMSSend(pr *Principal, a *attempt, phone string) (time.Time, string, error) {
	slot := s.now().UTC()
	err := a.update(func(tx store.Tx) error {
		u, err := s.sessionUserTx(tx, pr)
		if err != nil {
			return err
		}
		a.of(u)
		f, err := tx.Factor(u.ID, factorSMS)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		enrolled := f != nil && f.Status == factorEnrolled
		switch {
		case phone == "" && !enrolled:
			return a.fail(tx, Invalid("phone is required: no phone is enrolled for SMS yet."))
		case phone == "":
			phone = f.Phone
		case !enrolled || phone != f.Phone:
			_, err := requireRecentAuth(tx, pr, slot)
			if enrolled && errors.Is(err, ErrStepUpRequired) {
				err = ErrStepUpRequired // its own words: the current phone
			}
			if isAuthError(err) {
				return a.fail(tx, err)
			} else if err != nil {
				return err
			}
		}
		if s.sms == nil {
			return a.fail(tx, ErrSendFailed.Because(errors.New("no SMS provider configured")))
		}
		th, err := tx.Throttle(throttleSMSSend, u.ProjectID, u.ID)
		if err != nil {
			return err
		}
		if ok, wait := smsSends.allow(th, slot); !ok {
			return a.fail(tx, errSMSThrottled.WithRetry(wait))
		}
		th.Sends = append(th.Sends, slot)
		return tx.PutThrottle(throttleSMSSend, u.ProjectID, u.ID, th)
	})
	return slot, phone, a.result(err)
}

// releaseSMSSend gives back a slot taken by reserveSMSSend, inside tx.
func (s *Service) releaseSMSSend(tx store.Tx, u *store.User, slot time.Time) error {
	th, err := tx.Throttle(throttleSMSSend, u.ProjectID, u.ID)
	if err != nil {
		return err
	}
	for i, t := range th.Sends {
		if t.Equal(slot) {
			th.Sends = append(th.Sends[:i], th.Sends[i+1:]...)
			break
		}
	}
	return tx.PutThrottle(throttleSMSSend, u.ProjectID, u.ID, th)
}

// enrollPhone records phone, which is not the enrolled one, as u's SMS
// factor inside tx (f: the factor as it was, nil without one; before:
// what the account had enrolled): the factor becomes enrolled, or the
// new phone replaces the old one with a clean failure count, and
// sms.enrolled is emitted (factorAdded follows).
func (s *Service) enrollPhone(tx store.Tx, u *store.User, f *store.Factor, before store.Enrolled, phone string, now time.Time) error {
	if f == nil {
		f = &store.Factor{UserID: u.ID, ProjectID: u.ProjectID, Kind: factorSMS, CreatedAt: now}
	}
	f.Status, f.Phone, f.EnrolledAt = factorEnrolled, phone, &now
	f.Failures, f.LockedUntil = 0, time.Time{}
	if err := tx.PutFactor(f); err != nil {
		return err
	}
	if err := s.emit(tx, u.ProjectID, "sms.enrolled", map[string]string{"user_id": u.ID}); err != nil {
		return err
	}
	return factorAdded(tx, u.ID, before, factorSMS)
}

// VerifySMSCode checks the texted code, which must have been asked for
// by this session. The enrolled phone's code is a step-up; a code sent
// to another phone (or the first) adds or moves a way in: it needs the
// recent authentication the send needed, checked again now
// (requireRecentAuth as of the send; the account may have got a factor
// since; 403 STEP_UP_REQUIRED, the code kept), then records the phone
// as the user's SMS factor, replacing an enrolled phone (enrollPhone,
// sms.enrolled). Either way the session has proven sms now. An empty or
// non-digit code is 400 VALIDATION_ERROR (no try counted); wrong,
// reused, expired, locked or missing codes, and a code another session
// asked for, are 401 VERIFICATION_FAILED, recorded under their own
// categories. Wrong codes of the enrolled phone also count on the
// factor (see SMSMaxFailures): during a lockout and past SMSFailureCap
// every try of the enrolled phone's code is 401 VERIFICATION_FAILED and
// counts nothing.
func (s *Service) VerifySMSCode(ctx context.Context, pr *Principal, code string, m Meta) error {
	a := s.attempt(ctx, pr.ProjectID, "sms", "verify", m)
	if err := checkCodeShape(code); err != nil {
		return s.rejectStepUp(pr, a, err)
	}
	err := a.update(func(tx store.Tx) error {
		u, err := s.sessionUserTx(tx, pr)
		if err != nil {
			return err
		}
		a.of(u)
		c, err := tx.Code(codeKindSMS, u.ProjectID, u.ID)
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, ErrVerificationFailed)
		} else if err != nil {
			return err
		}
		now := s.now().UTC()
		var (
			f      *store.Factor
			own    bool // the enrolled phone's code
			before store.Enrolled
		)
		h := s.smsHash(u.ID, c.Phone, pr.SessionID, code)
		failure, err := checkCode(tx, c, h[:], now, codeRules{
			max:     SMSMaxAttempts,
			expired: errSMSCodeExpired,
			locked:  errSMSCodeLocked,
			wrong:   ErrVerificationFailed,
			// The enrolled phone's lockout, or recent authentication to
			// enroll another phone.
			afterExpiry: func() (error, error) {
				var err error
				f, err = tx.Factor(u.ID, factorSMS)
				if errors.Is(err, store.ErrNotFound) {
					f = nil
				} else if err != nil {
					return nil, err
				}
				enrolled := f != nil && f.Status == factorEnrolled
				own = enrolled && c.Phone == f.Phone
				if own {
					if f.Failures >= SMSFailureCap {
						return errSMSCapped, nil
					}
					if now.Before(f.LockedUntil) {
						return errSMSLocked, nil
					}
					return nil, nil
				}
				before, err = requireRecentAuth(tx, pr, c.CreatedAt)
				if enrolled && errors.Is(err, ErrStepUpRequired) {
					err = ErrStepUpRequired // its own words: the current phone
				}
				if isAuthError(err) {
					return err, nil
				}
				return nil, err
			},
			// A wrong guess at the enrolled phone's code counts toward
			// its cumulative lockout.
			wrongGuess: func() error {
				if !own {
					return nil
				}
				f.Failures++
				if d := totpLockout(f.Failures); d > 0 {
					f.LockedUntil = now.Add(d)
				}
				return tx.PutFactor(f)
			},
		})
		if err != nil {
			return err
		} else if failure != nil {
			return a.fail(tx, failure)
		}
		if err := tx.DeleteCode(c); err != nil {
			return err
		}
		if own {
			if f.Failures != 0 || !f.LockedUntil.IsZero() {
				f.Failures, f.LockedUntil = 0, time.Time{}
				if err := tx.PutFactor(f); err != nil {
					return err
				}
			}
		} else if err := s.enrollPhone(tx, u, f, before, c.Phone, now); err != nil {
			return err
		}
		if err := s.markProof(tx, pr.SessionID, amrSMS, now); err != nil {
			return err
		}
		return a.ok(tx)
	})
	return a.result(err)
}

// clearFactorFailures resets userID's failure count and lockout of the
// factor of kind inside tx (a backup-code login, an admin reset);
// ErrNotFound without such a factor.
func clearFactorFailures(tx store.Tx, userID, kind string) error {
	f, err := tx.Factor(userID, kind)
	if err != nil {
		return err
	}
	if f.Failures == 0 && f.LockedUntil.IsZero() {
		return nil
	}
	f.Failures, f.LockedUntil = 0, time.Time{}
	return tx.PutFactor(f)
}

// ResetSMS clears a user's SMS failure count and lockout, the permanent
// one after SMSFailureCap failures included, and keeps the enrolled
// phone (POST /api/v1/admin/users/:id/factors/sms/reset). The reset is
// recorded as an authentication event (method sms, action reset).
// Errors: 404 USER_NOT_FOUND, 404 SMS_NOT_ENROLLED when the user has no
// enrolled phone.
func (s *Service) ResetSMS(ctx context.Context, userID string, m Meta) error {
	a := s.attempt(ctx, "", "sms", "reset", m)
	err := a.update(func(tx store.Tx) error {
		u, err := tx.User(userID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		a.of(u)
		f, err := tx.Factor(u.ID, factorSMS)
		if errors.Is(err, store.ErrNotFound) || (err == nil && f.Status != factorEnrolled) {
			return ErrSMSNotEnrolled
		} else if err != nil {
			return err
		}
		if err := clearFactorFailures(tx, u.ID, factorSMS); err != nil {
			return err
		}
		return a.ok(tx)
	})
	return a.result(err)
}
