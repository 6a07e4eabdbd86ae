package auth

import (
	"errors"
	"strings"
	"time"

	"latchkey/store"
)

// How a session was proven, and recent authentication (sudo mode).
//
// Every session records its proofs (store.Session.Proofs): the method
// of its sign-in at its IssuedAt, then each later proof on it (a TOTP
// code, an SMS code, a passkey registered from it), each method once with
// the time it was last proven. Methods are amr values: otp (an email
// code), link (a magic link), passkey, backup_code, totp, sms,
// oauth:<provider>, external, and mfa for a step-up of a session stored
// before sessions kept their proofs (store.LegacyProofs).
//
// A session holder could otherwise add or move a way into the account
// and keep it for good: generate backup codes (a backup-code sign-in is
// a new session), enroll TOTP, text a code to a phone that is not the
// enrolled one (which then replaces it, or is the first), add a passkey,
// change the address, delete the account. Those actions need recent
// authentication (requireRecentAuth), and what counts depends on the
// account:
//
//   - An account with TOTP enrolled, SMS enrolled or a passkey
//     ("guarded") needs a proof on this session, within StepUpWindow, by
//     one of the factors it has (a TOTP code, a code texted to the
//     enrolled phone, a passkey), or, for recovery, a backup-code
//     sign-in. An email code, a magic link, a provider sign-in or an
//     external confirm never counts there: they prove the address, which
//     these factors are there to guard.
//   - An account with none of them needs a proof of any kind on this
//     session (its sign-in or a later one) within StepUpWindow.
//
// A passkey ceremony (sign-up or sign-in) proves the passkey for the
// session it creates; a factor's enrollment (a TOTP verify that enrolls,
// an SMS verify that enrolls, a passkey registered from a session)
// proves that factor on the session that completed it, then.
//
// Removing a passkey from a session is such an action too: it may leave
// the account without a factor, where any fresh sign-in counts.
//
// An action that starts and finishes in two calls (a passkey added from
// a session, a code texted to a phone that is not the enrolled one, a
// pending TOTP confirmed, a new address confirmed) is checked at both:
// the finishing call checks again, against the factors the account has
// then, whether the finishing session was recently authenticated when
// the action started (a proof made since counts too). A finish
// therefore fails only when the account gained a factor meanwhile that
// the session has not proven. The challenge or code of such an action
// is bound to the session that started it, and another session cannot
// finish it.
//
// When an account without any factor gets its first one, its backup
// codes are deleted (factorAdded): they were made without any factor's
// proof, and would otherwise count as that factor's recovery. Any change
// to the account's factors drops a pending TOTP enrolment.

// StepUpWindow is how recent a session's proof must be for the actions
// that need recent authentication.
const StepUpWindow = 10 * time.Minute

// amr values: how a session was proven (store.Proof.Method).
const (
	amrOTP        = "otp"
	amrLink       = "link"
	amrPasskey    = "passkey"
	amrBackupCode = "backup_code"
	amrTOTP       = "totp"
	amrSMS        = "sms"
	amrExternal   = "external"
	amrMFA        = "mfa" // a step-up of a session stored before proofs: TOTP or SMS
)

// signInAMR returns the amr value of a sign-in method (store.Session.Method):
// email_otp is otp, magic_link link, external:<method> external; passkey,
// backup_code and oauth:<provider> are their own.
func signInAMR(method string) string {
	switch {
	case method == "email_otp":
		return amrOTP
	case method == "magic_link":
		return amrLink
	case strings.HasPrefix(method, "external:"):
		return amrExternal
	}
	return method
}

// prove records on sess that it proved method at t: the method's proof
// gets the new time, or is added last.
func prove(sess *store.Session, method string, t time.Time) {
	for i := range sess.Proofs {
		if sess.Proofs[i].Method == method {
			sess.Proofs[i].At = t
			return
		}
	}
	sess.Proofs = append(sess.Proofs, store.Proof{Method: method, At: t})
}

// markPasskeyProof records on session sessionID, inside tx, that it
// proved a passkey at now, synced (backup eligible) or not: the last
// passkey proven says which.
func (s *Service) markPasskeyProof(tx store.Tx, sessionID string, synced bool, now time.Time) error {
	sess, err := tx.Session(sessionID)
	if err != nil {
		return err
	}
	prove(sess, amrPasskey, now)
	for i := range sess.Proofs {
		if sess.Proofs[i].Method == amrPasskey {
			sess.Proofs[i].Synced = synced
		}
	}
	return tx.PutSession(sess)
}

// markProof records on session sessionID, inside tx, that it proved
// method at now.
func (s *Service) markProof(tx store.Tx, sessionID, method string, now time.Time) error {
	sess, err := tx.Session(sessionID)
	if err != nil {
		return err
	}
	prove(sess, method, now)
	return tx.PutSession(sess)
}

// guarded reports whether an account with en has a factor or a passkey,
// so that only those (or a backup code) count as recent authentication.
func guarded(en store.Enrolled) bool { return en.TOTP || en.SMS || en.Passkey }

// provesFactor reports whether a proof by method is one by a factor of
// an account with en: its TOTP, its enrolled phone, its passkey, or a
// backup code (the factors' recovery).
func provesFactor(method string, en store.Enrolled) bool {
	switch method {
	case amrTOTP:
		return en.TOTP
	case amrSMS:
		return en.SMS
	case amrPasskey:
		return en.Passkey
	case amrMFA:
		return en.TOTP || en.SMS
	case amrBackupCode:
		return true
	}
	return false
}

// secondFactorPending reports whether an account with en has TOTP or SMS
// enrolled and proofs hold none of them. A backup-code sign-in is the
// second factor's recovery: it leaves nothing pending.
func secondFactorPending(proofs []store.Proof, en store.Enrolled) bool {
	if !en.TOTP && !en.SMS {
		return false
	}
	for _, p := range proofs {
		switch p.Method {
		case amrTOTP, amrSMS, amrMFA, amrBackupCode:
			return false
		}
	}
	return true
}

// amrOf returns the methods of proofs, in their order.
func amrOf(proofs []store.Proof) []string {
	out := make([]string, len(proofs))
	for i, p := range proofs {
		out[i] = p.Method
	}
	return out
}

// The refusals of an action that needs recent authentication: on a
// guarded account, and on an account without factors whose session has
// no proof within the window. An SMS send to another phone than the
// enrolled one says ErrStepUpRequired's own words.
var (
	errStepUpFactor = ErrStepUpRequired.With("Verify with a factor this account already has (a TOTP code, a code sent to the enrolled phone or a passkey), or sign in with a backup code, then retry within 10 minutes. An email code or link alone is not enough.")
	errStepUpStale  = ErrStepUpRequired.With("Sign in again, then retry within 10 minutes.")
)

// requireRecentAuth checks, inside tx, that the session pr may make a
// change that needs recent authentication at now (see above), and
// returns what the account has enrolled. The finish of a two-call
// action passes the time the action started as now: what is checked
// then is the account's factors as they are, and the session's proofs
// as they were at the start or made since. It answers 401 INVALID_SESSION
// when the session is gone or not pr's, errStepUpFactor or
// errStepUpStale when it may not. Reads only.
func requireRecentAuth(tx store.Tx, pr *Principal, now time.Time) (store.Enrolled, error) {
	sess, en, err := tx.SessionEnrolled(pr.SessionID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && sess.UserID != pr.UserID) {
		return en, ErrInvalidSession
	} else if err != nil {
		return en, err
	}
	if recentAuth(sess.Proofs, en, now) {
		return en, nil
	}
	if guarded(en) {
		return en, errStepUpFactor
	}
	return en, errStepUpStale
}

// recentAuth reports whether proofs hold a recent authentication as
// requireRecentAuth asks it of an account that has enrolled en: a proof
// within StepUpWindow of now, of one of its factors when it has any.
func recentAuth(proofs []store.Proof, en store.Enrolled, now time.Time) bool {
	strict := guarded(en)
	for _, p := range proofs {
		if within(p.At, now) && (!strict || provesFactor(p.Method, en)) {
			return true
		}
	}
	return false
}

// factorAdded does, inside tx, what follows enrolling a factor of kind
// (factorTOTP, factorSMS, or "passkey") on userID's account, which had
// before enrolled: a pending TOTP enrolment is dropped (unless kind is
// TOTP: it is the one just enrolled), and, when the account had no
// factor before, its backup codes are deleted.
func factorAdded(tx store.Tx, userID string, before store.Enrolled, kind string) error {
	if kind != factorTOTP {
		if err := dropPendingTOTP(tx, userID); err != nil {
			return err
		}
	}
	if guarded(before) {
		return nil
	}
	return tx.DeleteBackupCodes(userID)
}

// dropPendingTOTP deletes userID's TOTP factor inside tx when it is
// pending (not yet enrolled).
func dropPendingTOTP(tx store.Tx, userID string) error {
	f, err := tx.Factor(userID, factorTOTP)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if f.Status == factorEnrolled {
		return nil
	}
	return tx.DeleteFactor(userID, factorTOTP)
}

// within reports whether t is set and at most StepUpWindow before now.
func within(t, now time.Time) bool {
	return !t.IsZero() && now.Sub(t) <= StepUpWindow
}

// SessionProofs is how a session was proven, as GET /session shows it
// (AuthenticateSessionProofs): AMR its methods in the order first proven,
// SecondFactorPending whether the account has TOTP or SMS enrolled and
// the session proved neither (nor signed in with a backup code).
type SessionProofs struct {
	AMR                 []string
	SecondFactorPending bool
}
