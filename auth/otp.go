package auth

import (
	"context"
	"errors"
	"time"

	"latchkey/store"
)

// Email OTP parameters: a code lives 10 minutes and takes 5 tries; one
// send per 30 s and ten per hour per address (docs/api.md, "Email OTP").
const (
	OTPLifetime    = 10 * time.Minute
	OTPMaxAttempts = 5
	SendInterval   = 30 * time.Second
	SendsPerHour   = 10
	codeKindOTP    = "otp"
	hashDomainOTP  = "otp"
)

// Guessing limit over time (NIST SP 800-63B 5.2.2; docs/security.md,
// "Guessing limits and lockouts"): at
// most AddressFailLimit wrong email codes per address in any rolling
// AddressFailWindow, over all its codes (otp/verify and the address
// confirmations of /user/email/verify). Past it those verifies answer
// 401 INVALID_CODE with the locked text; magic links still work.
const (
	AddressFailLimit    = 50
	AddressFailWindow   = 24 * time.Hour
	throttleAddressFail = "email_fail"
)

// guessLog is an address's failed-guess history within the window.
type guessLog struct{ th *store.Throttle }

// addressGuesses reads the failed guesses at email's codes in the last
// AddressFailWindow (one index read).
func addressGuesses(tx store.Tx, projectID, email string, now time.Time) (guessLog, error) {
	th, err := tx.Throttle(throttleAddressFail, projectID, email)
	if err != nil {
		return guessLog{}, err
	}
	kept := th.Sends[:0]
	for _, t := range th.Sends {
		if now.Sub(t) < AddressFailWindow {
			kept = append(kept, t)
		}
	}
	th.Sends = kept
	return guessLog{th}, nil
}

// locked reports whether the address has used up its guesses.
func (g guessLog) locked() bool { return len(g.th.Sends) >= AddressFailLimit }

// fail records one more failed guess at email's codes inside tx; the row
// is kept from the sweep for the whole window.
func (g guessLog) fail(tx store.Tx, projectID, email string, now time.Time) error {
	g.th.Sends = append(g.th.Sends, now)
	g.th.KeepUntil = now.Add(AddressFailWindow)
	return tx.PutThrottle(throttleAddressFail, projectID, email, g.th)
}

// SendOTP emails a new 6-digit code to email, replacing any pending one.
// It returns once the message is queued: 400 VALIDATION_ERROR for a bad
// address, 403 USER_DISABLED, 429 TOO_MANY_REQUESTS past the throttle.
func (s *Service) SendOTP(ctx context.Context, p *store.Project, rawEmail string, m Meta) error {
	a := s.attempt(ctx, p.ID, "email_otp", "send", m)
	email, err := NormalizeEmail(rawEmail)
	if err != nil {
		return a.reject(err)
	}
	a.email = email
	if err := s.checkRisk(p, m); err != nil {
		return a.reject(err)
	}
	code := randomDigits(6)
	h := s.keys.HashString(hashDomainOTP, p.ID+"\x00"+email+"\x00"+code)
	says := store.MailContent{Project: p.Name, Code: code, TTLSeconds: int(OTPLifetime / time.Second)}
	return s.queueSend(a, p, codeKindOTP, says, func(tx store.Tx, now time.Time) error {
		return tx.PutCode(&store.Code{Kind: codeKindOTP, ProjectID: p.ID, Subject: email, Hash: h[:], CreatedAt: now, ExpiresAt: now.Add(OTPLifetime)})
	})
}

// queueSend is the shared body of OTP and magic-link sends to a.email:
// the message of kind that says says is rendered first, then the
// disabled check, the per-address throttle, the code or link row (made
// by put), the queued message and the event, in one transaction.
func (s *Service) queueSend(a *attempt, p *store.Project, kind string, says store.MailContent, put func(store.Tx, time.Time) error) error {
	email := a.email
	if err := a.prepareMail(p.ID, kind, email, says); err != nil {
		return a.result(err)
	}
	return a.result(a.batch(func(tx store.Tx) error {
		now := s.now().UTC()
		tx.PrefetchThrottle(kind, p.ID, email) // read with the user
		if u, err := tx.UserByEmail(p.ID, email); err == nil {
			a.userID = u.ID
			if u.Disabled {
				return a.fail(tx, ErrUserDisabled)
			}
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		th, err := tx.Throttle(kind, p.ID, email)
		if err != nil {
			return err
		}
		if ok, wait := emailSends.allow(th, now); !ok {
			if kind == codeKindMagic {
				return a.fail(tx, errTooManyLinks.WithRetry(wait))
			}
			return a.fail(tx, ErrTooManyRequests.WithRetry(wait))
		}
		th.Sends = append(th.Sends, now)
		if err := tx.PutThrottle(kind, p.ID, email, th); err != nil {
			return err
		}
		if err := put(tx, now); err != nil {
			return err
		}
		if err := a.queueMail(tx, p.ID, kind, email, says, now); err != nil {
			return err
		}
		return a.ok(tx)
	}))
}

// sendLimit is a send throttle: at most one send per interval and
// perHour sends in any rolling hour.
type sendLimit struct {
	interval time.Duration
	perHour  int
}

// emailSends throttles email codes and links per address and kind.
var emailSends = sendLimit{SendInterval, SendsPerHour}

// allow applies the throttle to th, dropping history older than an
// hour. When the send is refused, wait is how long until it would be
// allowed. A refused send is not recorded (the caller appends allowed
// ones).
func (l sendLimit) allow(th *store.Throttle, now time.Time) (ok bool, wait time.Duration) {
	kept := th.Sends[:0]
	for _, t := range th.Sends {
		if now.Sub(t) < time.Hour {
			kept = append(kept, t)
		}
	}
	th.Sends = kept
	if n := len(kept); n >= l.perHour {
		// The send that leaves the hour brings the count under the limit.
		wait = kept[n-l.perHour].Add(time.Hour).Sub(now)
	}
	if n := len(kept); n > 0 {
		wait = max(wait, kept[n-1].Add(l.interval).Sub(now))
	}
	return wait <= 0, wait
}

// OTPInput is the body of otp/verify.
type OTPInput struct {
	Email          string  `json:"email"`
	Code           string  `json:"code"`
	ExternalUserID *string `json:"externalUserId"`
	DeviceToken    string  `json:"deviceToken"`
}

// VerifyOTP checks an emailed code and signs the user in, creating the
// user on first sign-in and replacing an unverified account of the
// address (provenUser). Wrong, expired, missing and locked codes are 401
// INVALID_CODE with their own texts; a wrong code counts an attempt and
// a failed guess at the address, and an address with AddressFailLimit
// failed guesses in AddressFailWindow answers the locked text.
func (s *Service) VerifyOTP(ctx context.Context, p *store.Project, in OTPInput, m Meta) (*Login, error) {
	return s.verifyOTP(ctx, p, in, m, loginAs{method: "email_otp"})
}

// verifyOTP is VerifyOTP signing in as as says (the API's email_otp
// session, or a hosted sign-in's).
func (s *Service) verifyOTP(ctx context.Context, p *store.Project, in OTPInput, m Meta, as loginAs) (*Login, error) {
	a := s.attempt(ctx, p.ID, "email_otp", "verify", m)
	email, err := NormalizeEmail(in.Email)
	if err != nil {
		return nil, a.reject(err)
	}
	a.email = email
	if err := checkCodeShape(in.Code); err != nil {
		return nil, a.reject(err)
	}
	ext, err := checkExternalID(in.ExternalUserID)
	if err != nil {
		return nil, a.reject(err)
	}
	if in.DeviceToken != "" {
		a.m.DeviceToken = in.DeviceToken
	}
	if err := a.reserveRisk(p, subject{email: email}); err != nil {
		return nil, a.reject(err)
	}
	defer a.release()
	h := s.keys.HashString(hashDomainOTP, p.ID+"\x00"+email+"\x00"+in.Code)
	var login *Login
	err = a.batch(func(tx store.Tx) error {
		login = nil
		now := s.now()
		disabled := false
		// The code and the address's guesses are read with the user.
		tx.PrefetchCode(codeKindOTP, p.ID, email)
		tx.PrefetchThrottle(throttleAddressFail, p.ID, email)
		known, knownErr := tx.UserByEmail(p.ID, email)
		if knownErr == nil {
			a.userID, disabled = known.ID, known.Disabled
		}
		// A disabled account answers 403 whatever the code (otp/send
		// already says so); a pending code is left as it is.
		if disabled {
			return a.fail(tx, ErrUserDisabled)
		}
		c, err := tx.Code(codeKindOTP, p.ID, email)
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, errNoPendingCode)
		} else if err != nil {
			return err
		}
		if failure, err := checkCode(tx, c, h[:], now, addressCodeRules(p.ID, email)); err != nil {
			return err
		} else if failure != nil {
			return a.fail(tx, failure)
		}
		u, isNew, err := s.provenUserRead(tx, p, email, known, knownErr)
		if err != nil {
			return err
		}
		a.userID = u.ID
		if u.Disabled {
			return a.fail(tx, ErrUserDisabled)
		}
		if err := s.attachExternalID(tx, u, ext); isExternalIDConflict(err) {
			if isNew {
				return err // roll back: the user must not be created
			}
			return a.fail(tx, err)
		} else if err != nil {
			return err
		}
		if err := tx.DeleteCode(c); err != nil {
			return err
		}
		as.newUser = isNew
		login, err = s.startLoginAs(tx, p, u, as, a.m)
		if err != nil {
			return err
		}
		login.IsNewUser = isNew
		return a.ok(tx)
	})
	if isExternalIDConflict(err) {
		return nil, a.reject(err)
	}
	if err := a.result(err); err != nil {
		return nil, err
	}
	return s.finish(login)
}

func isExternalIDConflict(err error) bool {
	return errors.Is(err, ErrExternalIDConflict) || errors.Is(err, ErrExternalIDMismatch)
}

// Rejected records a send or verify whose request body could not be read
// (malformed JSON, wrong field types) as a failed authentication event of
// project p, and returns err. Handlers call it so that every send and
// verify leaves an event (docs/api.md, "Failure categories").
func (s *Service) Rejected(ctx context.Context, p *store.Project, method, action string, err error, m Meta) error {
	projectID := ""
	if p != nil {
		projectID = p.ID
	}
	return s.attempt(ctx, projectID, method, action, m).reject(err)
}

// The refusals of a code's shape and of a code when none is pending.
var (
	errCodeRequired  = Invalid("code is required.")
	errCodeNotDigits = Invalid("code must be a string of digits.")
	errNoPendingCode = ErrInvalidCode.With("No code is pending for this address. Request a new code.")
)

// checkCodeShape rejects an empty or non-digit code (400); the length is
// not checked here, a wrong length is simply a wrong code.
func checkCodeShape(code string) error {
	if code == "" {
		return errCodeRequired
	}
	if len(code) > 16 {
		return errCodeNotDigits
	}
	for i := 0; i < len(code); i++ {
		if code[i] < '0' || code[i] > '9' {
			return errCodeNotDigits
		}
	}
	return nil
}

// randomDigits returns n decimal digits from crypto/rand.
func randomDigits(n int) string {
	return randomString("0123456789", n)
}
