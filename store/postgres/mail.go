package postgres

import (
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// The mail queue (table mail), in id order.

const mailColumns = `id, project_id, recipient, kind, body, attempts, last_error, created_at, next_attempt_at`

// scanMail reads a row of mailColumns.
func scanMail(row pgx.Row) (*store.Mail, error) {
	m := &store.Mail{}
	var id, next int64
	var lastError []byte
	var created *int64
	if err := row.Scan(&id, &m.ProjectID, &m.To, &m.Kind, &m.Body, &m.Attempts, &lastError, &created, &next); err != nil {
		return nil, err
	}
	m.ID, m.LastError, m.CreatedAt, m.NextAttemptAt = uint64(id), string(lastError), timeOfNull(created), attemptTime(next)
	return m, nil
}

// mailArgs are m's columns after id, for $2...$9.
func mailArgs(m *store.Mail) []any {
	return []any{m.ProjectID, m.To, m.Kind, nonNil(m.Body), m.Attempts, []byte(m.LastError), timeArg(m.CreatedAt), attemptNanos(m.NextAttemptAt)}
}

// EnqueueMail queues m and assigns m.ID by the commit (one statement,
// queued: txn.later).
func (tx *txn) EnqueueMail(m *store.Mail) error {
	tx.laterRow(`INSERT INTO mail (project_id, recipient, kind, body, attempts, last_error, created_at, next_attempt_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`, mailArgs(m), func(row pgx.Row) error {
		var id int64
		err := row.Scan(&id)
		m.ID = uint64(id)
		return err
	})
	// Replicas (rep-sync): the replica that sends mail wakes its queue
	// (feed.go).
	return tx.wake(store.ChangeMail)
}

// DueMail returns up to limit messages due at now, in id order.
func (tx *txn) DueMail(now time.Time, limit int) ([]*store.Mail, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := tx.query(`SELECT `+mailColumns+` FROM mail WHERE next_attempt_at <= $1 ORDER BY id LIMIT $2`, unixNano(now), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Mail
	for rows.Next() {
		m, err := scanMail(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, tx.note(unavailable(rows.Err()))
}

// PutMail replaces the message m.ID, or queues it again under its id
// when it is gone (as bbolt's put does); queued like DeleteMail.
func (tx *txn) PutMail(m *store.Mail) error {
	id, err := seqArg(m.ID)
	if err != nil {
		return err
	}
	tx.later(`INSERT INTO mail (`+mailColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, recipient = excluded.recipient,
			kind = excluded.kind, body = excluded.body, attempts = excluded.attempts, last_error = excluded.last_error,
			created_at = excluded.created_at, next_attempt_at = excluded.next_attempt_at, lease_until = NULL`,
		append([]any{id}, mailArgs(m)...)...)
	return nil
}

// DeleteMail removes the message with id (queued: txn.later; the mail
// queue deletes a whole batch of sent messages in one round trip).
func (tx *txn) DeleteMail(id uint64) error {
	if id > math.MaxInt64 {
		return nil
	}
	tx.later(`DELETE FROM mail WHERE id = $1`, int64(id))
	return nil
}

// MailCount returns how many messages are queued (it counts them all).
func (tx *txn) MailCount() (int, error) {
	var n int
	err := tx.one(`SELECT count(*) FROM mail`, nil, &n)
	return n, err
}

// RecentMail calls fn for queued messages, newest first, until fn
// returns false, reading pages that grow from 16 to 1024 messages.
func (tx *txn) RecentMail(fn func(m *store.Mail) bool) error {
	before := int64(math.MaxInt64)
	for page := 16; ; page = min(4*page, 1024) {
		rows, err := tx.query(`SELECT `+mailColumns+` FROM mail WHERE id < $1 ORDER BY id DESC LIMIT $2`, before, page)
		if err != nil {
			return err
		}
		var ms []*store.Mail
		for rows.Next() {
			m, err := scanMail(rows)
			if err != nil {
				rows.Close()
				return err
			}
			ms = append(ms, m)
		}
		rows.Close()
		if err := tx.note(unavailable(rows.Err())); err != nil {
			return err
		}
		for _, m := range ms {
			if !fn(m) {
				return nil
			}
		}
		if len(ms) < page {
			return nil
		}
		before = int64(ms[len(ms)-1].ID)
	}
}
