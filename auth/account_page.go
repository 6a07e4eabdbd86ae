package auth

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"latchkey/store"
)

// The account page (docs/oidc.md, "Account page"): under each issuer,
// the signed-in user of the hosted pages (their single sign-on cookie)
// sees and manages their sessions, passkeys, authenticator app, backup
// codes and address. Every change on it goes through the use case the
// API's equivalent calls (RevokeSession, Logout, BeginPasskeyRegistration
// and FinishPasskeyRegistration, DeleteSessionPasskey, EnrollTOTP and
// VerifyTOTP, RemoveTOTP, GenerateBackupCodes, UpdateUser and
// VerifyAddress; SendSMSCode and VerifySMSCode for a step-up), with
// their events, webhooks and step-up rules. A browser without a session
// signs in on forward-auth's sign-in pages (<issuer>/signin), which send
// it back to the account page.

// AccountPath is the account page, under an issuer.
const AccountPath = "/account"

// accountMethod is the method of a session signed in for the account
// page.
const accountMethod = "account"

// AccountFormLifetime is how long a form of the account page may be
// sent after the page was shown; an older one is stale.
const AccountFormLifetime = time.Hour

// ErrStaleForm (403 FORBIDDEN, its own words): a form of the account page whose CSRF token is
// missing, from another browser, or older than AccountFormLifetime.
var ErrStaleForm = ErrForbidden.With("This form is out of date: it was opened too long ago or in another browser. Reload the account page and try again.")

// errPasskeyOtherAccount refuses a step-up by a passkey of another
// account than the session's.
var errPasskeyOtherAccount = ErrInvalidCredential.With("This passkey belongs to another account.")

// accountFormDomain is the keyed-hash domain of the account page's
// CSRF tokens.
const accountFormDomain = "account-form"

// AccountSignInTarget returns the sign-in of projectID's account page:
// forward-auth's sign-in pages, going back to the account page, without
// a forward-auth cookie. 404 PROJECT_NOT_FOUND.
func (s *Service) AccountSignInTarget(ctx context.Context, projectID string) (*ForwardAuthTarget, error) {
	p, err := s.Project(ctx, projectID)
	if err != nil {
		return nil, err
	}
	return &ForwardAuthTarget{Project: p, RD: s.OIDCIssuer(projectID) + AccountPath, method: accountMethod}, nil
}

// AccountPage reports whether t is the account page's sign-in, which
// reads and sets only the single sign-on cookie (the account page reads
// no other).
func (t *ForwardAuthTarget) AccountPage() bool { return t.method == accountMethod }

// AccountSession checks the account page's cookie (a session token of
// projectID), counting a write against the session's limit as the API's
// writes are counted (AuthenticateSessionWrite): 401 INVALID_SESSION
// when it is not a live session of the project, or when the account has
// TOTP or SMS enrolled and the session proved none of them nor a passkey
// (accountFactorPending: a sign-in whose second factor is pending, such
// as the emailed code alone, whose cookie the pages set before asking
// for the factor, must not open the page; the sign-in page asks for the
// factor then), 429 RATE_LIMIT_EXCEEDED.
func (s *Service) AccountSession(ctx context.Context, projectID, cookie string, write bool) (*Principal, error) {
	pr, p, st, now, err := s.authenticateSession(ctx, "Bearer "+cookie)
	if err != nil {
		return nil, err
	}
	if pr.ProjectID != projectID || pr.ForwardAuth || accountFactorPending(st) {
		return nil, ErrInvalidSession
	}
	if !write {
		s.activity.seen(pr.SessionID, pr.IssuedAt, now)
	} else if err := s.countWrite(pr, p, now); err != nil {
		return nil, err
	}
	return pr, nil
}

// accountFactorPending reports whether session state st may not open
// the account page: its account has TOTP or SMS enrolled and the session
// proved neither, nor a passkey (the page's passkey step-up is a
// passkey sign-in, a session proven by the passkey alone), nor a backup
// code.
func accountFactorPending(st *store.SessionState) bool {
	if !secondFactorPending(st.Proofs, store.Enrolled{TOTP: st.TOTP, SMS: st.SMS}) {
		return false
	}
	for _, p := range st.Proofs {
		if p.Method == amrPasskey {
			return false
		}
	}
	return true
}

// AccountFormToken returns a CSRF token of the account page's forms for
// the browser whose CSRF cookie holds browser: the time it was made and
// a keyed hash of both, so that a form works only in its browser, for
// AccountFormLifetime.
func (s *Service) AccountFormToken(browser string) string {
	return s.accountFormToken(browser, s.now().Unix())
}

// accountFormToken is AccountFormToken as of at (Unix seconds).
func (s *Service) accountFormToken(browser string, at int64) string {
	ts := strconv.FormatInt(at, 10)
	h := s.keys.HashString(accountFormDomain, browser+"\x00"+ts)
	return ts + "." + base64.RawURLEncoding.EncodeToString(h[:])
}

// CheckAccountForm checks a CSRF token of the account page for browser
// (constant-time compare): ErrStaleForm when it is missing, malformed,
// another browser's, from the future or older than
// AccountFormLifetime.
func (s *Service) CheckAccountForm(browser, token string) error {
	ts, _, ok := strings.Cut(token, ".")
	at, err := strconv.ParseInt(ts, 10, 64)
	if browser == "" || !ok || err != nil {
		return ErrStaleForm
	}
	now := s.now()
	made := time.Unix(at, 0)
	if made.After(now.Add(time.Minute)) || now.Sub(made) > AccountFormLifetime {
		return ErrStaleForm
	}
	if subtle.ConstantTimeCompare([]byte(s.accountFormToken(browser, at)), []byte(token)) != 1 {
		return ErrStaleForm
	}
	return nil
}

// AccountOverview is what the account page shows of the session's user.
type AccountOverview struct {
	User     *store.User
	Sessions []SessionView // newest first
	Passkeys []PasskeyView // oldest first
	// TOTP and SMS: the factors enrolled.
	TOTP, SMS bool
	// BackupCodesLeft is how many unused backup codes the user has.
	BackupCodesLeft int
	// Apps are the clients the user consented to (RevokeConsent ends
	// one), in client id order.
	Apps []ConsentView
}

// AccountOverview reads what the account page shows for session pr, in
// one read transaction: 401 INVALID_SESSION when the session or its
// user is gone (or the user disabled).
func (s *Service) AccountOverview(ctx context.Context, pr *Principal) (*AccountOverview, error) {
	out := &AccountOverview{Passkeys: []PasskeyView{}}
	var rows []*store.Session
	err := s.db.View(ctx, func(tx store.Tx) error {
		sess, en, err := tx.SessionEnrolled(pr.SessionID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && sess.UserID != pr.UserID) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		out.TOTP, out.SMS = en.TOTP, en.SMS
		u, err := tx.User(pr.UserID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && u.Disabled) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		if _, err := settleVerified(tx, u); err != nil {
			return err
		}
		out.User = u
		if rows, err = tx.UserSessionRows(u.ID); err != nil {
			return err
		}
		pks, err := tx.UserPasskeys(u.ProjectID, u.ID)
		if err != nil {
			return err
		}
		if out.Apps, err = consentViews(tx, u.ProjectID, u.ID); err != nil {
			return err
		}
		for _, pk := range pks {
			out.Passkeys = append(out.Passkeys, PasskeyView{CredentialID: pk.ID, CreatedAt: pk.CreatedAt.UTC().Format(passkeyTime)})
		}
		b, err := tx.BackupCodes(u.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		for _, used := range b.Used {
			if !used {
				out.BackupCodesLeft++
			}
		}
		return nil
	})
	if err != nil {
		return nil, internal(err)
	}
	out.Sessions = s.viewSessions(rows)
	return out, nil
}

// AccountStepUp is how the session pr may prove itself again on the
// account page for a change that needs recent authentication: by its
// authenticator app (TOTP), by a code texted to its enrolled phone
// (SMS: SendSMSCode then VerifySMSCode, with their throttles and
// events), or, on an account without a factor or a passkey, by signing
// in again (SignInAgain). Passkey is set when the account has one (a
// passkey sign-in is a fresh session proven by it).
type AccountStepUp struct {
	TOTP, Passkey, SignInAgain bool
	SMS                        bool
	// PhoneEnding is the enrolled phone's last two digits (SMS), to
	// tell the user where the code goes without showing the number.
	PhoneEnding string
}

// AccountStepUpOptions returns how session pr may step up (see
// AccountStepUp): 401 INVALID_SESSION when the session is gone.
func (s *Service) AccountStepUpOptions(ctx context.Context, pr *Principal) (AccountStepUp, error) {
	var out AccountStepUp
	err := s.db.View(ctx, func(tx store.Tx) error {
		sess, en, err := tx.SessionEnrolled(pr.SessionID)
		if errors.Is(err, store.ErrNotFound) || (err == nil && sess.UserID != pr.UserID) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		out = AccountStepUp{TOTP: en.TOTP, Passkey: en.Passkey, SignInAgain: !guarded(en), SMS: en.SMS}
		if !en.SMS {
			return nil
		}
		f, err := tx.Factor(pr.UserID, factorSMS)
		if err != nil {
			return err
		}
		if len(f.Phone) > 2 {
			out.PhoneEnding = f.Phone[len(f.Phone)-2:]
		}
		return nil
	})
	return out, internal(err)
}

// AccountBeginPasskeyStepUp starts the account page's passkey step-up
// for session pr: a passkey sign-in of its user (BeginPasskeyLogin for
// their address: its risk checks and events). 401 INVALID_SESSION.
func (s *Service) AccountBeginPasskeyStepUp(ctx context.Context, pr *Principal, m Meta) (*Ceremony, error) {
	u, p, err := s.sessionUserProject(ctx, pr)
	if err != nil {
		return nil, err
	}
	return s.BeginPasskeyLogin(ctx, p, u.Email, m)
}

// AccountFinishPasskeyStepUp checks the step-up's assertion as a
// passkey sign-in (FinishPasskeyLogin's checks and events): a new
// session of method "account", proven by the passkey now, which
// replaces session pr in the browser; pr's session ends
// (session.revoked). A passkey of another user is refused as
// INVALID_CREDENTIAL and its session ended at once.
func (s *Service) AccountFinishPasskeyStepUp(ctx context.Context, pr *Principal, challengeID string, credential json.RawMessage, m Meta) (*Login, error) {
	_, p, err := s.sessionUserProject(ctx, pr)
	if err != nil {
		return nil, err
	}
	l, err := s.finishPasskeyLogin(ctx, p, challengeID, credential, loginAs{method: accountMethod, proof: amrPasskey, noRefresh: true}, m)
	if err != nil {
		return nil, err
	}
	if l.User.ID != pr.UserID {
		other := &Principal{ProjectID: p.ID, UserID: l.User.ID, SessionID: l.Session.ID}
		if err := s.Logout(ctx, other, LogoutThis); err != nil && !errors.Is(err, ErrInvalidSession) {
			return nil, err
		}
		return nil, errPasskeyOtherAccount
	}
	if err := s.Logout(ctx, pr, LogoutThis); err != nil && !errors.Is(err, ErrInvalidSession) {
		return nil, err
	}
	return l, nil
}
