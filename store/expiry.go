package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// Retention of rows that are not deleted by their own use.
const (
	// DeviceLifetime is how long a remembered device lasts after it was
	// last used to sign in.
	DeviceLifetime = 90 * 24 * time.Hour
	// DeliveryLifetime is how long a webhook delivery record is kept.
	DeliveryLifetime = 30 * 24 * time.Hour
	// ThrottleIdle is how long a send or failure history is kept after
	// its newest entry (or after its KeepUntil, when that is later).
	ThrottleIdle = time.Hour
)

// Expiring names a kind of row that the sweep deletes when it is due
// (Tx.ExpiryDue, Tx.SweepExpired). A backend keeps each kind indexed by
// due time, in the same transaction as every change of the row, so that
// a sweep reads only the rows it deletes. On bbolt each kind has an
// expiry index, a bucket keyed by the time the row is due (8 bytes,
// big-endian) followed by the row's key.
type Expiring int

// The expiring kinds.
const (
	// ExpiringSessions are sessions, due at their ExpiresAt.
	ExpiringSessions Expiring = iota
	// ExpiringCodes are one-time codes and replay marks (due at their
	// ExpiresAt) and the send and failure histories kept with them (due
	// ThrottleIdle after their newest entry or their KeepUntil).
	ExpiringCodes
	// ExpiringMagicLinks are magic links, used or not, due at their
	// ExpiresAt.
	ExpiringMagicLinks
	// ExpiringChallenges are WebAuthn ceremonies, due at their ExpiresAt.
	ExpiringChallenges
	// ExpiringGrants are external-method grants, due at their ExpiresAt.
	ExpiringGrants
	// ExpiringDevices are remembered devices, due DeviceLifetime after
	// their last use.
	ExpiringDevices
	// ExpiringDeliveries are webhook delivery records, due
	// DeliveryLifetime after the attempt.
	ExpiringDeliveries

	numExpiring = iota
)

// ExpiringKinds lists every expiring kind, for a sweep that deletes them
// all.
func ExpiringKinds() []Expiring {
	out := make([]Expiring, numExpiring)
	for i := range out {
		out[i] = Expiring(i)
	}
	return out
}

// String names the kind for logs.
func (k Expiring) String() string {
	if k < 0 || k >= numExpiring {
		return fmt.Sprintf("Expiring(%d)", int(k))
	}
	return expiringNames[k]
}

// expiringNames names the kinds for String.
var expiringNames = [numExpiring]string{
	ExpiringSessions:   "sessions",
	ExpiringCodes:      "codes",
	ExpiringMagicLinks: "magic links",
	ExpiringChallenges: "challenges",
	ExpiringGrants:     "grants",
	ExpiringDevices:    "devices",
	ExpiringDeliveries: "webhook deliveries",
}

// expiryRow is what the index and DeleteProject need to know of a row.
type expiryRow struct {
	due       time.Time
	projectID string // "" when the row does not say
}

// expiry describes one expiring kind.
type expiry struct {
	rows  []byte
	index []byte
	// head decodes the row v stored at k.
	head func(k, v []byte) (expiryRow, error)
	// remove, when set, deletes what else belongs to the row (a
	// session's entry in its user's index); the row and its index
	// entry are deleted by the caller.
	remove func(tx boltTx, k, v []byte) error
}

// expiries describes each expiring kind, at its index (TestExpiriesEveryKind).
var expiries = [...]expiry{
	ExpiringSessions: {rows: bucketSessions, index: bucketSessionsExpiry,
		head: func(k, v []byte) (expiryRow, error) {
			s, err := decodeSession(k, v)
			if err != nil {
				return expiryRow{}, err
			}
			return expiryRow{s.ExpiresAt, s.ProjectID}, nil
		},
		remove: func(tx boltTx, k, v []byte) error {
			s, err := decodeSession(k, v)
			if err != nil {
				return err
			}
			tx.sessionChanged(k)
			return tx.del(bucketUserSessions, compound(s.UserID, s.ID))
		}},
	ExpiringCodes: {rows: bucketCodes, index: bucketCodesExpiry,
		head: func(k, v []byte) (expiryRow, error) {
			if isThrottleKey(k) {
				t, err := decodeThrottle(v)
				if err != nil {
					return expiryRow{}, err
				}
				return expiryRow{due: throttleDue(t)}, nil
			}
			c, err := decodeCode(v)
			if err != nil {
				return expiryRow{}, err
			}
			return expiryRow{c.ExpiresAt, c.ProjectID}, nil
		}},
	ExpiringMagicLinks: {rows: bucketMagic, index: bucketMagicExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var m MagicLink
			err := jsonDecode(v, &m)
			return expiryRow{m.ExpiresAt, m.ProjectID}, err
		}},
	ExpiringChallenges: {rows: bucketChallenges, index: bucketChallengesExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var c Challenge
			err := jsonDecode(v, (*challengeRow)(&c))
			return expiryRow{c.ExpiresAt, c.ProjectID}, err
		}},
	ExpiringGrants: {rows: bucketGrants, index: bucketGrantsExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var g Grant
			err := jsonDecode(v, &g)
			return expiryRow{g.ExpiresAt, g.ProjectID}, err
		}},
	ExpiringDevices: {rows: bucketDevices, index: bucketDevicesExpiry,
		head: func(k, v []byte) (expiryRow, error) {
			d, err := decodeDevice(k, v)
			if err != nil {
				return expiryRow{}, err
			}
			return expiryRow{deviceDue(d), d.ProjectID}, nil
		}},
	ExpiringDeliveries: {rows: bucketDeliveries, index: bucketDeliveriesExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var d Delivery
			err := jsonDecode(v, (*deliveryRow)(&d))
			return expiryRow{due: d.CreatedAt.Add(DeliveryLifetime)}, err
		}},
}

// throttleDue returns when the sweep deletes t: ThrottleIdle after its
// newest entry or its KeepUntil, whichever is later (at once when it has
// neither).
func throttleDue(t *Throttle) time.Time {
	last := t.KeepUntil
	if n := len(t.Sends); n > 0 && t.Sends[n-1].After(last) {
		last = t.Sends[n-1]
	}
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(ThrottleIdle)
}

// dueKey returns the index key of the row at key due at t: t's Unix
// nanoseconds, big-endian, then key. Times before 1970 (the zero time
// too) count as the Unix epoch, long due; times past 2262 as the last
// nanosecond Go can count.
func dueKey(t time.Time, key []byte) []byte {
	var n int64
	switch {
	case t.Before(epoch): // the zero time too
	case t.After(lastNano):
		n = lastNano.UnixNano()
	default:
		n = t.UnixNano()
	}
	k := make([]byte, 8, 8+len(key))
	binary.BigEndian.PutUint64(k, uint64(n))
	return append(k, key...)
}

// The range of times dueKey tells apart.
var (
	epoch    = time.Unix(0, 0)
	lastNano = time.Unix(0, 1<<63-1)
)

// putExpiring stores value at key in x's rows and moves the row's index
// entry to due, in tx.
func (tx boltTx) putExpiring(x *expiry, key, value []byte, due time.Time) error {
	rows, index := tx.bucket(x.rows), tx.bucket(x.index)
	ik := dueKey(due, key)
	if old := rows.Get(key); old != nil {
		h, err := x.head(key, old)
		if err != nil {
			return err
		}
		if ok := dueKey(h.due, key); !bytes.Equal(ok, ik) {
			if err := index.Delete(ok); err != nil {
				return err
			}
		}
	}
	if err := index.Put(ik, nil); err != nil {
		return err
	}
	return rows.Put(key, value)
}

// deleteExpiring deletes the row at key of x's rows, its index entry and
// what else belongs to it; a missing row is no error.
func (tx boltTx) deleteExpiring(x *expiry, key []byte) error {
	rows := tx.bucket(x.rows)
	v := rows.Get(key)
	if v == nil {
		return nil
	}
	h, err := x.head(key, v)
	if err != nil {
		return err
	}
	if x.remove != nil {
		if err := x.remove(tx, key, v); err != nil {
			return err
		}
	}
	if err := tx.bucket(x.index).Delete(dueKey(h.due, key)); err != nil {
		return err
	}
	return rows.Delete(key)
}

// deleteExpiringWhere deletes, with their index entries, the rows of x
// for which match says so. It reads the whole bucket: for deleting a
// project, or for buckets that hold only minutes of rows.
func (tx boltTx) deleteExpiringWhere(x *expiry, match func(k, v []byte, h expiryRow) (bool, error)) (int, error) {
	var keys [][]byte
	err := tx.bucket(x.rows).ForEach(func(k, v []byte) error {
		h, err := x.head(k, v)
		if err != nil {
			return err
		}
		ok, err := match(k, v, h)
		if ok {
			keys = append(keys, clone(k))
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := tx.deleteExpiring(x, k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// ExpiryDue reports whether a row of kind is due at now (one seek, no
// row read), so that an idle sweep needs no write transaction.
func (tx boltTx) ExpiryDue(kind Expiring, now time.Time) (bool, error) {
	k, _ := tx.bucket(expiries[kind].index).Cursor().First()
	return k != nil && bytes.Compare(k[:8], dueKey(now, nil)) <= 0, nil
}

// ExpiringCount returns how many rows of kind are stored. It walks the
// kind's index: for tests and tools, not for requests.
func (tx boltTx) ExpiringCount(kind Expiring) (int, error) {
	return keyCount(tx.bucket(expiries[kind].index)), nil
}

// SweepExpired deletes up to max rows of kind that are due at now (due at
// or before it), oldest first, with their index entries and what belongs
// to them, and returns how many it deleted; while that is max, more may
// be left for another transaction. It reads only the index entries and
// rows it deletes.
func (tx boltTx) SweepExpired(kind Expiring, now time.Time, max int) (int, error) {
	x := &expiries[kind]
	rows, index := tx.bucket(x.rows), tx.bucket(x.index)
	end := dueKey(now, nil)
	n := 0
	c := index.Cursor()
	for k, _ := c.First(); k != nil && n < max && bytes.Compare(k[:8], end) <= 0; k, _ = c.First() {
		key := clone(k[8:])
		if v := rows.Get(key); v != nil {
			if x.remove != nil {
				if err := x.remove(tx, key, v); err != nil {
					return n, err
				}
			}
			if err := rows.Delete(key); err != nil {
				return n, err
			}
		}
		if err := c.Delete(); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// checkExpiries verifies that every expiring row has exactly its index
// entry and every index entry its row (for tests, through Check).
func (tx boltTx) checkExpiries() error {
	for i := range expiries {
		x, kind := &expiries[i], Expiring(i)
		index := tx.bucket(x.index)
		rows := 0
		err := tx.bucket(x.rows).ForEach(func(k, v []byte) error {
			h, err := x.head(k, v)
			if err != nil {
				return fmt.Errorf("%s: row %q: %w", kind, k, err)
			}
			if index.Get(dueKey(h.due, k)) == nil {
				return fmt.Errorf("%s: row %q due %v has no index entry", kind, k, h.due)
			}
			rows++
			return nil
		})
		if err != nil {
			return err
		}
		if n := index.Stats().KeyN; n != rows {
			return fmt.Errorf("%s: %d index entries for %d rows", kind, n, rows)
		}
	}
	return nil
}
