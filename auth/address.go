package auth

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"latchkey/store"
)

// Address confirmation and change (docs/security.md, "Verified
// addresses and address changes"). A user proves an
// address from their session with a code mailed to it: their current
// address (POST /user/email/send), or a new one (PATCH /user {email} in
// a project whose emailChange is "verify"). Both are confirmed by POST
// /user/email/verify {code}. A user has at most one pending
// confirmation: a new one replaces it. Codes are as for email OTP: 6
// digits, 10 minutes, 5 tries, the per-address send throttle, and the
// address's 50 failed guesses per 24 hours shared with otp/verify.
const (
	// EmailChangeVerify and EmailChangeDirect are the values of a
	// project's emailChange.
	EmailChangeVerify = "verify"
	EmailChangeDirect = "direct"

	codeKindEmail   = "email_verify" // the pending confirmation, per user; its send throttle, per address
	hashDomainEmail = "email_verify"
	// Mail kinds (mail.KindEmailChange, mail.KindEmailChangedNotice).
	mailKindEmailChange  = "email_change"
	mailKindEmailChanged = "email_changed_notice"
	// Event methods: proving the current address, and changing it.
	methodEmailVerify = "email_verify"
	methodEmailChange = "email_change"
)

// errNoAddressCode is the verify answer when nothing is pending.
var errNoAddressCode = ErrInvalidCode.With("No code is pending for this account. Request a new code.")

// UserPatch is the body of PATCH /user; nil fields are unchanged.
type UserPatch struct {
	Email     *string `json:"email"`
	FirstName *string `json:"firstName"`
	// Groups and Metadata are read only to be refused: the operator
	// sets them, never the user (UpdateUser).
	Groups   json.RawMessage `json:"groups"`
	Metadata json.RawMessage `json:"metadata"`
}

// errOperatorField answers a session's attempt to set field, one of
// the user's fields only the operator sets.
func errOperatorField(field string) *Error {
	return Invalid("%s cannot be changed from the user's session: the operator sets it (PATCH /api/v1/admin/users/:id).", field)
}

// UserUpdate is the outcome of PATCH /user: the user as it now is, and
// the address waiting for confirmation (empty when none was asked for).
type UserUpdate struct {
	User         *store.User
	PendingEmail string
}

// UpdateUser changes the session user's first name and starts, or in a
// project with emailChange "direct" makes, a change of address. In
// "verify" mode (the default) the address stays and a code goes to the
// new one (PendingEmail); VerifyAddress applies it. In "direct" mode
// the address changes at once and emailVerified becomes false. user.updated
// is emitted when the user row changes. A change of address, in either
// mode, needs recent authentication (requireRecentAuth); the first name
// alone does not. Errors: 400 VALIDATION_ERROR for a bad body; 403
// STEP_UP_REQUIRED (recorded); 409 EMAIL_IN_USE when another user of
// the project holds the address; 429 TOO_MANY_REQUESTS past the
// address's send throttle. A failure changes nothing (the first name
// included). A body with groups or metadata (even null) is 400
// VALIDATION_ERROR naming the field: the operator sets those, never the
// user.
func (s *Service) UpdateUser(ctx context.Context, pr *Principal, in UserPatch, m Meta) (*UserUpdate, error) {
	if in.Groups != nil {
		return nil, errOperatorField("groups")
	}
	if in.Metadata != nil {
		return nil, errOperatorField("metadata")
	}
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
		var err error
		if first, err = checkFirstName(*in.FirstName); err != nil {
			return nil, err
		}
	}
	var out *UserUpdate
	a := s.attempt(ctx, pr.ProjectID, methodEmailChange, "send", m)
	var code string // of a new address: its mail is rendered before the transaction
	if in.Email != nil {
		code = randomDigits(6)
		if err := s.prepareAddressCode(a, pr, email, code); err != nil {
			return nil, a.result(err)
		}
	}
	err := a.update(func(tx store.Tx) error {
		out = nil
		u, err := s.sessionUserTx(tx, pr)
		if err != nil {
			return err
		}
		if _, err := settleVerified(tx, u); err != nil {
			return err
		}
		p, err := tx.Project(u.ProjectID)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		out = &UserUpdate{User: u}
		// A first name equal to the stored one changes nothing: no write
		// and no user.updated (a session could otherwise flood every
		// webhook with no-op updates).
		changed := in.FirstName != nil && first != u.FirstName
		if in.Email != nil && email != u.Email {
			a.of(u)
			direct := p.EmailChange == EmailChangeDirect
			if direct {
				a.action = "update"
			}
			// Before the address is looked up: a session that may not
			// change it learns nothing about who holds another.
			if _, err := requireRecentAuth(tx, pr, now); isAuthError(err) {
				return a.fail(tx, err)
			} else if err != nil {
				return err
			}
			if _, err := tx.UserByEmail(p.ID, email); err == nil {
				return a.fail(tx, ErrEmailInUse)
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if direct {
				// Unproven, and no import vouched for the new address:
				// a sign-in that proves it replaces the account.
				u.Email, u.EmailVerified, u.Vouched, changed = email, boolPtr(false), boolPtr(false), true
			} else {
				if e, err := s.sendAddressCode(tx, a, p, u, pr.SessionID, email, code, now); err != nil {
					return err
				} else if e != nil {
					return a.fail(tx, e)
				}
				out.PendingEmail = email
			}
			if err := a.of(u).ok(tx); err != nil {
				return err
			}
		}
		if !changed {
			return nil
		}
		if in.FirstName != nil {
			u.FirstName = first
		}
		u.UpdatedAt = now
		if err := tx.PutUser(u); errors.Is(err, store.ErrConflict) {
			return ErrEmailInUse
		} else if err != nil {
			return err
		}
		return s.emit(tx, u.ProjectID, "user.updated", map[string]string{"user_id": u.ID, "email": u.Email})
	})
	if err := a.result(err); err != nil {
		return nil, err
	}
	return out, nil
}

// SendAddressCode mails a code to the session user's current address, to
// prove it (POST /user/email/send); VerifyAddress checks it. It replaces
// a pending confirmation, a pending address change included. Errors: 401
// INVALID_SESSION; 429 TOO_MANY_REQUESTS past the address's send
// throttle (with the wait).
func (s *Service) SendAddressCode(ctx context.Context, pr *Principal, m Meta) error {
	a := s.attempt(ctx, pr.ProjectID, methodEmailVerify, "send", m)
	code := randomDigits(6)
	if err := s.prepareAddressCode(a, pr, "", code); err != nil {
		return a.result(err)
	}
	err := a.update(func(tx store.Tx) error {
		u, err := s.sessionUserTx(tx, pr)
		if err != nil {
			return err
		}
		a.of(u)
		p, err := tx.Project(u.ProjectID)
		if err != nil {
			return err
		}
		if fail, err := s.sendAddressCode(tx, a, p, u, pr.SessionID, u.Email, code, s.now().UTC()); err != nil {
			return err
		} else if fail != nil {
			return a.fail(tx, fail)
		}
		return a.ok(tx)
	})
	return a.result(err)
}

// sendAddressCode stores a new pending confirmation of address to for u
// with code, bound to the session sessionID that asked for it
// (addressHash), and queues its mail (a's), inside tx, under the
// address's send throttle (shared by the current-address and
// new-address codes). Over the throttle it changes nothing and returns
// fail, the 429. The code's CreatedAt is now: the time the change of
// address was checked at (VerifyAddress checks again as of then).
func (s *Service) sendAddressCode(tx store.Tx, a *attempt, p *store.Project, u *store.User, sessionID, to, code string, now time.Time) (fail, err error) {
	th, err := tx.Throttle(codeKindEmail, p.ID, to)
	if err != nil {
		return nil, err
	}
	if ok, wait := emailSends.allow(th, now); !ok {
		return ErrTooManyRequests.WithRetry(wait), nil
	}
	th.Sends = append(th.Sends, now)
	if err := tx.PutThrottle(codeKindEmail, p.ID, to, th); err != nil {
		return nil, err
	}
	h := s.addressHash(u.ID, to, sessionID, code)
	c := &store.Code{Kind: codeKindEmail, ProjectID: p.ID, Subject: u.ID, Email: to, Hash: h[:], CreatedAt: now, ExpiresAt: now.Add(OTPLifetime)}
	if err := tx.PutCode(c); err != nil {
		return nil, err
	}
	return nil, a.queueMail(tx, p.ID, mailKindEmailChange, to, addressCodeMail(p, code), now)
}

// addressHash is the keyed hash an address code is kept as: bound to
// the user, the address and the session that asked for it, so that only
// that session can use the code.
func (s *Service) addressHash(userID, to, sessionID, code string) [32]byte {
	return s.keys.HashString(hashDomainEmail, userID+"\x00"+to+"\x00"+sessionID+"\x00"+code)
}

// addressCodeMail is what the mail of an address code says.
func addressCodeMail(p *store.Project, code string) store.MailContent {
	return store.MailContent{Project: p.Name, Code: code, TTLSeconds: int(OTPLifetime / time.Second)}
}

// prepareAddressCode renders, before the transaction of a session's
// address code, the mail it will queue with code to to (the session
// user's address when empty), from the project and user as read in a
// short read transaction. The transaction checks what it queues
// (queueMail): a guess that no longer holds costs one more run. Its
// error is the store's.
func (s *Service) prepareAddressCode(a *attempt, pr *Principal, to, code string) error {
	a.expectMail()
	var u *store.User
	var p *store.Project
	err := s.db.View(a.ctx, func(tx store.Tx) error {
		var err error
		if u, err = tx.User(pr.UserID); err != nil {
			return err
		}
		p, err = tx.Project(u.ProjectID)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil // the transaction answers
	} else if err != nil {
		return err
	}
	if to == "" {
		to = u.Email
	}
	return a.prepareMail(p.ID, mailKindEmailChange, to, addressCodeMail(p, code))
}

// VerifyAddress checks the code of the session user's pending
// confirmation (POST /user/email/verify), which must have been asked
// for by this session. For the current address it sets emailVerified;
// for a new address it also switches to it, emits user.updated, ends
// every other session of the account (session.revoked each) and mails a
// notice to the old address that names the new one masked (MaskEmail)
// and says how to get help (no link, no code). A new address needs the
// recent authentication the change needed, checked again now
// (requireRecentAuth as of the PATCH; the account may have got a factor
// since): else 403 STEP_UP_REQUIRED, recorded, the code kept.
// It returns the user as it now is. Errors as otp/verify: 400
// VALIDATION_ERROR for an empty or non-digit code; 401 INVALID_CODE when
// none is pending, for a wrong code or one another session asked for
// (each counts a try and an address failure), an expired one, after 5
// tries, and while the address has 50 failed guesses in 24 hours (the
// locked text); 409 EMAIL_IN_USE when another user took the new address
// meanwhile (the confirmation is dropped).
func (s *Service) VerifyAddress(ctx context.Context, pr *Principal, code string, m Meta) (*store.User, error) {
	a := s.attempt(ctx, pr.ProjectID, methodEmailVerify, "verify", m)
	if err := checkCodeShape(code); err != nil {
		return nil, s.rejectStepUp(pr, a, err)
	}
	var out *store.User
	a.expectMail() // the notice of a change: its first run asks for it
	err := a.update(func(tx store.Tx) error {
		out = nil
		u, err := s.sessionUserTx(tx, pr)
		if err != nil {
			return err
		}
		a.of(u)
		c, err := tx.Code(codeKindEmail, u.ProjectID, u.ID)
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, errNoAddressCode)
		} else if err != nil {
			return err
		}
		if c.Email != u.Email {
			a.method = methodEmailChange
		}
		now := s.now().UTC()
		rules := addressCodeRules(u.ProjectID, c.Email)
		if a.method == methodEmailChange {
			rules.afterExpiry = func() (error, error) {
				if _, err := requireRecentAuth(tx, pr, c.CreatedAt); isAuthError(err) {
					return err, nil
				} else if err != nil {
					return nil, err
				}
				return nil, nil
			}
		}
		h := s.addressHash(u.ID, c.Email, pr.SessionID, code)
		if failure, err := checkCode(tx, c, h[:], now, rules); err != nil {
			return err
		} else if failure != nil {
			return a.fail(tx, failure)
		}
		if err := tx.DeleteCode(c); err != nil {
			return err
		}
		if a.method == methodEmailVerify {
			if err := s.setVerified(tx, u); err != nil {
				return err
			}
			out = u
			return a.ok(tx)
		}
		if _, err := tx.UserByEmail(u.ProjectID, c.Email); err == nil {
			return a.fail(tx, ErrEmailInUse)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		p, err := tx.Project(u.ProjectID)
		if err != nil {
			return err
		}
		old := u.Email
		u.Email, u.EmailVerified, u.UpdatedAt = c.Email, boolPtr(true), now
		if err := tx.PutUser(u); err != nil {
			return err
		}
		if err := s.emit(tx, u.ProjectID, "user.updated", map[string]string{"user_id": u.ID, "email": u.Email}); err != nil {
			return err
		}
		// Whoever else held a session of the account holds it no more.
		if err := s.revokeOtherSessions(tx, u.ID, pr.SessionID); err != nil {
			return err
		}
		notice := store.MailContent{Project: p.Name, NewEmailMasked: MaskEmail(u.Email)}
		if err := a.queueMail(tx, u.ProjectID, mailKindEmailChanged, old, notice, now); err != nil {
			return err
		}
		out = u
		return a.of(u).ok(tx)
	})
	if err := a.result(err); err != nil {
		return nil, err
	}
	return out, nil
}

// MaskEmail shows an address without giving it away, for a notice to
// another address: the first character of the local part and of the
// domain, then the domain's last label: "jane.doe@example.com" is
// "j***@e***.com", "ada@mail.example.co.uk" "a***@m***.uk". The stars
// say nothing about the lengths.
func MaskEmail(addr string) string {
	at := strings.LastIndexByte(addr, '@')
	if at < 0 {
		return firstRune(addr) + "***"
	}
	local, domain := addr[:at], addr[at+1:]
	out := firstRune(local) + "***@" + firstRune(domain) + "***"
	if dot := strings.LastIndexByte(domain, '.'); dot > 0 {
		out += domain[dot:]
	}
	return out
}

// firstRune returns the first character of s ("" for none).
func firstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}
