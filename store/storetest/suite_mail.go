package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"latchkey/store"
)

// MailQueue tests the queue of mail to send (store.MailQueue).
func (s Suite) MailQueue(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.mailRoundTrip}})
}

// mailRoundTrip: every field comes back; due mail in id order, a
// message without a next attempt due at once; PutMail replaces (and
// queues a deleted one again under its id); RecentMail newest first
// across its pages, stopping when told.
func (s Suite) mailRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	m0 := &store.Mail{ProjectID: "p", To: "a@example.com", Kind: "otp", Body: []byte{1, 2, 3}, Attempts: 2, LastError: odd, CreatedAt: t0, NextAttemptAt: t0.Add(time.Minute)}
	view(t, db, func(tx store.Tx) error {
		due, err := tx.DueMail(t0, 10)
		n, err2 := tx.MailCount()
		if len(due) != 0 || n != 0 || err != nil || err2 != nil {
			return fmt.Errorf("an empty queue: %v %d, %v %v", due, n, err, err2)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		if err := tx.EnqueueMail(m0); err != nil {
			return err
		}
		for i := range 40 {
			if err := tx.EnqueueMail(&store.Mail{To: fmt.Sprint(i), CreatedAt: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	complete(t, m0)
	view(t, db, func(tx store.Tx) error {
		due, err := tx.DueMail(t0, 100)
		if err != nil || len(due) != 40 || due[0].To != "0" || !due[0].NextAttemptAt.IsZero() || due[0].ID <= m0.ID {
			return fmt.Errorf("DueMail(t0) = %d, %v", len(due), err)
		}
		if !slices.IsSortedFunc(due, func(a, b *store.Mail) int { return int(a.ID) - int(b.ID) }) {
			return fmt.Errorf("DueMail not in ID order")
		}
		due, _ = tx.DueMail(t0.Add(time.Minute), 2)
		if len(due) != 2 || due[0].ID != m0.ID {
			return fmt.Errorf("DueMail(t0+1m, 2) = %v", due)
		}
		if err := diff("mail", due[0], m0); err != nil {
			return err
		}
		var ids []uint64
		if err := tx.RecentMail(func(m *store.Mail) bool { ids = append(ids, m.ID); return true }); err != nil {
			return err
		}
		if len(ids) != 41 || !slices.IsSortedFunc(ids, func(a, b uint64) int { return int(b) - int(a) }) || ids[40] != m0.ID {
			return fmt.Errorf("RecentMail gave %v", ids)
		}
		ids = nil
		tx.RecentMail(func(m *store.Mail) bool { ids = append(ids, m.ID); return len(ids) < 3 })
		if len(ids) != 3 {
			return fmt.Errorf("RecentMail went on after false: %d", len(ids))
		}
		if n, _ := tx.MailCount(); n != 41 {
			return fmt.Errorf("MailCount = %d", n)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		m := *m0
		m.Attempts, m.LastError = 3, "again"
		if err := tx.PutMail(&m); err != nil {
			return err
		}
		if err := tx.DeleteMail(m0.ID + 1); err != nil {
			return err
		}
		if err := tx.DeleteMail(m0.ID + 1); err != nil {
			return fmt.Errorf("deleting a deleted message: %w", err)
		}
		if n, _ := tx.MailCount(); n != 40 {
			return fmt.Errorf("MailCount after a delete = %d", n)
		}
		return tx.PutMail(&store.Mail{ID: m0.ID + 1, To: "back"})
	})
	view(t, db, func(tx store.Tx) error {
		due, _ := tx.DueMail(t0.Add(time.Minute), 2)
		if due[0].Attempts != 3 || due[0].LastError != "again" || due[1].To != "back" {
			return fmt.Errorf("after PutMail: %+v %+v", due[0], due[1])
		}
		return nil
	})
	// New messages take new ids (set by the commit at the latest).
	m := &store.Mail{To: "new"}
	update(t, db, func(tx store.Tx) error { return tx.EnqueueMail(m) })
	if m.ID <= m0.ID+40 {
		t.Fatalf("a new message took id %d", m.ID)
	}
}
