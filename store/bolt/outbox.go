package bolt

import "latchkey/store"

// AppendEvent adds e to the outbox and assigns its sequence number.
func (tx txn) AppendEvent(e *store.Event) error {
	key, n, err := tx.nextSeq(bucketOutbox)
	if err != nil {
		return err
	}
	e.Seq = n
	return tx.bucket(bucketOutbox).Put(key, encodeEvent(e))
}

// HasEvents reports whether the outbox holds any event.
func (tx txn) HasEvents() (bool, error) {
	k, _ := tx.bucket(bucketOutbox).Cursor().First()
	return k != nil, nil
}

// EventsAfter returns up to limit outbox events with a sequence number
// greater than seq, in order.
func (tx txn) EventsAfter(seq uint64, limit int) ([]*store.Event, error) {
	var out []*store.Event
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
func (tx txn) DeleteEvent(seq uint64) error { return tx.del(bucketOutbox, u64(seq)) }
