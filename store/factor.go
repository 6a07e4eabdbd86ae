package store

import (
	"encoding/json"
	"time"
)

// Factor is a user's step-up factor: kind "totp" (Secret sealed) or
// "sms" (Phone). Status is "pending" until the first correct code, then
// "enrolled".
type Factor struct {
	UserID      string     `json:"userId"`
	ProjectID   string     `json:"projectId"`
	Kind        string     `json:"kind"`
	Status      string     `json:"status"`
	Secret      []byte     `json:"secret,omitempty"`
	Phone       string     `json:"phone,omitempty"`
	LastStep    int64      `json:"lastStep,omitempty"`
	Failures    int        `json:"failures,omitempty"`
	LockedUntil time.Time  `json:"lockedUntil,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	EnrolledAt  *time.Time `json:"enrolledAt,omitempty"`
}

// Factor returns userID's factor of kind.
func (tx boltTx) Factor(userID, kind string) (*Factor, error) {
	var f Factor
	if err := tx.get(bucketFactors, compound(userID, kind), &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// PutFactor creates or replaces a factor. The user's factors leave the
// session cache once tx commits (SessionState).
func (tx boltTx) PutFactor(f *Factor) error {
	tx.factorsChanged(f.UserID)
	return tx.put(bucketFactors, compound(f.UserID, f.Kind), f)
}

// DeleteFactor removes userID's factor of kind. The user's factors leave
// the session cache once tx commits (SessionState).
func (tx boltTx) DeleteFactor(userID, kind string) error {
	tx.factorsChanged(userID)
	return tx.del(bucketFactors, compound(userID, kind))
}

// DeleteFactors removes every factor, backup batch and passkey of u.
func (tx boltTx) DeleteFactors(u *User) error {
	tx.factorsChanged(u.ID)
	for _, k := range []string{"totp", "sms"} {
		if err := tx.del(bucketFactors, compound(u.ID, k)); err != nil {
			return err
		}
	}
	pks, err := tx.UserPasskeys(u.ProjectID, u.ID)
	if err != nil {
		return err
	}
	for _, pk := range pks {
		if err := tx.DeletePasskey(pk); err != nil {
			return err
		}
	}
	return tx.del(bucketBackupCodes, []byte(u.ID))
}

// BackupCodes is a user's current batch of recovery codes, as keyed
// hashes; a new batch replaces the whole row.
type BackupCodes struct {
	UserID    string    `json:"userId"`
	ProjectID string    `json:"projectId"`
	Hashes    [][]byte  `json:"hashes"`
	Used      []bool    `json:"used"`
	CreatedAt time.Time `json:"createdAt"`
}

// BackupCodes returns userID's batch.
func (tx boltTx) BackupCodes(userID string) (*BackupCodes, error) {
	var b BackupCodes
	if err := tx.get(bucketBackupCodes, []byte(userID), &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// PutBackupCodes stores b, replacing the previous batch.
func (tx boltTx) PutBackupCodes(b *BackupCodes) error {
	return tx.put(bucketBackupCodes, []byte(b.UserID), b)
}

// DeleteBackupCodes removes userID's batch.
func (tx boltTx) DeleteBackupCodes(userID string) error {
	return tx.del(bucketBackupCodes, []byte(userID))
}

// Grant is a Pattern B external-method result waiting to be redeemed,
// keyed by the keyed hash of (registration, reference).
type Grant struct {
	Hash           []byte     `json:"hash"`
	MethodID       string     `json:"methodId"`
	ProjectID      string     `json:"projectId"`
	ExternalUserID string     `json:"externalUserId"`
	Email          string     `json:"email,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	ExpiresAt      time.Time  `json:"expiresAt"`
	UsedAt         *time.Time `json:"usedAt,omitempty"`
}

// Grant returns the grant with hash.
func (tx boltTx) Grant(hash []byte) (*Grant, error) {
	var g Grant
	if err := tx.get(bucketGrants, hash, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// PutGrant stores g; the sweep deletes it at its ExpiresAt.
func (tx boltTx) PutGrant(g *Grant) error {
	v, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[ExpiringGrants], g.Hash, v, g.ExpiresAt)
}

// DeleteGrants removes projectID's grants for externalUserID and
// returns how many it removed. Grants are keyed by hash, so it reads
// the bucket (which holds at most 5 minutes of grants).
func (tx boltTx) DeleteGrants(projectID, externalUserID string) (int, error) {
	return tx.deleteExpiringWhere(&expiries[ExpiringGrants], func(_, v []byte, h expiryRow) (bool, error) {
		if h.projectID != projectID {
			return false, nil
		}
		var g Grant
		err := jsonDecode(v, &g)
		return err == nil && g.ExternalUserID == externalUserID, err
	})
}
