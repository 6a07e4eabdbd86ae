package bolt

import (
	"encoding/json"
	"time"

	"latchkey/store"
)

// MagicLink returns the link whose token hashes to hash.
func (tx txn) MagicLink(hash []byte) (*store.MagicLink, error) {
	var m store.MagicLink
	if err := tx.get(bucketMagic, hash, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// PutMagicLink stores m; the sweep deletes it at its ExpiresAt (a used
// link is kept until then, so reuse answers "already used").
func (tx txn) PutMagicLink(m *store.MagicLink) error {
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringMagicLinks], m.Hash, v, m.ExpiresAt)
}

// DeleteMagicLinks removes projectID's links for email, used or not,
// and returns how many it removed. Links are keyed by token hash, so it
// reads the bucket (which holds at most 15 minutes of links).
func (tx txn) DeleteMagicLinks(projectID, email string) (int, error) {
	return tx.deleteExpiringWhere(&expiries[store.ExpiringMagicLinks], func(_, v []byte, h expiryRow) (bool, error) {
		if h.projectID != projectID {
			return false, nil
		}
		var m store.MagicLink
		err := jsonDecode(v, &m)
		return err == nil && m.Email == email, err
	})
}

// deviceDue is when the sweep deletes d: DeviceLifetime after its last
// use.
func deviceDue(d *store.Device) time.Time { return d.LastUsedAt.Add(store.DeviceLifetime) }

// Device returns the device row with key, expired or not.
func (tx txn) Device(key []byte) (*store.Device, error) {
	v := tx.bucket(bucketDevices).Get(key)
	if v == nil {
		return nil, store.ErrNotFound
	}
	return decodeDevice(key, v)
}

// PutDevice stores d (a LastUsedAt of zero is CreatedAt); the sweep
// deletes it DeviceLifetime after its LastUsedAt.
func (tx txn) PutDevice(d *store.Device) error {
	if d.LastUsedAt.IsZero() {
		d.LastUsedAt = d.CreatedAt
	}
	return tx.putExpiring(&expiries[store.ExpiringDevices], d.Key, encodeDevice(d), deviceDue(d))
}
