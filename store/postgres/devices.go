package postgres

import (
	"latchkey/store"
)

// Remembered devices: one row each in devices, keyed by the token's row
// id, due for the sweep DeviceLifetime after the last use (devices_due)
// and deleted with their project (devices_project).

// Device returns the remembered device whose Key is key, expired or not.
func (tx *txn) Device(key []byte) (*store.Device, error) {
	d := &store.Device{}
	err := tx.one(`SELECT key, hash, user_id, project_id, created_at, last_used_at FROM devices WHERE key = $1`,
		[]any{key}, &d.Key, &d.Hash, &d.UserID, &d.ProjectID, timeDest(&d.CreatedAt), timeDest(&d.LastUsedAt))
	if err != nil {
		return nil, err
	}
	return d, nil
}

// PutDevice creates or replaces the device d.Key, a zero LastUsedAt set
// to CreatedAt first (in d too), due DeviceLifetime after LastUsedAt.
func (tx *txn) PutDevice(d *store.Device) error {
	if d.LastUsedAt.IsZero() {
		d.LastUsedAt = d.CreatedAt
	}
	tx.later(`INSERT INTO devices (key, hash, user_id, project_id, created_at, last_used_at, due)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (key) DO UPDATE SET hash = excluded.hash, user_id = excluded.user_id,
			project_id = excluded.project_id, created_at = excluded.created_at,
			last_used_at = excluded.last_used_at, due = excluded.due`,
		d.Key, d.Hash, d.UserID, d.ProjectID, timeArg(d.CreatedAt), timeArg(d.LastUsedAt),
		dueNanos(d.LastUsedAt.Add(store.DeviceLifetime)))
	return nil
}
