package store

import "time"

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
func (tx *Tx) MagicLink(hash []byte) (*MagicLink, error) {
	var m MagicLink
	if err := tx.get(bucketMagic, hash, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// PutMagicLink stores m.
func (tx *Tx) PutMagicLink(m *MagicLink) error { return tx.put(bucketMagic, m.Hash, m) }

// SweepMagicLinks removes links that expired before now (used links are
// kept until then so reuse answers "already used").
func (tx *Tx) SweepMagicLinks(now time.Time) (int, error) {
	return tx.sweep(bucketMagic, func(v []byte) (bool, error) {
		var m MagicLink
		err := jsonDecode(v, &m)
		return err == nil && !now.Before(m.ExpiresAt), err
	})
}

// DeleteMagicLinks removes projectID's links for email, used or not,
// and returns how many it removed. Links are keyed by token hash, so it
// scans the bucket (which holds at most 15 minutes of links).
func (tx *Tx) DeleteMagicLinks(projectID, email string) (int, error) {
	return tx.sweep(bucketMagic, func(v []byte) (bool, error) {
		var m MagicLink
		err := jsonDecode(v, &m)
		return err == nil && m.ProjectID == projectID && m.Email == email, err
	})
}

// Device is a remembered device: a deviceToken's row id and the keyed
// hash of the whole token, bound to a user.
type Device struct {
	Key       []byte    `json:"key"`
	Hash      []byte    `json:"hash"`
	UserID    string    `json:"userId"`
	ProjectID string    `json:"projectId"`
	CreatedAt time.Time `json:"createdAt"`
}

// Device returns the device row with key.
func (tx *Tx) Device(key []byte) (*Device, error) {
	var d Device
	if err := tx.get(bucketDevices, key, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// PutDevice stores d.
func (tx *Tx) PutDevice(d *Device) error { return tx.put(bucketDevices, d.Key, d) }
