package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"time"

	"github.com/google/uuid"

	"latchkey/store"
)

// Sessions that slide (docs/api.md, "POST /api/v1/session/refresh").
// Every sign-in gives its session a refresh token besides its session
// token (the JWT). The JWT lives the project's sessionTtlSeconds; the
// refresh token buys a new JWT of the same session, and a new refresh
// token, while the session is neither idle (unrefreshed for
// sessionIdleSeconds) nor old (sessionMaxSeconds after its sign-in).
// Each refresh slides the session's row to min(now + idle, sign-in +
// max): the row lives as long as the session can be refreshed, each JWT
// its own lifetime within it. A refresh token is used once: the one it
// replaced is kept, used, and presenting it again (reuse: it was copied)
// ends the session, its tokens with it.

// hashDomainRefresh is the keyed hash's domain of refresh tokens.
const hashDomainRefresh = "refresh"

// methodSession is the authentication events' method of a refresh.
const methodSession = "session"

// refreshTokenLen is a refresh token's length in bytes before base64url:
// its session's id (a UUID, 16 bytes: the lookup key) and 32 random
// bytes.
const refreshTokenLen = 16 + 32

// The refused refreshes: each is 401 INVALID_SESSION, told apart on the
// authentication event by its category.
var (
	// errRefreshUnknown: a refresh token that is malformed, unknown,
	// ended with its session, or of another project.
	errRefreshUnknown = ErrInvalidSession.withCategory(CatInvalidCode)
	// errRefreshExpired: the session was idle or is too old.
	errRefreshExpired = ErrInvalidSession.withCategory(CatExpired).
				With("This session can no longer be refreshed: sign in again.")
	// errRefreshReused: a refresh token already exchanged; the session
	// was ended.
	errRefreshReused = ErrInvalidSession.withCategory(CatAlreadyUsed).
				With("This refresh token was already used, so the session has been ended: sign in again.")
	// errRefreshPending: the account has TOTP or SMS and the session has
	// not proven either: it lives its token's lifetime and no longer
	// unless the second factor is verified on it (it stays usable for
	// that until its token expires).
	errRefreshPending = ErrStepUpRequired.With("This session's second factor is pending: verify a TOTP or SMS code (or a backup code) with it before refreshing it.")
)

// sessionTimes returns p's session token lifetime, idle time and
// maximum session time in force: its settings, or for one it never set
// the default, raised to the one before it when that is longer (an idle
// time to the token lifetime, a maximum to the idle time).
func sessionTimes(p *store.Project) (ttl, idle, most time.Duration) {
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	ttl = sec(DefaultSessionTTL)
	if p.SessionTTLSeconds > 0 {
		ttl = sec(p.SessionTTLSeconds)
	}
	idle = max(sec(DefaultSessionIdle), ttl)
	if p.SessionIdleSeconds > 0 {
		idle = sec(p.SessionIdleSeconds)
	}
	most = max(sec(DefaultSessionMax), idle)
	if p.SessionMaxSeconds > 0 {
		most = sec(p.SessionMaxSeconds)
	}
	return ttl, idle, most
}

// checkSessionTimes refuses settings whose times in force are out of
// order: a token may not outlive the time its session may go
// unrefreshed, nor that the session's maximum.
func checkSessionTimes(p *store.Project) error {
	ttl, idle, most := sessionTimes(p)
	if idle < ttl {
		return Invalid("sessionIdleSeconds must be at least sessionTtlSeconds (%d).", int(ttl/time.Second))
	}
	if most < idle {
		return Invalid("sessionMaxSeconds must be at least sessionIdleSeconds (%d).", int(idle/time.Second))
	}
	return nil
}

// sessionExpiry is when a session signed in at issued and used (signed
// in or refreshed) at now can no longer be refreshed, and its row goes:
// min(now + idle, issued + max).
func sessionExpiry(p *store.Project, issued, now time.Time) time.Time {
	_, idle, most := sessionTimes(p)
	return earlier(now.Add(idle), issued.Add(most))
}

// tokenExpiry is the exp of a session token issued at iat for a session
// whose row expires at end: the token lifetime later, never past end.
func tokenExpiry(p *store.Project, iat, end time.Time) time.Time {
	ttl, _, _ := sessionTimes(p)
	return earlier(iat.Add(ttl), end)
}

// earlier returns the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// newRefreshToken returns a new refresh token of sess, issued at now,
// and stores its keyed hash in tx, due when the session is (its row's
// ExpiresAt). A token is 48 bytes, base64url: the session's id (the
// lookup key) and 32 random bytes.
func (s *Service) newRefreshToken(tx store.Tx, sess *store.Session, now time.Time) (string, error) {
	id, err := uuid.Parse(sess.ID)
	if err != nil || id.String() != sess.ID {
		return "", errors.New("refresh token: the session id is not a UUID")
	}
	raw := append(id[:], randomBytes(refreshTokenLen-16)...)
	tok := base64.RawURLEncoding.EncodeToString(raw)
	h := s.keys.HashString(hashDomainRefresh, tok)
	return tok, tx.PutRefreshToken(&store.RefreshToken{SessionID: sess.ID, Hash: h[:], ProjectID: sess.ProjectID,
		CreatedAt: now, ExpiresAt: sess.ExpiresAt})
}

// refreshSessionID returns the session id a refresh token names, and
// false for a string that is no refresh token.
func refreshSessionID(tok string) (string, bool) {
	if len(tok) != base64.RawURLEncoding.EncodedLen(refreshTokenLen) {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", false
	}
	id, err := uuid.FromBytes(raw[:16])
	if err != nil {
		return "", false
	}
	return id.String(), true
}

// Refreshed is a session refreshed: a new session token (Token, expiring
// at ExpiresAt) and a new refresh token of the same session.
type Refreshed struct {
	Token        string
	RefreshToken string
	ExpiresAt    time.Time
	// Session is the session's row as the refresh left it (slid).
	Session *store.Session
	project *store.Project
	issued  time.Time // the new token's iat
}

// RefreshSession exchanges refreshToken, a refresh token of a session of
// p (the caller's API key's project), for a new session token and a new
// refresh token of the same session: same id, same proofs. The token
// presented is kept as used, and the session slides: its row now
// expires at min(now + idle time, sign-in + maximum).
//
// An empty refreshToken is 400 VALIDATION_ERROR; every refusal else is
// 401 INVALID_SESSION, recorded as an authentication event (method
// "session", action "refresh") with its category: invalid_code for a
// token that is malformed, unknown (its session ended) or another
// project's, changing nothing; expired for a session idle or past its
// maximum; already_used for a token already exchanged, which ends the
// session (session.revoked), since two holders of one token mean it was
// copied. A session whose account has TOTP or SMS and that has proven
// neither (secondFactorPending) is refused with STEP_UP_REQUIRED,
// changing nothing: it may prove the factor and refresh then. A refresh that succeeds is no event (a session refreshes every
// sessionTtlSeconds); the metrics count it.
func (s *Service) RefreshSession(ctx context.Context, p *store.Project, refreshToken string, m Meta) (*Refreshed, error) {
	a := s.attempt(ctx, p.ID, methodSession, "refresh", m)
	if refreshToken == "" {
		return nil, a.reject(Invalid("refreshToken is required."))
	}
	sid, ok := refreshSessionID(refreshToken)
	if !ok {
		return nil, a.reject(errRefreshUnknown)
	}
	h := s.keys.HashString(hashDomainRefresh, refreshToken)
	// An unknown token, or another project's, changes nothing: answer it
	// from a read transaction, so that a flood of made-up tokens costs
	// no write (and, past the suppression rate, no event either).
	known := false
	err := s.db.View(ctx, func(tx store.Tx) error {
		rt, err := tx.RefreshToken(sid, h[:])
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		known = err == nil && rt.ProjectID == p.ID
		return err
	})
	if err != nil {
		return nil, internal(err)
	}
	if !known {
		return nil, a.reject(errRefreshUnknown)
	}
	var out *Refreshed
	err = a.batch(func(tx store.Tx) error {
		out = nil
		now := s.now().UTC()
		rt, err := tx.RefreshToken(sid, h[:])
		if errors.Is(err, store.ErrNotFound) { // its session ended meanwhile
			return a.fail(tx, errRefreshUnknown)
		} else if err != nil {
			return err
		}
		sess, en, err := tx.SessionEnrolled(sid)
		if errors.Is(err, store.ErrNotFound) {
			return a.fail(tx, errRefreshUnknown)
		} else if err != nil {
			return err
		}
		if rt.ProjectID != p.ID || sess.ProjectID != p.ID {
			return a.fail(tx, errRefreshUnknown)
		}
		a.userID = sess.UserID
		if rt.UsedAt != nil {
			// Reuse: the token was exchanged before, so two parties held
			// it. Which one is the user cannot be told: the session ends,
			// every token of it with it.
			if u, err := tx.User(sess.UserID); err == nil {
				a.of(u)
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err := s.revokeSession(tx, sess); err != nil {
				return err
			}
			return a.fail(tx, errRefreshReused)
		}
		_, idle, most := sessionTimes(p)
		if !now.Before(rt.ExpiresAt) || !now.Before(sess.ExpiresAt) || !now.Before(rt.CreatedAt.Add(idle)) ||
			!now.Before(sess.IssuedAt.Add(most)) {
			return a.fail(tx, errRefreshExpired)
		}
		// A sign-in without the account's second factor does not slide
		// past its first token: refreshing would turn a day of a pending
		// session into the project's maximum.
		if secondFactorPending(sess.Proofs, en) {
			return a.fail(tx, errRefreshPending)
		}
		// The token presented is kept, used, as long as its family may
		// live: presenting it again is reuse.
		used := now
		rt.UsedAt = &used
		if end := sess.IssuedAt.Add(most); end.After(rt.ExpiresAt) {
			rt.ExpiresAt = end
		}
		if err := tx.PutRefreshToken(rt); err != nil {
			return err
		}
		iat := now.Truncate(time.Second)
		sess.ExpiresAt = sessionExpiry(p, sess.IssuedAt, iat)
		if iat.After(sess.LastSeenAt) {
			sess.LastSeenAt = iat
		}
		if err := tx.PutSession(sess); err != nil {
			return err
		}
		tok, err := s.newRefreshToken(tx, sess, now)
		if err != nil {
			return err
		}
		out = &Refreshed{RefreshToken: tok, Session: sess, project: p, issued: iat, ExpiresAt: tokenExpiry(p, iat, sess.ExpiresAt)}
		if s.obs != nil {
			tx.OnCommit(func() { s.obs.AuthEvent(methodSession, "refresh", "") })
		}
		return nil
	})
	if err := a.result(err); err != nil {
		return nil, err
	}
	tok, pr, err := s.signToken(out.project, out.Session, out.issued, out.ExpiresAt)
	if err != nil {
		return nil, internal(err)
	}
	out.Token = tok
	// Just signed here: the first check of the new token (the app's, at
	// once) skips the signature's verification.
	s.tokens.put(tok, pr)
	return out, nil
}
