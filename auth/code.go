package auth

import (
	"crypto/subtle"
	"time"

	"latchkey/store"
)

// codeRules are how one use case checks the one-time codes it sends: the
// wrong guesses a code takes, the failures it answers, and the checks and
// counting of its own between those steps.
type codeRules struct {
	// max is the wrong guesses a code takes: one that took them is
	// refused with locked, whatever is guessed.
	max int
	// expired, locked and wrong are the failures for a code past its
	// expiry (which is deleted), for a code that took max wrong guesses,
	// and for a wrong guess; last, when not nil, is the failure of the
	// wrong guess that uses up the code's attempts.
	expired, locked, wrong, last error
	// afterExpiry, when not nil, runs once the code is found unexpired:
	// a failure (or a store error) it returns ends the check.
	afterExpiry func() (failure, err error)
	// wrongGuess, when not nil, runs once a wrong guess is counted on the
	// code: the caller's own counting (the enrolled phone's failures).
	wrongGuess func() error
	// address, when not empty, is the address (of project projectID) the
	// code was sent to: its failed guesses within AddressFailWindow are
	// counted, and capped (AddressFailLimit, whatever code they were at:
	// locked).
	address, projectID string
}

// addressCodeRules are the rules of a code sent to address email of
// project projectID (email sign-in, address verification and change):
// OTPMaxAttempts, the last wrong guess told the code is locked, and the
// address's failed guesses counted and capped.
// errCodeUsedUp is the wrong guess that used up an address code's
// attempts: INVALID_CODE, saying the code is now locked.
var errCodeUsedUp = ErrInvalidCode.With(ErrCodeLocked.Message)

func addressCodeRules(projectID, email string) codeRules {
	return codeRules{max: OTPMaxAttempts, expired: ErrCodeExpired, locked: ErrCodeLocked,
		wrong: ErrInvalidCode, last: errCodeUsedUp,
		address: email, projectID: projectID}
}

// checkCode checks guess h (its keyed hash) against the pending code c
// inside tx at now, under r, in this order: past its expiry, c is deleted
// (r.expired); r.afterExpiry; c took r.max wrong guesses (r.locked);
// r.address's failed guesses used up (r.locked); the
// guess, in constant time. A wrong guess is counted on c (Attempts, kept
// with PutCode), by r.wrongGuess and on r.address, and answers
// r.last when it used up c's attempts, else r.wrong. It returns the
// failure to record, nil when h is right (the caller goes on, and deletes
// c when it succeeds), or the store's error.
func checkCode(tx store.Tx, c *store.Code, h []byte, now time.Time, r codeRules) (failure, err error) {
	if !now.Before(c.ExpiresAt) {
		if err := tx.DeleteCode(c); err != nil {
			return nil, err
		}
		return r.expired, nil
	}
	if r.afterExpiry != nil {
		if failure, err := r.afterExpiry(); failure != nil || err != nil {
			return failure, err
		}
	}
	if c.Attempts >= r.max {
		return r.locked, nil
	}
	var guesses guessLog
	if r.address != "" {
		if guesses, err = addressGuesses(tx, r.projectID, r.address, now); err != nil {
			return nil, err
		}
		if guesses.locked() {
			return r.locked, nil
		}
	}
	if subtle.ConstantTimeCompare(h, c.Hash) == 1 {
		return nil, nil
	}
	c.Attempts++
	if err := tx.PutCode(c); err != nil {
		return nil, err
	}
	if r.wrongGuess != nil {
		if err := r.wrongGuess(); err != nil {
			return nil, err
		}
	}
	if r.address != "" {
		if err := guesses.fail(tx, r.projectID, r.address, now); err != nil {
			return nil, err
		}
	}
	if r.last != nil && c.Attempts >= r.max {
		return r.last, nil
	}
	return r.wrong, nil
}
