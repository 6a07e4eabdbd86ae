package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	"latchkey/store"
)

// SMS parameters: codes live 10 minutes and take 5 tries (docs/api.md,
// "SMS"). The send throttle (one per 30 s, ten per hour per user) is
// latchkey's own, against SMS pumping.
const (
	SMSLifetime     = 10 * time.Minute
	SMSMaxAttempts  = 5
	SMSSendInterval = 30 * time.Second
	SMSSendsPerHour = 10
	codeKindSMS     = "sms"
	factorSMS       = "sms"
	hashDomainSMS   = "sms"
	throttleSMSSend = "sms_send"
)

// smsSends throttles SMS sends per user.
var smsSends = sendLimit{SMSSendInterval, SMSSendsPerHour}

// errSMSThrottled is the 429 of an SMS send over the per-user throttle.
var errSMSThrottled = ErrTooManyRequests.With("Too many SMS codes sent for this account; wait before asking again.")

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
// enrolled phone. Any other phone (the first one too) needs recent
// authentication (requireRecentAuth): on an account with SMS enrolled,
// TOTP or a passkey, a proof on this session within StepUpWindow by one
// of them (the enrolled phone's code, a TOTP code, a passkey) or a
// backup-code sign-in; else 403 STEP_UP_REQUIRED. A bad phone, or none
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
	h := s.keys.HashString(hashDomainSMS, u.ID+"\x00"+phone+"\x00"+code)
	return a.result(a.update(func(tx store.Tx) error {
		now := s.now().UTC()
		c := &store.Code{Kind: codeKindSMS, ProjectID: u.ProjectID, Subject: u.ID, Phone: phone, Hash: h[:], CreatedAt: now, ExpiresAt: now.Add(SMSLifetime)}
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

// enrollPhone records phone as u's SMS factor inside tx. sms.enrolled is
// emitted only when the factor becomes enrolled or its phone changes
// (the new phone replaces the old one); a code of the enrolled phone
// changes nothing there.
func (s *Service) enrollPhone(tx store.Tx, u *store.User, phone string, now time.Time) error {
	f, err := tx.Factor(u.ID, factorSMS)
	if errors.Is(err, store.ErrNotFound) {
		f = &store.Factor{UserID: u.ID, ProjectID: u.ProjectID, Kind: factorSMS, CreatedAt: now}
	} else if err != nil {
		return err
	}
	if f.Status == factorEnrolled && f.Phone == phone {
		return nil
	}
	f.Status, f.Phone, f.EnrolledAt = factorEnrolled, phone, &now
	if err := tx.PutFactor(f); err != nil {
		return err
	}
	return s.emit(tx, u.ProjectID, "sms.enrolled", map[string]string{"user_id": u.ID})
}

// VerifySMSCode checks the texted code and records the phone as the
// user's SMS factor, replacing an enrolled phone (sms.enrolled). Either
// way, the enrolled phone's own code or a new phone's, the session has
// proven sms now. An empty or non-digit code is 400 VALIDATION_ERROR
// (no try counted); wrong, reused, expired, locked or missing codes are
// 401 VERIFICATION_FAILED, recorded under their own categories.
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
		if !now.Before(c.ExpiresAt) {
			if err := tx.DeleteCode(c); err != nil {
				return err
			}
			return a.fail(tx, ErrVerificationFailed.withCategory(CatExpired))
		}
		if c.Attempts >= SMSMaxAttempts {
			return a.fail(tx, ErrVerificationFailed.withCategory(CatRateLimited))
		}
		h := s.keys.HashString(hashDomainSMS, u.ID+"\x00"+c.Phone+"\x00"+code)
		if subtle.ConstantTimeCompare(h[:], c.Hash) != 1 {
			c.Attempts++
			if err := tx.PutCode(c); err != nil {
				return err
			}
			return a.fail(tx, ErrVerificationFailed)
		}
		if err := tx.DeleteCode(c); err != nil {
			return err
		}
		if err := s.enrollPhone(tx, u, c.Phone, now); err != nil {
			return err
		}
		if err := s.markProof(tx, pr.SessionID, amrSMS, now); err != nil {
			return err
		}
		return a.ok(tx)
	})
	return a.result(err)
}
