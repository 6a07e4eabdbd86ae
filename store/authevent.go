package store

import (
	"encoding/binary"
	"time"
)

// AuthEvent records one authentication outcome (a send, verify, login,
// enrolment or failure) for the events API and dashboard.
type AuthEvent struct {
	ID          string    `json:"id"`
	ProjectID   string    `json:"projectId"`
	UserID      string    `json:"userId"`
	Email       string    `json:"email"`
	Method      string    `json:"method"`
	Action      string    `json:"action"`
	Success     bool      `json:"success"`
	FailureCode string    `json:"failureCode"`
	IP          string    `json:"ip"`
	UserAgent   string    `json:"userAgent"`
	CreatedAt   time.Time `json:"createdAt"`
}

// authEventKey orders events by time: 8 bytes of unix nanoseconds, then
// the bucket sequence to keep keys unique.
func authEventKey(t time.Time, seq uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(t.UnixNano()))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

// AddAuthEvent records e.
func (tx *Tx) AddAuthEvent(e *AuthEvent) error {
	seq, err := tx.bucket(bucketEvents).NextSequence()
	if err != nil {
		return err
	}
	return tx.put(bucketEvents, authEventKey(e.CreatedAt, seq), e)
}

// AuthEventFilter selects events; empty fields match everything.
type AuthEventFilter struct {
	ProjectID   string
	FailureCode string
	Since       time.Time
	Limit       int
}

// AuthEvents returns the events matching f, newest first.
func (tx *Tx) AuthEvents(f AuthEventFilter) ([]*AuthEvent, error) {
	out := []*AuthEvent{}
	c := tx.bucket(bucketEvents).Cursor()
	for k, v := c.Last(); k != nil; k, v = c.Prev() {
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
		var e AuthEvent
		if err := jsonDecode(v, &e); err != nil {
			return nil, err
		}
		if !f.Since.IsZero() && e.CreatedAt.Before(f.Since) {
			break
		}
		if f.ProjectID != "" && e.ProjectID != f.ProjectID {
			continue
		}
		if f.FailureCode != "" && e.FailureCode != f.FailureCode {
			continue
		}
		out = append(out, &e)
	}
	return out, nil
}

// SweepAuthEvents removes events older than cutoff.
func (tx *Tx) SweepAuthEvents(cutoff time.Time) (int, error) {
	b := tx.bucket(bucketEvents)
	c := b.Cursor()
	end := authEventKey(cutoff, 0)
	n := 0
	for k, _ := c.First(); k != nil && string(k) < string(end); k, _ = c.First() {
		if err := c.Delete(); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
