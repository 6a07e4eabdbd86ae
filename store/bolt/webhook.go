package bolt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"time"

	"latchkey/store"
)

func webhookKey(projectID, id string) []byte { return compound(projectID, id) }

// Webhook returns projectID's webhook id.
func (tx txn) Webhook(projectID, id string) (*store.Webhook, error) {
	var w store.Webhook
	if err := tx.get(bucketWebhooks, webhookKey(projectID, id), &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// Webhooks returns projectID's webhooks in id order.
func (tx txn) Webhooks(projectID string) ([]*store.Webhook, error) {
	var out []*store.Webhook
	prefix := compound(projectID, "")
	c := tx.bucket(bucketWebhooks).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		var w store.Webhook
		if err := jsonDecode(v, &w); err != nil {
			return nil, err
		}
		out = append(out, &w)
	}
	return out, nil
}

// PutWebhook creates or replaces a webhook.
func (tx txn) PutWebhook(w *store.Webhook) error {
	return tx.put(bucketWebhooks, webhookKey(w.ProjectID, w.ID), w)
}

// DeleteWebhook removes a webhook, its queued deliveries and its history.
// A delivery in flight finds its job gone and records nothing.
func (tx txn) DeleteWebhook(w *store.Webhook) error {
	jp := jobPrefix(w.ID)
	jc := tx.bucket(bucketJobs).Cursor()
	for k, _ := jc.Seek(jp); k != nil && bytes.HasPrefix(k, jp); k, _ = jc.Seek(jp) {
		if err := jc.Delete(); err != nil {
			return err
		}
	}
	prefix := compound(w.ID, "")
	var keys [][]byte
	c := tx.bucket(bucketDeliveries).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, clone(k))
	}
	for _, k := range keys {
		if err := tx.deleteExpiring(&expiries[store.ExpiringDeliveries], k); err != nil {
			return err
		}
	}
	return tx.del(bucketWebhooks, webhookKey(w.ProjectID, w.ID))
}

// Queued jobs are keyed by webhook id, a zero byte, the due time and the
// sequence number: each webhook's jobs sit together in due order, so the
// dispatcher can skip a busy webhook with one seek instead of walking its
// backlog. The due time is its Unix nanoseconds, and 0 for the zero time
// and any time before 1970 (due before every other), so that byte order
// is due order.
func jobPrefix(webhookID string) []byte { return append([]byte(webhookID), 0) }

func jobKey(webhookID string, at time.Time, seq uint64) []byte {
	return jobKeyAt(webhookID, jobDue(at), seq)
}

func jobKeyAt(webhookID string, due, seq uint64) []byte {
	k := make([]byte, 0, len(webhookID)+17)
	k = append(k, webhookID...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, due)
	return binary.BigEndian.AppendUint64(k, seq)
}

// jobDue is a job key's due time: at's Unix nanoseconds, 0 for the zero
// time and times before 1970.
func jobDue(at time.Time) uint64 {
	if at.IsZero() || at.UnixNano() < 0 {
		return 0
	}
	return uint64(at.UnixNano())
}

// splitJobKey returns a job key's webhook id, due time and sequence.
func splitJobKey(k []byte) (webhookID []byte, at int64, seq uint64) {
	n := len(k) - 17
	if n < 0 {
		return nil, 0, 0
	}
	return k[:n], int64(binary.BigEndian.Uint64(k[n+1:])), binary.BigEndian.Uint64(k[n+9:])
}

// EnqueueJob queues j at j.NextAttemptAt, assigning its sequence number
// when it has none.
func (tx txn) EnqueueJob(j *store.Job) error {
	if j.Seq == 0 {
		n, err := tx.bucket(bucketJobs).NextSequence()
		if err != nil {
			return err
		}
		j.Seq = n
	}
	return tx.put(bucketJobs, jobKey(j.WebhookID, j.NextAttemptAt, j.Seq), j)
}

// DueJobs returns up to limit jobs due at now. For each webhook with due
// jobs, room(webhookID, due) says how many of them the caller can start,
// where due counts its due jobs that skip does not filter out (jobs the
// caller has in flight), up to peek: the caller can tell a backlog from a
// few jobs without the store walking the whole backlog. room must not
// grow when due shrinks: a webhook for which room(webhookID, peek) is 0 is
// passed over without counting. Webhooks are
// visited in id order starting after the webhook id after and wrapping
// around, so a caller that passes the last webhook it served serves them
// in turn; each webhook's jobs come in due order (sequence order among
// jobs due at the same instant). A webhook costs one seek and at most
// peek keys, whatever its backlog.
func (tx txn) DueJobs(now time.Time, limit int, after string, peek int, room func(webhookID string, due int) int, skip func(seq uint64) bool) ([]*store.Job, error) {
	var out []*store.Job
	due := int64(jobDue(now))
	peek = max(peek, 1)
	c := tx.bucket(bucketJobs).Cursor()
	// Two passes: from after's successor to the end, then from the start
	// up to and including after.
	start := append([]byte(after), 1)
	if after == "" {
		start = nil
	}
	var vals [][]byte
	for pass := 0; pass < 2 && len(out) < limit; pass++ {
		var k, v []byte
		if pass == 0 {
			k, v = c.Seek(start)
		} else {
			if start == nil {
				break
			}
			k, v = c.First()
		}
		for k != nil && len(out) < limit {
			if pass == 1 && bytes.Compare(k, start) >= 0 {
				break
			}
			id, _, _ := splitJobKey(k)
			next := append(clone(id), 1) // first key after this webhook's jobs
			vals = vals[:0]
			if room(string(id), peek) > 0 { // else no room, whatever its backlog
				for ; k != nil && len(vals) < peek; k, v = c.Next() {
					kid, at, seq := splitJobKey(k)
					if !bytes.Equal(kid, id) || at > due {
						break
					}
					if !skip(seq) {
						vals = append(vals, v)
					}
				}
			}
			if len(vals) > 0 {
				n := min(room(string(id), len(vals)), len(vals), limit-len(out))
				for _, v := range vals[:max(n, 0)] {
					var j store.Job
					if err := jsonDecode(v, &j); err != nil {
						return nil, err
					}
					out = append(out, &j)
				}
			}
			k, v = c.Seek(next)
		}
	}
	return out, nil
}

// NextJobAt returns when the earliest queued job is due, or false.
func (tx txn) NextJobAt() (time.Time, bool, error) {
	var first int64
	found := false
	c := tx.bucket(bucketJobs).Cursor()
	for k, _ := c.First(); k != nil; {
		id, at, _ := splitJobKey(k)
		if !found || at < first {
			first, found = at, true
		}
		k, _ = c.Seek(append(clone(id), 1))
	}
	if !found {
		return time.Time{}, false, nil
	}
	if first == 0 {
		return time.Time{}, true, nil // due at once (jobDue)
	}
	return time.Unix(0, first), true, nil
}

// DeleteJob removes j (queued at j.NextAttemptAt). It reports false when
// the job is gone (its webhook was deleted meanwhile).
func (tx txn) DeleteJob(j *store.Job) (bool, error) {
	k := jobKey(j.WebhookID, j.NextAttemptAt, j.Seq)
	if tx.bucket(bucketJobs).Get(k) == nil {
		// Before jobDue, a job due at the zero time or before 1970 was
		// keyed by its Unix nanoseconds as they were.
		k = jobKeyAt(j.WebhookID, uint64(j.NextAttemptAt.UnixNano()), j.Seq)
		if jobDue(j.NextAttemptAt) != 0 || tx.bucket(bucketJobs).Get(k) == nil {
			return false, nil
		}
	}
	return true, tx.del(bucketJobs, k)
}

// JobCount returns how many deliveries are queued.
func (tx txn) JobCount() (int, error) { return keyCount(tx.bucket(bucketJobs)), nil }

// AddDelivery records an attempt under its webhook and assigns its Seq;
// the sweep deletes the record DeliveryLifetime after its CreatedAt.
func (tx txn) AddDelivery(d *store.Delivery) error {
	n, err := tx.bucket(bucketDeliveries).NextSequence()
	if err != nil {
		return err
	}
	d.Seq = n
	k := append(compound(d.WebhookID, ""), u64(n)...)
	v, err := json.Marshal((*deliveryRow)(d))
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringDeliveries], k, v, d.CreatedAt.Add(store.DeliveryLifetime))
}

// Deliveries returns up to limit attempts for webhookID, newest first.
func (tx txn) Deliveries(webhookID string, limit int) ([]*store.Delivery, error) {
	out := []*store.Delivery{}
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
		var d store.Delivery
		if err := jsonDecode(v, (*deliveryRow)(&d)); err != nil {
			return nil, err
		}
		out = append(out, &d)
	}
	return out, nil
}

// DeliveryCount returns how many attempts are recorded for webhookID.
func (tx txn) DeliveryCount(webhookID string) int {
	n := 0
	prefix := compound(webhookID, "")
	c := tx.bucket(bucketDeliveries).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		n++
	}
	return n
}

// DeliveriesBefore returns up to limit attempts for webhookID whose Seq
// is below before (0: from the newest), newest first, and whether older
// ones remain: a page that costs its own rows at any depth.
func (tx txn) DeliveriesBefore(webhookID string, before uint64, limit int) ([]*store.Delivery, bool, error) {
	out := []*store.Delivery{}
	prefix := compound(webhookID, "")
	c := tx.bucket(bucketDeliveries).Cursor()
	seek := append(clone(prefix), u64(before)...)
	if before == 0 {
		seek = append(clone(prefix), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	}
	k, v := c.Seek(seek)
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, v = c.Prev() {
		var d store.Delivery
		if err := jsonDecode(v, (*deliveryRow)(&d)); err != nil {
			return nil, false, err
		}
		out = append(out, &d)
	}
	return out, k != nil && bytes.HasPrefix(k, prefix), nil
}
