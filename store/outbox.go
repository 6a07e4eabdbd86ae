package store

import (
	"encoding/json"
	"time"
)

// Event is a webhook event in the transactional outbox, written in the
// same transaction as the change it reports.
type Event struct {
	Seq       uint64          `json:"seq"`
	ID        string          `json:"id"`
	ProjectID string          `json:"projectId"`
	Type      string          `json:"type"`
	CreatedAt time.Time       `json:"createdAt"`
	Data      json.RawMessage `json:"data"`
}

// AppendEvent adds e to the outbox and assigns its sequence number.
func (tx boltTx) AppendEvent(e *Event) error {
	key, n, err := tx.nextSeq(bucketOutbox)
	if err != nil {
		return err
	}
	e.Seq = n
	return tx.bucket(bucketOutbox).Put(key, encodeEvent(e))
}

// HasEvents reports whether the outbox holds any event.
func (tx boltTx) HasEvents() (bool, error) {
	k, _ := tx.bucket(bucketOutbox).Cursor().First()
	return k != nil, nil
}

// EventsAfter returns up to limit outbox events with a sequence number
// greater than seq, in order.
func (tx boltTx) EventsAfter(seq uint64, limit int) ([]*Event, error) {
	var out []*Event
	c := tx.bucket(bucketOutbox).Cursor()
	for k, v := c.Seek(u64(seq + 1)); k != nil && len(out) < limit; k, v = c.Next() {
		e, err := decodeEvent(k, v)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// DeleteEvent removes an event from the outbox once it has been fanned out.
func (tx boltTx) DeleteEvent(seq uint64) error { return tx.del(bucketOutbox, u64(seq)) }
