package postgres

import (
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// Sessions: one row each in sessions, indexed by user (sessions_user:
// user_id, id) and by expiry (sessions_due). A user's sessions need no
// entries of their own: the index is the list.

const sessionCols = `id, user_id, project_id, method, issued_at, expires_at, stepped_up_at, last_seen_at, ip, user_agent, proof_methods, proof_times, proof_synced`

// sessionRow is a session as scanned: the IP and the user agent are
// bytea, which takes any bytes a header brought; the proofs are two
// arrays side by side, NULL for a session stored before them, which reads
// from its step-up time (stepped).
type sessionRow struct {
	s         store.Session
	ip, agent []byte
	stepped   time.Time
	methods   []string
	times     []int64
	synced    []bool
}

// dest returns the scan destinations of sessionCols in r.
func (r *sessionRow) dest() []any {
	s := &r.s
	return []any{&s.ID, &s.UserID, &s.ProjectID, &s.Method, timeDest(&s.IssuedAt), timeDest(&s.ExpiresAt),
		timeDest(&r.stepped), timeDest(&s.LastSeenAt), &r.ip, &r.agent, &r.methods, &r.times, &r.synced}
}

// session returns the scanned session.
func (r *sessionRow) session() *store.Session {
	r.s.IP, r.s.UserAgent = string(r.ip), string(r.agent)
	switch {
	case r.methods == nil:
		r.s.Proofs = store.LegacyProofs(r.s.Method, r.s.IssuedAt, r.stepped)
	case len(r.methods) > 0:
		r.s.Proofs = make([]store.Proof, len(r.methods))
		for i, m := range r.methods {
			r.s.Proofs[i].Method = m
			if i < len(r.times) && r.times[i] != 0 {
				r.s.Proofs[i].At = time.Unix(0, r.times[i]).UTC()
			}
			r.s.Proofs[i].Synced = i < len(r.synced) && r.synced[i]
		}
	}
	return &r.s
}

// proofArgs returns s's proofs as the array arguments: the methods and
// times never NULL (an empty array for none), so that no stored session
// reads as one stored before proofs; which are synced passkeys, NULL
// when none is.
func proofArgs(s *store.Session) ([]string, []int64, []bool) {
	methods, times := make([]string, len(s.Proofs)), make([]int64, len(s.Proofs))
	var synced []bool
	for i, p := range s.Proofs {
		methods[i] = p.Method
		if !p.At.IsZero() {
			times[i] = unixNano(p.At)
		}
		if p.Synced {
			if synced == nil {
				synced = make([]bool, len(s.Proofs))
			}
			synced[i] = true
		}
	}
	return methods, times, synced
}

// sessions runs a query of sessionCols and returns its sessions, never
// nil.
func (tx *txn) sessions(sql string, args ...any) ([]*store.Session, error) {
	rows, err := scanAll(tx, sql, args, (*sessionRow).dest)
	if err != nil {
		return nil, err
	}
	out := make([]*store.Session, len(rows))
	for i, r := range rows {
		out[i] = r.session()
	}
	return out, nil
}

// Session returns the session with id, expired or not.
func (tx *txn) Session(id string) (*store.Session, error) {
	if !validText(id) {
		return nil, store.ErrNotFound
	}
	var r sessionRow
	if err := tx.one(`SELECT `+sessionCols+` FROM sessions WHERE id = $1`, []any{id}, r.dest()...); err != nil {
		return nil, err
	}
	return r.session(), nil
}

// SessionExists reports whether a session row with id exists, expired or
// not: one probe of the primary key, one round trip.
//
// Replicas (rep-sync): in a read-only transaction, a session known to
// exist is answered from the session cache (sessioncache.go), with no
// round trip; the cache is kept coherent by the invalidation feed.
func (tx *txn) SessionExists(id string) (bool, error) {
	if !validText(id) {
		return false, nil
	}
	return tx.cachedSessionExists(id)
}

// PutSession creates or replaces the session s.ID, due for the sweep at
// its ExpiresAt. Replacing one (a step-up's proof) writes
// store.ChangeSession to the feed in the same statement, so that every
// replica's session cache drops it; creating one writes nothing there
// (no cache can hold a session not yet created). The upsert tells which
// it did by the new row's xmax: an update of a row locks it first
// (ON CONFLICT), which leaves the transaction's id there, an insert
// leaves 0. This replica's cache drops the session as the transaction
// commits either way.
func (tx *txn) PutSession(s *store.Session) error {
	methods, times, synced := proofArgs(s)
	tx.later(`WITH s AS (INSERT INTO sessions (`+sessionCols+`, due)
		VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8, $9, $10, $11, $14, $12)
		ON CONFLICT (id) DO UPDATE SET user_id = excluded.user_id, project_id = excluded.project_id,
			method = excluded.method, issued_at = excluded.issued_at, expires_at = excluded.expires_at,
			stepped_up_at = NULL, last_seen_at = excluded.last_seen_at,
			ip = excluded.ip, user_agent = excluded.user_agent,
			proof_methods = excluded.proof_methods, proof_times = excluded.proof_times,
			proof_synced = excluded.proof_synced, due = excluded.due
		RETURNING xmax)
		INSERT INTO changes (kind, id) SELECT $13, $1 FROM s WHERE s.xmax::text <> '0'`,
		s.ID, s.UserID, s.ProjectID, s.Method, timeArg(s.IssuedAt), timeArg(s.ExpiresAt),
		timeArg(s.LastSeenAt), []byte(s.IP), []byte(s.UserAgent), methods, times, dueNanos(s.ExpiresAt),
		string(store.ChangeSession), synced)
	tx.dropOnCommit(s.ID, false)
	tx.putSession = s.ID
	return nil
}

// sqlSecondFactors is whether user $1 has TOTP and SMS enrolled: two
// probes of factors' primary key.
const sqlSecondFactors = `EXISTS (SELECT 1 FROM factors f WHERE f.user_id = $1 AND f.kind = 'totp' AND f.status = 'enrolled'),
		EXISTS (SELECT 1 FROM factors f WHERE f.user_id = $1 AND f.kind = 'sms' AND f.status = 'enrolled')`

// sqlEnrolled is what user $1 has enrolled in project $2 (store.Enrolled):
// two probes of factors' primary key and one of passkeys_user.
const sqlEnrolled = sqlSecondFactors + `,
		EXISTS (SELECT 1 FROM passkeys p WHERE p.user_id = $1 AND p.project_id = $2)`

// sqlSessionEnrolled is session $1 and what its user has enrolled.
var sqlSessionEnrolled = sync.OnceValue(func() string {
	return `SELECT ` + sessionCols + `, ` +
		strings.NewReplacer("$1", "s.user_id", "$2", "s.project_id").Replace(sqlEnrolled) + `
	FROM sessions s WHERE s.id = $1`
})

// SessionEnrolled returns the session with id and what its user has
// enrolled, in one statement.
func (tx *txn) SessionEnrolled(id string) (*store.Session, store.Enrolled, error) {
	var en store.Enrolled
	if !validText(id) {
		return nil, en, store.ErrNotFound
	}
	var r sessionRow
	err := tx.one(sqlSessionEnrolled(), []any{id}, append(r.dest(), &en.TOTP, &en.SMS, &en.Passkey)...)
	if err != nil {
		return nil, en, err
	}
	return r.session(), en, nil
}

// ReadEnrolled sets *dst to what userID has enrolled in projectID with
// the transaction's next statement or its COMMIT (a queued read, as
// later queues a write): it costs no round trip of its own.
func (tx *txn) ReadEnrolled(projectID, userID string, dst *store.Enrolled) error {
	*dst = store.Enrolled{}
	if !validText(projectID) || !validText(userID) {
		return nil
	}
	tx.laterRow(`SELECT `+sqlEnrolled, []any{userID, projectID}, func(row pgx.Row) error {
		return row.Scan(&dst.TOTP, &dst.SMS, &dst.Passkey)
	})
	return nil
}

// DeleteSession removes the session s.ID.
func (tx *txn) DeleteSession(s *store.Session) error {
	if !validText(s.ID) {
		return nil
	}
	if s.ID == tx.putSession {
		tx.putSession = ""
	}
	// Its refresh tokens go with it (refresh.go: no foreign key).
	tag, err := tx.exec(`WITH r AS (DELETE FROM refresh_tokens WHERE session_id = $1)
		DELETE FROM sessions WHERE id = $1`, s.ID)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	// Replicas (rep-sync): every replica's session cache drops it
	// (feed.go).
	return tx.changed(store.ChangeSession, s.ID)
}

// UserSessions returns the ids of userID's sessions in id byte order.
func (tx *txn) UserSessions(userID string) ([]string, error) {
	if !validText(userID) {
		return nil, nil
	}
	rows, err := tx.query(`SELECT id FROM sessions WHERE user_id = $1 ORDER BY id`, userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, tx.note(unavailable(rows.Err()))
}

// UserSessionRows returns userID's sessions in id byte order; never nil.
func (tx *txn) UserSessionRows(userID string) ([]*store.Session, error) {
	if !validText(userID) {
		return []*store.Session{}, nil
	}
	return tx.sessions(`SELECT `+sessionCols+` FROM sessions WHERE user_id = $1 ORDER BY id`, userID)
}

// RecentUserSessions returns up to limit of userID's sessions, newest
// first, and whether older ones remain; never nil. It reads limit+1
// rows of sessions_user backwards.
func (tx *txn) RecentUserSessions(userID string, limit int) ([]*store.Session, bool, error) {
	if !validText(userID) {
		return []*store.Session{}, false, nil
	}
	limit = max(limit, 0)
	out, err := tx.sessions(`SELECT `+sessionCols+` FROM sessions WHERE user_id = $1 ORDER BY id DESC LIMIT $2`, userID, limit+1)
	if err != nil {
		return nil, false, err
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// TouchSession sets session id's LastSeenAt to t when t is later, unless
// the session was never touched and t is less than grace after its
// IssuedAt (see store.Tx): one conditional update, which writes nothing
// when it does not apply.
func (tx *txn) TouchSession(id string, t time.Time, grace time.Duration) error {
	if t.IsZero() || !validText(id) {
		return nil // the zero time is later than no LastSeenAt
	}
	// Never touched: written when t.Sub(IssuedAt) >= grace, that is when
	// IssuedAt <= t - grace (or IssuedAt is zero: t.Sub saturates).
	_, err := tx.exec(`UPDATE sessions SET last_seen_at = $2
		WHERE id = $1 AND CASE WHEN last_seen_at IS NULL THEN issued_at IS NULL OR issued_at <= $3
			ELSE last_seen_at < $2 END`,
		id, unixNano(t), unixNano(t.Add(-grace)))
	return err
}

// DeleteUserSessions removes every session of userID.
func (tx *txn) DeleteUserSessions(userID string) error {
	if !validText(userID) {
		return nil
	}
	tx.putSession = ""
	// Their refresh tokens go with them (refresh.go: no foreign key).
	var n int
	err := tx.one(`WITH s AS (DELETE FROM sessions WHERE user_id = $1 RETURNING id),
			r AS (DELETE FROM refresh_tokens WHERE session_id = ANY (ARRAY(SELECT id FROM s)))
		SELECT count(*) FROM s`, []any{userID}, &n)
	if err != nil || n == 0 {
		return err
	}
	// Replicas (rep-sync): every replica's session cache drops them
	// (feed.go).
	return tx.changed(store.ChangeUserSessions, userID)
}
