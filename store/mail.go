package store

import (
	"encoding/binary"
	"time"
)

// Mail is a queued message. Body is sealed with the keyring because it
// carries a code or link; it is deleted once sent.
type Mail struct {
	ID            uint64    `json:"id"`
	ProjectID     string    `json:"projectId"`
	To            string    `json:"to"`
	Kind          string    `json:"kind"`
	Body          []byte    `json:"body"`
	Attempts      int       `json:"attempts"`
	LastError     string    `json:"lastError,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	NextAttemptAt time.Time `json:"nextAttemptAt"`
}

// EnqueueMail assigns m an id and queues it.
func (tx boltTx) EnqueueMail(m *Mail) error {
	key, n, err := tx.nextSeq(bucketMail)
	if err != nil {
		return err
	}
	m.ID = n
	return tx.bucket(bucketMail).Put(key, encodeMail(m))
}

// DueMail returns up to limit queued messages whose next attempt is at or
// before now, oldest first.
func (tx boltTx) DueMail(now time.Time, limit int) ([]*Mail, error) {
	var out []*Mail
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
func (tx boltTx) PutMail(m *Mail) error { return tx.bucket(bucketMail).Put(u64(m.ID), encodeMail(m)) }

// DeleteMail removes a message from the queue.
func (tx boltTx) DeleteMail(id uint64) error {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], id)
	return tx.del(bucketMail, k[:])
}

// MailCount returns how many messages are queued.
func (tx boltTx) MailCount() (int, error) { return keyCount(tx.bucket(bucketMail)), nil }

// MailContent is what a queued message says, sealed into Mail.Body (the
// keyring's aad is MailAAD). Kind "otp" carries Code, kind "magic" Link.
type MailContent struct {
	Project    string `json:"project"`
	Code       string `json:"code,omitempty"`
	Link       string `json:"link,omitempty"`
	TTLSeconds int    `json:"ttlSeconds"`
	// NewEmailMasked is, in the notice of an address change mailed to
	// the old address, the new address masked ("j***@e***.com").
	NewEmailMasked string `json:"newEmailMasked,omitempty"`

	// Subject, Text and HTML, when Subject is set, are the message as
	// the project's template for Locale rendered it;
	// without them the mail package renders its built-in English.
	Subject string `json:"subject,omitempty"`
	Text    string `json:"text,omitempty"`
	HTML    string `json:"html,omitempty"`
	Locale  string `json:"locale,omitempty"`
}

// MailAAD binds sealed mail bodies to their purpose.
var MailAAD = []byte("mail")

// RecentMail calls fn for queued messages newest first until it returns
// false.
func (tx boltTx) RecentMail(fn func(m *Mail) bool) error {
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
