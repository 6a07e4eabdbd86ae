package postgres

import (
	"errors"
	"math"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// One-time codes (and replay marks) in codes, send and failure histories
// in throttles: both keyed by (project_id, kind, subject), so that a
// project's rows are a prefix of the primary key (DeleteProject).

const (
	sqlCode = `SELECT phone, email, hash, attempts, created_at, expires_at
		FROM codes WHERE project_id = $1 AND kind = $2 AND subject = $3`
	sqlPutCode = `INSERT INTO codes (project_id, kind, subject, phone, email, hash, attempts, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (project_id, kind, subject) DO UPDATE SET phone = excluded.phone,
			email = excluded.email, hash = excluded.hash, attempts = excluded.attempts,
			created_at = excluded.created_at, expires_at = excluded.expires_at`
	sqlDeleteCode = `DELETE FROM codes WHERE project_id = $1 AND kind = $2 AND subject = $3`
	sqlThrottle   = `SELECT sends, keep_until
		FROM throttles WHERE project_id = $1 AND kind = $2 AND subject = $3`
	sqlPutThrottle = `INSERT INTO throttles (project_id, kind, subject, sends, keep_until, due)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (project_id, kind, subject) DO UPDATE SET sends = excluded.sends,
			keep_until = excluded.keep_until, due = excluded.due`
	sqlDeleteThrottle = `DELETE FROM throttles WHERE project_id = $1 AND kind = $2 AND subject = $3`
)

// Code returns the pending code of (kind, projectID, subject).
func (tx *txn) Code(kind, projectID, subject string) (*store.Code, error) {
	if !storable(kind, projectID) {
		return nil, store.ErrNotFound
	}
	if c, err, ok := tx.fetchedCode(rowKey{'c', kind, projectID, subject}); ok {
		return c, err
	}
	c, err := scanCode(tx.row(sqlCode, projectID, kind, []byte(subject)), kind, projectID, subject)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return c, tx.note(unavailable(err))
}

// scanCode reads the row of sqlCode, the code of (kind, projectID,
// subject).
func scanCode(row pgx.Row, kind, projectID, subject string) (*store.Code, error) {
	c := &store.Code{Kind: kind, ProjectID: projectID, Subject: subject}
	var attempts int64
	if err := row.Scan(&c.Phone, &c.Email, &c.Hash, &attempts, timeDest(&c.CreatedAt), timeDest(&c.ExpiresAt)); err != nil {
		return nil, err
	}
	c.Attempts = int(attempts)
	return c, nil
}

// PutCode stores c under (c.Kind, c.ProjectID, c.Subject), replacing the
// code there.
func (tx *txn) PutCode(c *store.Code) error {
	tx.forget(rowKey{'c', c.Kind, c.ProjectID, c.Subject})
	tx.later(sqlPutCode, c.ProjectID, c.Kind, []byte(c.Subject), c.Phone, c.Email, c.Hash,
		int64(c.Attempts), timeArg(c.CreatedAt), timeArg(c.ExpiresAt))
	return nil
}

// DeleteCode removes the code under (c.Kind, c.ProjectID, c.Subject).
func (tx *txn) DeleteCode(c *store.Code) error {
	if !storable(c.Kind, c.ProjectID) {
		return nil
	}
	tx.forget(rowKey{'c', c.Kind, c.ProjectID, c.Subject})
	tx.later(sqlDeleteCode, c.ProjectID, c.Kind, []byte(c.Subject))
	return nil
}

// Throttle returns the history of (kind, projectID, subject), an empty
// one when none is stored.
//
// Callers read a history, change it and write it back (PutThrottle) in
// one Update: at SERIALIZABLE, two transactions doing that to one row
// concurrently cannot both commit (the loser is aborted with a
// serialization failure and run again), so no entry is lost.
func (tx *txn) Throttle(kind, projectID, subject string) (*store.Throttle, error) {
	if !storable(kind, projectID) {
		return &store.Throttle{}, nil
	}
	if t, ok := tx.fetchedThrottle(rowKey{'t', kind, projectID, subject}); ok {
		return t, nil
	}
	t, err := scanThrottle(tx.row(sqlThrottle, projectID, kind, []byte(subject)))
	if errors.Is(err, pgx.ErrNoRows) {
		return &store.Throttle{}, nil
	} else if err != nil {
		return nil, tx.note(unavailable(err))
	}
	return t, nil
}

// scanThrottle reads the row of sqlThrottle.
func scanThrottle(row pgx.Row) (*store.Throttle, error) {
	var sends []*int64
	t := &store.Throttle{}
	if err := row.Scan(&sends, timeDest(&t.KeepUntil)); err != nil {
		return nil, err
	}
	t.Sends = timesOf(sends)
	return t, nil
}

// PutThrottle stores t as the history of (kind, projectID, subject), or
// deletes it when t has no Sends.
func (tx *txn) PutThrottle(kind, projectID, subject string, t *store.Throttle) error {
	tx.forget(rowKey{'t', kind, projectID, subject})
	if len(t.Sends) == 0 {
		tx.later(sqlDeleteThrottle, projectID, kind, []byte(subject))
		return nil
	}
	tx.later(sqlPutThrottle, projectID, kind, []byte(subject),
		nanosSlice(t.Sends), timeArg(t.KeepUntil), throttleDue(t))
	return nil
}

// throttleDue returns when the sweep deletes t, as the due column holds
// it: ThrottleIdle after its newest (last) entry or its KeepUntil,
// whichever is later, in Unix nanoseconds; the smallest bigint (due at
// once) when both are zero.
func throttleDue(t *store.Throttle) int64 {
	last := t.KeepUntil
	if n := len(t.Sends); n > 0 && t.Sends[n-1].After(last) {
		last = t.Sends[n-1]
	}
	if last.IsZero() {
		return math.MinInt64
	}
	return unixNano(last.Add(store.ThrottleIdle))
}
