package store

import "time"

// Code is a pending one-time code (email OTP or SMS). Only its keyed hash
// is stored. One code per (kind, project, subject): a new send replaces it.
type Code struct {
	Kind      string    `json:"kind"`
	ProjectID string    `json:"projectId"`
	Subject   string    `json:"subject"` // email address or user id
	Phone     string    `json:"phone,omitempty"`
	Email     string    `json:"email,omitempty"` // address a confirmation code proves
	Hash      []byte    `json:"hash"`
	Attempts  int       `json:"attempts"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func codeKey(kind, projectID, subject string) []byte { return compound(kind, projectID, subject) }

// Code returns the pending code, expired or not; callers check ExpiresAt.
func (tx *Tx) Code(kind, projectID, subject string) (*Code, error) {
	var c Code
	if err := tx.get(bucketCodes, codeKey(kind, projectID, subject), &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// PutCode stores c, replacing any pending code for the same subject.
func (tx *Tx) PutCode(c *Code) error {
	return tx.put(bucketCodes, codeKey(c.Kind, c.ProjectID, c.Subject), c)
}

// DeleteCode removes a pending code.
func (tx *Tx) DeleteCode(c *Code) error {
	return tx.del(bucketCodes, codeKey(c.Kind, c.ProjectID, c.Subject))
}

// SweepCodes removes codes that expired before now (send histories
// share the bucket and are left to SweepThrottles).
func (tx *Tx) SweepCodes(now time.Time) (int, error) {
	return tx.sweepKeys(bucketCodes, func(k, v []byte) (bool, error) {
		if isThrottleKey(k) {
			return false, nil
		}
		var c Code
		err := jsonDecode(v, &c)
		return err == nil && !now.Before(c.ExpiresAt), err
	})
}

func isThrottleKey(k []byte) bool {
	return len(k) >= 2 && k[len(k)-2] == 0 && k[len(k)-1] == 't'
}

// Throttle is the recent history of one (kind, project, subject): sends
// for per-address send limits, or failures for a guessing limit.
// KeepUntil, when set, keeps the row from the sweep until then, for
// histories whose window is longer than the sweep's hour.
type Throttle struct {
	Sends     []time.Time `json:"sends"`
	KeepUntil time.Time   `json:"keepUntil,omitzero"`
}

// throttleKey sorts right after the code key of the same subject, so a
// send that writes both dirties one page.
func throttleKey(kind, projectID, subject string) []byte {
	return append(codeKey(kind, projectID, subject), 0, 't')
}

// Throttle returns the history; an unknown key gives an empty one.
func (tx *Tx) Throttle(kind, projectID, subject string) (*Throttle, error) {
	var t Throttle
	err := tx.get(bucketThrottles, throttleKey(kind, projectID, subject), &t)
	if err == ErrNotFound {
		return &t, nil
	}
	return &t, err
}

// PutThrottle stores the history (deleting it when empty).
func (tx *Tx) PutThrottle(kind, projectID, subject string, t *Throttle) error {
	if len(t.Sends) == 0 {
		return tx.del(bucketThrottles, throttleKey(kind, projectID, subject))
	}
	return tx.put(bucketThrottles, throttleKey(kind, projectID, subject), t)
}

// SweepThrottles removes histories whose newest entry is older than
// cutoff, unless their KeepUntil is after it.
func (tx *Tx) SweepThrottles(cutoff time.Time) (int, error) {
	return tx.sweepKeys(bucketThrottles, func(k, v []byte) (bool, error) {
		if !isThrottleKey(k) {
			return false, nil
		}
		var t Throttle
		if err := jsonDecode(v, &t); err != nil {
			return false, err
		}
		if t.KeepUntil.After(cutoff) {
			return false, nil
		}
		return len(t.Sends) == 0 || t.Sends[len(t.Sends)-1].Before(cutoff), nil
	})
}

// sweep deletes every row of bucket for which expired says so.
func (tx *Tx) sweep(bucket []byte, expired func(v []byte) (bool, error)) (int, error) {
	return tx.sweepKeys(bucket, func(_, v []byte) (bool, error) { return expired(v) })
}

// sweepKeys is sweep with the key given too.
func (tx *Tx) sweepKeys(bucket []byte, expired func(k, v []byte) (bool, error)) (int, error) {
	var keys [][]byte
	err := tx.bucket(bucket).ForEach(func(k, v []byte) error {
		ok, err := expired(k, v)
		if ok {
			keys = append(keys, clone(k))
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	b := tx.bucket(bucket)
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}
