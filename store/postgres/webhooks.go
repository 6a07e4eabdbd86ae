package postgres

import (
	"errors"
	"math"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// Webhooks (table webhooks) and their delivery records (deliveries);
// their queued jobs are in jobs.go.

const webhookColumns = `project_id, id, url, secret, event_types, mode, created_at`

// scanWebhook reads a row of webhookColumns.
func scanWebhook(row pgx.Row) (*store.Webhook, error) {
	w := &store.Webhook{}
	var created *int64
	if err := row.Scan(&w.ProjectID, &w.ID, &w.URL, &w.Secret, &w.EventTypes, &w.Mode, &created); err != nil {
		return nil, err
	}
	w.CreatedAt = timeOfNull(created)
	return w, nil
}

// Webhook returns projectID's webhook id.
func (tx *txn) Webhook(projectID, id string) (*store.Webhook, error) {
	if !storable(projectID, id) {
		return nil, store.ErrNotFound
	}
	w, err := scanWebhook(tx.row(`SELECT `+webhookColumns+` FROM webhooks WHERE project_id = $1 AND id = $2`, projectID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	return w, tx.note(unavailable(err))
}

// Webhooks returns projectID's webhooks in id byte order (nil when it has
// none).
func (tx *txn) Webhooks(projectID string) ([]*store.Webhook, error) {
	if !storable(projectID) {
		return nil, nil
	}
	rows, err := tx.query(`SELECT `+webhookColumns+` FROM webhooks WHERE project_id = $1 ORDER BY id`, projectID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Webhook
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, tx.note(unavailable(rows.Err()))
}

// PutWebhook creates or replaces the webhook (w.ProjectID, w.ID).
func (tx *txn) PutWebhook(w *store.Webhook) error {
	_, err := tx.exec(`INSERT INTO webhooks (`+webhookColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (project_id, id) DO UPDATE SET url = excluded.url, secret = excluded.secret,
			event_types = excluded.event_types, mode = excluded.mode, created_at = excluded.created_at`,
		w.ProjectID, w.ID, w.URL, w.Secret, w.EventTypes, w.Mode, timeArg(w.CreatedAt))
	return err
}

// DeleteWebhook removes the webhook (w.ProjectID, w.ID), its queued jobs
// and its delivery records, in one statement.
func (tx *txn) DeleteWebhook(w *store.Webhook) error {
	if !storable(w.ProjectID, w.ID) {
		return nil
	}
	_, err := tx.exec(`WITH j AS (DELETE FROM jobs WHERE webhook_id = $2),
			d AS (DELETE FROM deliveries WHERE webhook_id = $2)
		DELETE FROM webhooks WHERE project_id = $1 AND id = $2`, w.ProjectID, w.ID)
	return err
}

// deleteProjectWebhooks removes the project's webhooks with their queued
// jobs and delivery records (DeleteProject), in one statement.
func (tx *txn) deleteProjectWebhooks(projectID string) error {
	if !storable(projectID) {
		return nil
	}
	_, err := tx.exec(`WITH w AS (DELETE FROM webhooks WHERE project_id = $1 RETURNING id),
			j AS (DELETE FROM jobs WHERE webhook_id = ANY (ARRAY(SELECT id FROM w)))
		DELETE FROM deliveries WHERE webhook_id = ANY (ARRAY(SELECT id FROM w))`, projectID)
	return err
}

const deliveryColumns = `seq, id, webhook_id, event_id, event_type, attempt, status, response_status, error, duration_ms, created_at, next_attempt_at`

// scanDelivery reads a row of deliveryColumns.
func scanDelivery(row pgx.Row) (*store.Delivery, error) {
	d := &store.Delivery{}
	var seq int64
	var errText []byte
	var created, next *int64
	if err := row.Scan(&seq, &d.ID, &d.WebhookID, &d.EventID, &d.EventType, &d.Attempt, &d.Status, &d.ResponseStatus,
		&errText, &d.DurationMS, &created, &next); err != nil {
		return nil, err
	}
	d.Seq, d.Error, d.CreatedAt, d.NextAttemptAt = uint64(seq), string(errText), timeOfNull(created), timePtrOf(next)
	return d, nil
}

// AddDelivery records an attempt and assigns d.Seq; the sweep deletes
// the record DeliveryLifetime after its CreatedAt.
func (tx *txn) AddDelivery(d *store.Delivery) error {
	expires := dueNanos(d.CreatedAt.Add(store.DeliveryLifetime)) // a zero CreatedAt: due at once
	var seq int64
	err := tx.one(`INSERT INTO deliveries (id, webhook_id, event_id, event_type, attempt, status, response_status,
			error, duration_ms, created_at, next_attempt_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING seq`,
		[]any{d.ID, d.WebhookID, d.EventID, d.EventType, d.Attempt, d.Status, d.ResponseStatus,
			[]byte(d.Error), d.DurationMS, timeArg(d.CreatedAt), timePtrArg(d.NextAttemptAt), expires}, &seq)
	if err != nil {
		return err
	}
	d.Seq = uint64(seq)
	return nil
}

// Deliveries returns up to limit of webhookID's records, newest first;
// never nil.
func (tx *txn) Deliveries(webhookID string, limit int) ([]*store.Delivery, error) {
	out, _, err := tx.DeliveriesBefore(webhookID, 0, limit)
	return out, err
}

// DeliveriesBefore returns up to limit of webhookID's records whose Seq
// is below before (0: from the newest), newest first, and whether older
// ones remain; never nil. One index range, read backwards.
func (tx *txn) DeliveriesBefore(webhookID string, before uint64, limit int) ([]*store.Delivery, bool, error) {
	out := []*store.Delivery{}
	if !storable(webhookID) {
		return out, false, nil
	}
	bound := int64(math.MaxInt64) // above every Seq
	if before > 0 && before < math.MaxInt64 {
		bound = int64(before)
	}
	limit = min(max(limit, 0), math.MaxInt32) // LIMIT limit+1 must not overflow
	rows, err := tx.query(`SELECT `+deliveryColumns+` FROM deliveries
		WHERE webhook_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`, webhookID, bound, limit+1)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	more := false
	for rows.Next() {
		if len(out) == limit {
			more = true
			break
		}
		d, err := scanDelivery(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, d)
	}
	return out, more, tx.note(unavailable(rows.Err()))
}
