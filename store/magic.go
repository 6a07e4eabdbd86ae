package store

import (
	"encoding/json"
	"time"
)

// MagicLink is a pending sign-in link, keyed by the keyed hash of its token.
type MagicLink struct {
	Hash        []byte     `json:"hash"`
	ProjectID   string     `json:"projectId"`
	Email       string     `json:"email"`
	RedirectURL string     `json:"redirectUrl,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	ExpiresAt   time.Time  `json:"expiresAt"`
	UsedAt      *time.Time `json:"usedAt,omitempty"`
}

// MagicLink returns the link whose token hashes to hash.
func (tx boltTx) MagicLink(hash []byte) (*MagicLink, error) {
	var m MagicLink
	if err := tx.get(bucketMagic, hash, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// PutMagicLink stores m; the sweep deletes it at its ExpiresAt (a used
// link is kept until then, so reuse answers "already used").
func (tx boltTx) PutMagicLink(m *MagicLink) error {
	v, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[ExpiringMagicLinks], m.Hash, v, m.ExpiresAt)
}

// DeleteMagicLinks removes projectID's links for email, used or not,
// and returns how many it removed. Links are keyed by token hash, so it
// reads the bucket (which holds at most 15 minutes of links).
func (tx boltTx) DeleteMagicLinks(projectID, email string) (int, error) {
	return tx.deleteExpiringWhere(&expiries[ExpiringMagicLinks], func(_, v []byte, h expiryRow) (bool, error) {
		if h.projectID != projectID {
			return false, nil
		}
		var m MagicLink
		err := jsonDecode(v, &m)
		return err == nil && m.Email == email, err
	})
}

// Device is a remembered device: a deviceToken's row id and the keyed
// hash of the whole token, bound to a user. It lasts DeviceLifetime
// after its last use.
type Device struct {
	Key        []byte    `json:"key"`
	Hash       []byte    `json:"hash"`
	UserID     string    `json:"userId"`
	ProjectID  string    `json:"projectId"`
	CreatedAt  time.Time `json:"createdAt"`
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
}

// Expired reports whether d has not been used for DeviceLifetime at now:
// lookups treat it as absent until the sweep deletes it.
func (d *Device) Expired(now time.Time) bool { return !now.Before(d.LastUsedAt.Add(DeviceLifetime)) }

// deviceDue is when the sweep deletes d: DeviceLifetime after its last
// use.
func deviceDue(d *Device) time.Time { return d.LastUsedAt.Add(DeviceLifetime) }

// Device returns the device row with key, expired or not.
func (tx boltTx) Device(key []byte) (*Device, error) {
	v := tx.bucket(bucketDevices).Get(key)
	if v == nil {
		return nil, ErrNotFound
	}
	return decodeDevice(key, v)
}

// PutDevice stores d (a LastUsedAt of zero is CreatedAt); the sweep
// deletes it DeviceLifetime after its LastUsedAt.
func (tx boltTx) PutDevice(d *Device) error {
	if d.LastUsedAt.IsZero() {
		d.LastUsedAt = d.CreatedAt
	}
	return tx.putExpiring(&expiries[ExpiringDevices], d.Key, encodeDevice(d), deviceDue(d))
}
