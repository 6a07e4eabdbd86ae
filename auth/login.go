package auth

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"

	"latchkey/store"
)

// Login is the outcome of a successful sign-in; handlers pick the fields
// each endpoint's contract lists.
type Login struct {
	Token       string
	User        *store.User
	Session     *store.Session
	DeviceToken string
	IsNewUser   bool
	RedirectURL string // magic links: the send-time redirectUrl
	project     *store.Project
	enrolled    store.Enrolled // what the user has enrolled, read with the commit

	// RefreshToken buys the session a new Token, and a new refresh
	// token, when Token expires (RefreshSession).
	RefreshToken string
}

// AMR returns how the login's session was proven: its methods (amr
// values) in the order first proven.
func (l *Login) AMR() []string { return amrOf(l.Session.Proofs) }

// SecondFactorPending reports whether the user has TOTP or SMS enrolled
// and the session proved neither: the app should ask for one before
// treating the sign-in as complete. A backup-code sign-in leaves nothing
// pending.
func (l *Login) SecondFactorPending() bool {
	return secondFactorPending(l.Session.Proofs, l.enrolled)
}

// startLogin creates the session row (proven by its sign-in method),
// binds a device token and emits session.created inside tx; a user row from before emailVerified
// existed gets it settled and stored. The JWT is signed after commit
// (finish).
func (s *Service) startLogin(tx store.Tx, p *store.Project, u *store.User, method string, m Meta) (*Login, error) {
	return s.startLoginAs(tx, p, u, loginAs{method: method}, m)
}

// loginAs is what a sign-in's session is: its method (as the session
// lists and session.created show it), the proof of its sign-in (""
// for the method's own amr value: signInAMR), and whether it gets a
// refresh token (the API's sessions do; a hosted sign-in's session is
// held by its cookie and slides by the pages). synced says, for a
// passkey sign-in, whether the passkey is a synced one (backup
// eligible: amr swk). newUser says the user was created in the same
// transaction, so has nothing enrolled to read.
type loginAs struct {
	method    string
	proof     string
	noRefresh bool
	synced    bool
	newUser   bool
}

// startLoginAs is startLogin for a session as says.
func (s *Service) startLoginAs(tx store.Tx, p *store.Project, u *store.User, as loginAs, m Meta) (*Login, error) {
	method := as.method
	if changed, err := settleVerified(tx, u); err != nil {
		return nil, err
	} else if changed {
		if err := tx.PutUser(u); err != nil {
			return nil, err
		}
	}
	sess := s.newSession(p, u, method)
	if as.proof != "" {
		sess.Proofs[0].Method = as.proof
	}
	sess.Proofs[0].Synced = as.synced && sess.Proofs[0].Method == amrPasskey
	// Where the session was signed in from, bounded in length, for the
	// user's and the operator's session lists.
	sess.IP, sess.UserAgent = clipIP(m.IP), clipUA(m.UserAgent)
	if err := tx.PutSession(sess); err != nil {
		return nil, err
	}
	var refresh string
	if !as.noRefresh {
		var err error
		if refresh, err = s.newRefreshToken(tx, sess, sess.IssuedAt); err != nil {
			return nil, err
		}
	}
	if err := s.emit(tx, p.ID, "session.created", sessionCreated{Method: method, SessionID: sess.ID, UserID: u.ID}); err != nil {
		return nil, err
	}
	if s.obs != nil {
		// A hosted sign-in counts as "oidc", whatever its client's name.
		label := method
		if strings.HasPrefix(method, oidcMethodPrefix) {
			label = "oidc"
		}
		tx.OnCommit(func() { s.obs.Login(label) })
	}
	dt, err := s.bindDevice(tx, u, m.DeviceToken)
	if err != nil {
		return nil, err
	}
	l := &Login{User: u, Session: sess, RefreshToken: refresh, DeviceToken: dt, project: p}
	// For the login result only: read with the commit, no round trip of
	// its own; a user created in this transaction has nothing enrolled.
	if as.newUser {
		return l, nil
	}
	if err := tx.ReadEnrolled(p.ID, u.ID, &l.enrolled); err != nil {
		return nil, err
	}
	return l, nil
}

// finish signs the login's JWT and remembers it as verified; call after
// the transaction committed.
func (s *Service) finish(l *Login) (*Login, error) {
	tok, pr, err := s.signSession(l.project, l.Session)
	if err != nil {
		return nil, internal(err)
	}
	l.Token = tok
	// The token was just signed here, so its signature needs no check:
	// the first session check (most apps make one at once) skips the
	// ES256 verification, a fifth of a sign-in's CPU under load.
	s.tokens.put(tok, pr)
	return l, nil
}

// deviceUseResolution is how precisely a device's last use is kept: a
// sign-in with a device token notes its use when the last noted one is at
// least this old, so most sign-ins do not rewrite the row.
const deviceUseResolution = 24 * time.Hour

// bindDevice returns presented when it is a device token already bound
// to u, noting its use (a device lasts store.DeviceLifetime after its
// last sign-in, counted to the day: deviceUseResolution), or a new token
// bound to u. A token is 32 bytes,
// base64url: a time-ordered 16-byte row id and 16 random bytes. The row
// holds only the keyed hash of the whole token and sorts by time, so new
// devices land on the same B+tree page.
func (s *Service) bindDevice(tx store.Tx, u *store.User, presented string) (string, error) {
	if d, ok := s.device(tx, presented); ok && d.UserID == u.ID {
		if now := s.now().UTC(); now.Sub(d.LastUsedAt) >= deviceUseResolution {
			d.LastUsedAt = now
			return presented, tx.PutDevice(d)
		}
		return presented, nil
	}
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	raw := append(id[:], randomBytes(16)...)
	tok := base64.RawURLEncoding.EncodeToString(raw)
	h := s.keys.HashString("device", tok)
	return tok, tx.PutDevice(&store.Device{Key: id[:], Hash: h[:], UserID: u.ID, ProjectID: u.ProjectID, CreatedAt: s.now().UTC()})
}

// device returns the device row of a presented token, checking its hash;
// a device unused for store.DeviceLifetime is unknown.
func (s *Service) device(tx store.Tx, tok string) (*store.Device, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(raw) != 32 {
		return nil, false
	}
	d, err := tx.Device(raw[:16])
	if err != nil || d.Expired(s.now()) {
		return nil, false
	}
	h := s.keys.HashString("device", tok)
	return d, subtle.ConstantTimeCompare(h[:], d.Hash) == 1
}

// attachExternalID gives u the external id ext when it has none; 409
// EXTERNAL_ID_CONFLICT when u has another one (ErrExternalIDMismatch) or
// another user holds ext (ErrExternalIDConflict).
func (s *Service) attachExternalID(tx store.Tx, u *store.User, ext string) error {
	if ext == "" || u.ExternalUserID == ext {
		return nil
	}
	if u.ExternalUserID != "" {
		return ErrExternalIDMismatch
	}
	if other, err := tx.UserByExternalID(u.ProjectID, ext); err == nil && other.ID != u.ID {
		return ErrExternalIDConflict
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	u.ExternalUserID = ext
	u.UpdatedAt = s.now().UTC()
	return tx.PutUser(u)
}

// checkExternalID validates an optional externalUserId field.
func checkExternalID(ext *string) (string, error) {
	if ext == nil {
		return "", nil
	}
	if len(*ext) == 0 || len(*ext) > 255 {
		return "", Invalid("externalUserId must be 1 to 255 characters.")
	}
	return *ext, nil
}
