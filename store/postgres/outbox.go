package postgres

import (
	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// The event outbox (table outbox): webhook events written in the
// transaction of the change they report, fanned out in seq order.

// AppendEvent adds e to the outbox and assigns e.Seq by the commit (one
// statement, queued: txn.later).
func (tx *txn) AppendEvent(e *store.Event) error {
	tx.laterRow(`INSERT INTO outbox (id, project_id, type, created_at, data) VALUES ($1, $2, $3, $4, $5) RETURNING seq`,
		[]any{e.ID, e.ProjectID, e.Type, timeArg(e.CreatedAt), nonNil(e.Data)}, func(row pgx.Row) error {
			var seq int64
			err := row.Scan(&seq)
			e.Seq = uint64(seq)
			return err
		})
	// Replicas (rep-sync): the replica that delivers webhooks wakes its
	// worker (feed.go).
	return tx.wake(store.ChangeOutbox)
}

// HasEvents reports whether the outbox holds any event.
func (tx *txn) HasEvents() (bool, error) {
	var yes bool
	err := tx.one(`SELECT (SELECT min(seq) FROM outbox) IS NOT NULL`, nil, &yes) // one probe of the key
	return yes, err
}

// EventsAfter returns up to limit events whose Seq is greater than seq,
// in Seq order.
func (tx *txn) EventsAfter(seq uint64, limit int) ([]*store.Event, error) {
	if limit <= 0 || seq >= 1<<63-1 {
		return nil, nil
	}
	rows, err := tx.query(`SELECT seq, id, project_id, type, created_at, data FROM outbox
		WHERE seq > $1 ORDER BY seq LIMIT $2`, int64(seq), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Event
	for rows.Next() {
		e := &store.Event{}
		var seq int64
		var created *int64
		if err := rows.Scan(&seq, &e.ID, &e.ProjectID, &e.Type, &created, &e.Data); err != nil {
			return nil, err
		}
		e.Seq, e.CreatedAt = uint64(seq), timeOfNull(created)
		out = append(out, e)
	}
	return out, tx.note(unavailable(rows.Err()))
}

// DeleteEvent removes the outbox event with seq.
func (tx *txn) DeleteEvent(seq uint64) error {
	if seq > 1<<63-1 {
		return nil
	}
	_, err := tx.exec(`DELETE FROM outbox WHERE seq = $1`, int64(seq))
	return err
}
