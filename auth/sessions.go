package auth

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"latchkey/store"
)

// Logout scopes (POST /logout {scope}).
const (
	LogoutThis   = ""       // the calling session (the plain logout)
	LogoutOthers = "others" // every other session of the user
	LogoutAll    = "all"    // every session of the user, this one too
)

// maxSessionIP bounds the IP text a session row keeps.
const maxSessionIP = 64

// SessionView is a session as GET /sessions and the admin API show it:
// times RFC 3339 UTC; ip and userAgent null when the login recorded none.
type SessionView struct {
	ID         string  `json:"id"`
	Method     string  `json:"method"`
	CreatedAt  string  `json:"createdAt"`
	ExpiresAt  string  `json:"expiresAt"`
	LastSeenAt string  `json:"lastSeenAt"`
	IP         *string `json:"ip"`
	UserAgent  *string `json:"userAgent"`
}

// Sessions lists the live sessions of the principal's user, newest first
// (401 INVALID_SESSION when the calling session is gone).
func (s *Service) Sessions(ctx context.Context, pr *Principal) ([]SessionView, error) {
	var rows []*store.Session
	err := s.db.View(ctx, func(tx store.Tx) error {
		if live, err := tx.SessionExists(pr.SessionID); err != nil {
			return err
		} else if !live {
			return ErrInvalidSession
		}
		var err error
		rows, err = tx.UserSessionRows(pr.UserID)
		return err
	})
	if err != nil {
		return nil, internal(err)
	}
	return s.viewSessions(rows), nil
}

// AdminSessions lists the live sessions of user id, newest first (404
// USER_NOT_FOUND).
func (s *Service) AdminSessions(ctx context.Context, id string) ([]SessionView, error) {
	var rows []*store.Session
	err := s.db.View(ctx, func(tx store.Tx) error {
		if _, err := tx.User(id); errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		var err error
		rows, err = tx.UserSessionRows(id)
		return err
	})
	if err != nil {
		return nil, internal(err)
	}
	return s.viewSessions(rows), nil
}

// viewSessions drops expired rows (the sweep has not reached them yet)
// and orders the rest newest first. lastSeenAt is the later of the
// stored time and the one the session check noted since the last flush.
func (s *Service) viewSessions(rows []*store.Session) []SessionView {
	now := s.now()
	rows = slices.DeleteFunc(rows, func(r *store.Session) bool { return !now.Before(r.ExpiresAt) })
	slices.SortFunc(rows, func(a, b *store.Session) int {
		if c := b.IssuedAt.Compare(a.IssuedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	out := make([]SessionView, 0, len(rows))
	for _, r := range rows {
		seen := r.IssuedAt
		if r.LastSeenAt.After(seen) {
			seen = r.LastSeenAt
		}
		if sec := s.activity.lastSeen(r.ID); sec > seen.Unix() {
			seen = unixTime(sec)
		}
		out = append(out, SessionView{ID: r.ID, Method: r.Method, CreatedAt: formatTime(r.IssuedAt),
			ExpiresAt: formatTime(r.ExpiresAt), LastSeenAt: formatTime(seen),
			IP: nullable(r.IP), UserAgent: nullable(r.UserAgent)})
	}
	return out
}

// RevokeSession ends session id of the principal's user and emits
// session.revoked. Any other id (another user's, unknown, expired) is 404
// SESSION_NOT_FOUND and changes nothing. The calling session may end
// itself this way.
func (s *Service) RevokeSession(ctx context.Context, pr *Principal, id string) error {
	err := s.db.Update(ctx, func(tx store.Tx) error {
		if live, err := tx.SessionExists(pr.SessionID); err != nil {
			return err
		} else if !live {
			return ErrInvalidSession
		}
		sess, err := tx.Session(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrSessionNotFound
		} else if err != nil {
			return err
		}
		if sess.UserID != pr.UserID || sess.ProjectID != pr.ProjectID || !s.now().Before(sess.ExpiresAt) {
			return ErrSessionNotFound
		}
		return s.revokeSession(tx, sess)
	})
	return internal(err)
}

// Logout ends sessions of the principal's user and emits session.revoked
// for each: scope LogoutThis the calling session, LogoutOthers every
// other one, LogoutAll all of them. Another scope is 400
// VALIDATION_ERROR; a calling session that is gone 401 INVALID_SESSION.
func (s *Service) Logout(ctx context.Context, pr *Principal, scope string) error {
	if scope != LogoutThis && scope != LogoutOthers && scope != LogoutAll {
		return Invalid(`scope must be "others" or "all" (or omitted: this session).`)
	}
	err := s.db.Update(ctx, func(tx store.Tx) error {
		sess, err := tx.Session(pr.SessionID)
		if errors.Is(err, store.ErrNotFound) {
			return ErrInvalidSession
		} else if err != nil {
			return err
		}
		if scope == LogoutThis {
			return s.revokeSession(tx, sess)
		}
		rows, err := tx.UserSessionRows(sess.UserID)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if scope == LogoutOthers && r.ID == sess.ID {
				continue
			}
			if err := s.revokeSession(tx, r); err != nil {
				return err
			}
		}
		return nil
	})
	return internal(err)
}

// AdminRevokeSessions ends every session of user id, emitting
// session.revoked for each, and returns how many ended (404
// USER_NOT_FOUND).
func (s *Service) AdminRevokeSessions(ctx context.Context, id string) (int, error) {
	var n int
	err := s.db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User(id)
		if errors.Is(err, store.ErrNotFound) {
			return ErrUserNotFound
		} else if err != nil {
			return err
		}
		ids, err := tx.UserSessions(u.ID)
		if err != nil {
			return err
		}
		n = len(ids)
		return s.revokeAll(tx, u)
	})
	if err != nil {
		return 0, internal(err)
	}
	return n, nil
}

// revokeSession deletes one session inside tx, emits session.revoked
// and queues the back-channel logouts of its OpenID clients.
func (s *Service) revokeSession(tx store.Tx, sess *store.Session) error {
	if err := tx.DeleteSession(sess); err != nil {
		return err
	}
	if err := s.queueBackchannelLogout(tx, sess.ProjectID, sess.UserID, sess.ID); err != nil {
		return err
	}
	return s.emit(tx, sess.ProjectID, "session.revoked", map[string]string{"user_id": sess.UserID, "session_id": sess.ID})
}

// revokeOtherSessions deletes, inside tx, every session of userID but
// keep, emitting session.revoked for each.
func (s *Service) revokeOtherSessions(tx store.Tx, userID, keep string) error {
	rows, err := tx.UserSessionRows(userID)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.ID == keep {
			continue
		}
		if err := s.revokeSession(tx, r); err != nil {
			return err
		}
	}
	return nil
}

// FlushLastSeen writes the last-seen times the session check noted since
// the previous flush, sorted by session id, in transactions of at most
// lastSeenBatch sessions, each a function of the group commit, so each
// session's row is written at most once per flush and the writer is
// never held for long. Sessions deleted
// meanwhile stay deleted. The scheduler calls it every minute and once
// more at shutdown; times a failed transaction could not write are kept
// for the next flush.
func (s *Service) FlushLastSeen(ctx context.Context) error {
	entries := s.activity.take(s.now().Unix())
	slices.SortFunc(entries, func(a, b seenEntry) int { return cmp.Compare(a.id, b.id) })
	for i := 0; i < len(entries); i += lastSeenBatch {
		chunk := entries[i:min(len(entries), i+lastSeenBatch)]
		// One function of a group commit: background work shares the
		// requests' commits instead of holding the writer. Touching twice
		// is harmless (a later time wins).
		err := s.db.Batch(ctx, func(tx store.Tx) error {
			for _, e := range chunk {
				if err := tx.TouchSession(e.id, unixTime(e.seen), lastSeenLag); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			s.activity.restore(entries[i:])
			return internal(err)
		}
	}
	return nil
}

// countWrite counts a call of session pr that writes (or starts a
// ceremony) against its project p's per-session limit at unix second
// now: ErrSessionRateLimit, with the wait, past it.
func (s *Service) countWrite(pr *Principal, p *store.Project, now int64) error {
	if ok, retry := s.activity.hit(pr.SessionID, pr.IssuedAt, now, sessionRateLimit(p)); !ok {
		return ErrSessionRateLimit.WithRetry(time.Duration(retry) * time.Second)
	}
	return nil
}

// clipIP bounds the IP text a session row keeps.
func clipIP(ip string) string {
	if len(ip) > maxSessionIP {
		return ip[:maxSessionIP]
	}
	return ip
}
