package bolt

import (
	"encoding/binary"
	"time"

	"latchkey/store"
)

// EnqueueMail assigns m an id and queues it.
func (tx txn) EnqueueMail(m *store.Mail) error {
	key, n, err := tx.nextSeq(bucketMail)
	if err != nil {
		return err
	}
	m.ID = n
	return tx.bucket(bucketMail).Put(key, encodeMail(m))
}

// DueMail returns up to limit queued messages whose next attempt is at or
// before now, oldest first.
func (tx txn) DueMail(now time.Time, limit int) ([]*store.Mail, error) {
	var out []*store.Mail
	c := tx.bucket(bucketMail).Cursor()
	for k, v := c.First(); k != nil && len(out) < limit; k, v = c.Next() {
		m, err := decodeMail(k, v)
		if err != nil {
			return nil, err
		}
		if !m.NextAttemptAt.After(now) {
			out = append(out, m)
		}
	}
	return out, nil
}

// PutMail updates a queued message (after a failed attempt).
func (tx txn) PutMail(m *store.Mail) error {
	return tx.bucket(bucketMail).Put(u64(m.ID), encodeMail(m))
}

// DeleteMail removes a message from the queue.
func (tx txn) DeleteMail(id uint64) error {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], id)
	return tx.del(bucketMail, k[:])
}

// MailCount returns how many messages are queued.
func (tx txn) MailCount() (int, error) { return keyCount(tx.bucket(bucketMail)), nil }

// RecentMail calls fn for queued messages newest first until it returns
// false.
func (tx txn) RecentMail(fn func(m *store.Mail) bool) error {
	c := tx.bucket(bucketMail).Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		m, err := decodeMail(k, v)
		if err != nil {
			return err
		}
		if !fn(m) {
			return nil
		}
	}
	return nil
}
