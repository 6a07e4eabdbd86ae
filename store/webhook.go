package store

import (
	"bytes"
	"encoding/binary"
	"time"
)

// Webhook is a project's delivery target. Secret is sealed; EventTypes
// nil means every type. Mode is the mode ("live" or "test") of the key
// that created it: test-mode webhooks may target private addresses.
type Webhook struct {
	ID         string    `json:"id"`
	ProjectID  string    `json:"projectId"`
	URL        string    `json:"url"`
	Secret     []byte    `json:"secret"`
	EventTypes []string  `json:"eventTypes"`
	Mode       string    `json:"mode"`
	CreatedAt  time.Time `json:"createdAt"`
}

func webhookKey(projectID, id string) []byte { return compound(projectID, id) }

// Webhook returns projectID's webhook id.
func (tx *Tx) Webhook(projectID, id string) (*Webhook, error) {
	var w Webhook
	if err := tx.get(bucketWebhooks, webhookKey(projectID, id), &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// Webhooks returns projectID's webhooks in id order.
func (tx *Tx) Webhooks(projectID string) ([]*Webhook, error) {
	var out []*Webhook
	prefix := compound(projectID, "")
	c := tx.bucket(bucketWebhooks).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var w Webhook
		if err := jsonDecode(v, &w); err != nil {
			return nil, err
		}
		out = append(out, &w)
	}
	return out, nil
}

// PutWebhook creates or replaces a webhook.
func (tx *Tx) PutWebhook(w *Webhook) error {
	return tx.put(bucketWebhooks, webhookKey(w.ProjectID, w.ID), w)
}

// DeleteWebhook removes a webhook, its queued deliveries and its history.
func (tx *Tx) DeleteWebhook(w *Webhook) error {
	var jobKeys [][]byte
	err := tx.bucket(bucketJobs).ForEach(func(k, v []byte) error {
		var j Job
		if err := jsonDecode(v, &j); err != nil {
			return err
		}
		if j.WebhookID == w.ID {
			jobKeys = append(jobKeys, clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range jobKeys {
		if err := tx.del(bucketJobs, k); err != nil {
			return err
		}
	}
	prefix := compound(w.ID, "")
	c := tx.bucket(bucketDeliveries).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return tx.del(bucketWebhooks, webhookKey(w.ProjectID, w.ID))
}

// Job is one event queued for one webhook. Body holds the exact bytes
// every attempt sends. Attempt is the number of the next attempt.
type Job struct {
	Seq           uint64    `json:"seq"`
	WebhookID     string    `json:"webhookId"`
	ProjectID     string    `json:"projectId"`
	EventID       string    `json:"eventId"`
	EventType     string    `json:"eventType"`
	Body          []byte    `json:"body"`
	Attempt       int       `json:"attempt"`
	CreatedAt     time.Time `json:"createdAt"`
	NextAttemptAt time.Time `json:"nextAttemptAt"`
}

func jobKey(at time.Time, seq uint64) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(at.UnixNano()))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

// EnqueueJob queues j at j.NextAttemptAt, assigning its sequence number
// when it has none.
func (tx *Tx) EnqueueJob(j *Job) error {
	if j.Seq == 0 {
		n, err := tx.bucket(bucketJobs).NextSequence()
		if err != nil {
			return err
		}
		j.Seq = n
	}
	return tx.put(bucketJobs, jobKey(j.NextAttemptAt, j.Seq), j)
}

// DueJobs returns up to limit jobs due at now, earliest first; skip
// filters out jobs already in flight.
func (tx *Tx) DueJobs(now time.Time, limit int, skip func(seq uint64) bool) ([]*Job, error) {
	var out []*Job
	end := jobKey(now, ^uint64(0))
	c := tx.bucket(bucketJobs).Cursor()
	for k, v := c.First(); k != nil && bytes.Compare(k, end) <= 0 && len(out) < limit; k, v = c.Next() {
		seq := binary.BigEndian.Uint64(k[8:])
		if skip != nil && skip(seq) {
			continue
		}
		var j Job
		if err := jsonDecode(v, &j); err != nil {
			return nil, err
		}
		out = append(out, &j)
	}
	return out, nil
}

// NextJobAt returns when the earliest queued job is due, or false.
func (tx *Tx) NextJobAt() (time.Time, bool) {
	k, _ := tx.bucket(bucketJobs).Cursor().First()
	if k == nil {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(k))), true
}

// DeleteJob removes j (queued at j.NextAttemptAt). It reports false when
// the job is gone (its webhook was deleted meanwhile).
func (tx *Tx) DeleteJob(j *Job) (bool, error) {
	k := jobKey(j.NextAttemptAt, j.Seq)
	if tx.bucket(bucketJobs).Get(k) == nil {
		return false, nil
	}
	return true, tx.del(bucketJobs, k)
}

// JobCount returns how many deliveries are queued.
func (tx *Tx) JobCount() int { return tx.bucket(bucketJobs).Stats().KeyN }

// Delivery records one delivery attempt.
type Delivery struct {
	ID             uint64     `json:"id"`
	WebhookID      string     `json:"webhookId"`
	EventID        string     `json:"eventId"`
	EventType      string     `json:"eventType"`
	Attempt        int        `json:"attempt"`
	Status         string     `json:"status"`
	ResponseStatus int        `json:"responseStatus"`
	Error          string     `json:"error"`
	DurationMS     int64      `json:"durationMs"`
	CreatedAt      time.Time  `json:"createdAt"`
	NextAttemptAt  *time.Time `json:"nextAttemptAt"`
}

// AddDelivery records an attempt under its webhook.
func (tx *Tx) AddDelivery(d *Delivery) error {
	n, err := tx.bucket(bucketDeliveries).NextSequence()
	if err != nil {
		return err
	}
	d.ID = n
	k := append(compound(d.WebhookID, ""), u64(n)...)
	return tx.put(bucketDeliveries, k, d)
}

// Deliveries returns up to limit attempts for webhookID, newest first.
func (tx *Tx) Deliveries(webhookID string, limit int) ([]*Delivery, error) {
	out := []*Delivery{}
	prefix := compound(webhookID, "")
	c := tx.bucket(bucketDeliveries).Cursor()
	// Seek past the prefix, then walk back.
	end := append(clone(prefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	k, v := c.Seek(end)
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, v = c.Prev() {
		var d Delivery
		if err := jsonDecode(v, &d); err != nil {
			return nil, err
		}
		out = append(out, &d)
	}
	return out, nil
}

// DeliveryCount returns how many attempts are recorded for webhookID.
func (tx *Tx) DeliveryCount(webhookID string) int {
	n := 0
	prefix := compound(webhookID, "")
	c := tx.bucket(bucketDeliveries).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}
