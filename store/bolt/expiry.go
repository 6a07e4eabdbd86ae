package bolt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"latchkey/store"
)

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
	remove func(tx txn, k, v []byte) error
}

// expiries describes each expiring kind, at its index (TestExpiriesEveryKind).
var expiries = [...]expiry{
	store.ExpiringSessions: {rows: bucketSessions, index: bucketSessionsExpiry,
		head: func(k, v []byte) (expiryRow, error) {
			s, err := decodeSession(k, v)
			if err != nil {
				return expiryRow{}, err
			}
			return expiryRow{s.ExpiresAt, s.ProjectID}, nil
		},
		remove: func(tx txn, k, v []byte) error {
			s, err := decodeSession(k, v)
			if err != nil {
				return err
			}
			tx.sessionChanged(k)
			if err := tx.deleteSessionRefresh(s.ID); err != nil {
				return err
			}
			return tx.del(bucketUserSessions, compound(s.UserID, s.ID))
		}},
	store.ExpiringCodes: {rows: bucketCodes, index: bucketCodesExpiry,
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
	store.ExpiringMagicLinks: {rows: bucketMagic, index: bucketMagicExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var m store.MagicLink
			err := jsonDecode(v, &m)
			return expiryRow{m.ExpiresAt, m.ProjectID}, err
		}},
	store.ExpiringChallenges: {rows: bucketChallenges, index: bucketChallengesExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var c store.Challenge
			err := jsonDecode(v, (*challengeRow)(&c))
			return expiryRow{c.ExpiresAt, c.ProjectID}, err
		}},
	store.ExpiringGrants: {rows: bucketGrants, index: bucketGrantsExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var g store.Grant
			err := jsonDecode(v, &g)
			return expiryRow{g.ExpiresAt, g.ProjectID}, err
		}},
	store.ExpiringDevices: {rows: bucketDevices, index: bucketDevicesExpiry,
		head: func(k, v []byte) (expiryRow, error) {
			d, err := decodeDevice(k, v)
			if err != nil {
				return expiryRow{}, err
			}
			return expiryRow{deviceDue(d), d.ProjectID}, nil
		}},
	store.ExpiringDeliveries: {rows: bucketDeliveries, index: bucketDeliveriesExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var d store.Delivery
			err := jsonDecode(v, (*deliveryRow)(&d))
			return expiryRow{due: d.CreatedAt.Add(store.DeliveryLifetime)}, err
		}},
	store.ExpiringOAuthFlows: {rows: bucketOAuthFlows, index: bucketOAuthFlowsExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var f store.OAuthFlow
			err := jsonDecode(v, &f)
			return expiryRow{f.ExpiresAt, f.ProjectID}, err
		}},
	store.ExpiringRefreshTokens: {rows: bucketRefresh, index: bucketRefreshExpiry,
		head: func(k, v []byte) (expiryRow, error) {
			r, err := decodeRefresh(k, v)
			return expiryRow{r.ExpiresAt, r.ProjectID}, err
		}},
	store.ExpiringOIDCAuthRequests: {rows: bucketOIDCAuthRequests, index: bucketOIDCAuthExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var r store.OIDCAuthRequest
			err := jsonDecode(v, &r)
			return expiryRow{r.ExpiresAt, r.ProjectID}, err
		}},
	store.ExpiringOIDCGrants: {rows: bucketOIDCGrants, index: bucketOIDCGrantsExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var g store.OIDCGrant
			err := jsonDecode(v, &g)
			return expiryRow{g.ExpiresAt, g.ProjectID}, err
		},
		remove: func(tx txn, _, v []byte) error {
			var g store.OIDCGrant
			if err := jsonDecode(v, &g); err != nil {
				return err
			}
			if err := tx.del(bucketOIDCUserGrants, compound(g.ProjectID, g.UserID, g.ID)); err != nil {
				return err
			}
			if err := tx.del(bucketOIDCClientGrants, clientGrantKeyOf(&g)); err != nil {
				return err
			}
			return tx.del(bucketOIDCSessionGrants, sessionGrantKey(&g))
		}},
	store.ExpiringOIDCRefreshTokens: {rows: bucketOIDCRefresh, index: bucketOIDCRefreshExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var t store.OIDCRefreshToken
			err := jsonDecode(v, &t)
			return expiryRow{t.ExpiresAt, t.ProjectID}, err
		}},
	store.ExpiringOIDCRevokedTokens: {rows: bucketOIDCRevoked, index: bucketOIDCRevokedExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var r store.OIDCRevokedToken
			err := jsonDecode(v, &r)
			return expiryRow{r.ExpiresAt, r.ProjectID}, err
		}},
	store.ExpiringOIDCDeviceAuths: {rows: bucketOIDCDevices, index: bucketOIDCDevicesExpiry,
		head: func(_, v []byte) (expiryRow, error) {
			var d store.OIDCDeviceAuth
			err := jsonDecode(v, &d)
			return expiryRow{d.ExpiresAt, d.ProjectID}, err
		},
		remove: func(tx txn, k, v []byte) error {
			var d store.OIDCDeviceAuth
			if err := jsonDecode(v, &d); err != nil {
				return err
			}
			return tx.dropUserCode(&d)
		}},
}

// throttleDue returns when the sweep deletes t: ThrottleIdle after its
// newest entry or its KeepUntil, whichever is later (at once when it has
// neither).
func throttleDue(t *store.Throttle) time.Time {
	last := t.KeepUntil
	if n := len(t.Sends); n > 0 && t.Sends[n-1].After(last) {
		last = t.Sends[n-1]
	}
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(store.ThrottleIdle)
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
func (tx txn) putExpiring(x *expiry, key, value []byte, due time.Time) error {
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
func (tx txn) deleteExpiring(x *expiry, key []byte) error {
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
func (tx txn) deleteExpiringWhere(x *expiry, match func(k, v []byte, h expiryRow) (bool, error)) (int, error) {
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
func (tx txn) ExpiryDue(kind store.Expiring, now time.Time) (bool, error) {
	k, _ := tx.bucket(expiries[kind].index).Cursor().First()
	return k != nil && bytes.Compare(k[:8], dueKey(now, nil)) <= 0, nil
}

// ExpiringCount returns how many rows of kind are stored. It walks the
// kind's index: for tests and tools, not for requests.
func (tx txn) ExpiringCount(kind store.Expiring) (int, error) {
	return keyCount(tx.bucket(expiries[kind].index)), nil
}

// SweepExpired deletes up to max rows of kind that are due at now (due at
// or before it), oldest first, with their index entries and what belongs
// to them, and returns how many it deleted; while that is max, more may
// be left for another transaction. It reads only the index entries and
// rows it deletes.
func (tx txn) SweepExpired(kind store.Expiring, now time.Time, max int) (int, error) {
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
func (tx txn) checkExpiries() error {
	for i := range expiries {
		x, kind := &expiries[i], store.Expiring(i)
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
