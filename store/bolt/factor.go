package bolt

import (
	"encoding/json"

	"latchkey/store"
)

// Factor returns userID's factor of kind.
func (tx txn) Factor(userID, kind string) (*store.Factor, error) {
	var f store.Factor
	if err := tx.get(bucketFactors, compound(userID, kind), &f); err != nil {
		return nil, err
	}
	return &f, nil
}

// PutFactor creates or replaces a factor. The user's factors leave the
// session cache once tx commits (SessionState).
func (tx txn) PutFactor(f *store.Factor) error {
	tx.factorsChanged(f.UserID)
	return tx.put(bucketFactors, compound(f.UserID, f.Kind), f)
}

// DeleteFactor removes userID's factor of kind. The user's factors leave
// the session cache once tx commits (SessionState).
func (tx txn) DeleteFactor(userID, kind string) error {
	tx.factorsChanged(userID)
	return tx.del(bucketFactors, compound(userID, kind))
}

// DeleteFactors removes every factor, backup batch and passkey of u.
func (tx txn) DeleteFactors(u *store.User) error {
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

// BackupCodes returns userID's batch.
func (tx txn) BackupCodes(userID string) (*store.BackupCodes, error) {
	var b store.BackupCodes
	if err := tx.get(bucketBackupCodes, []byte(userID), &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// PutBackupCodes stores b, replacing the previous batch.
func (tx txn) PutBackupCodes(b *store.BackupCodes) error {
	return tx.put(bucketBackupCodes, []byte(b.UserID), b)
}

// DeleteBackupCodes removes userID's batch.
func (tx txn) DeleteBackupCodes(userID string) error {
	return tx.del(bucketBackupCodes, []byte(userID))
}

// Grant returns the grant with hash.
func (tx txn) Grant(hash []byte) (*store.Grant, error) {
	var g store.Grant
	if err := tx.get(bucketGrants, hash, &g); err != nil {
		return nil, err
	}
	return &g, nil
}

// PutGrant stores g; the sweep deletes it at its ExpiresAt.
func (tx txn) PutGrant(g *store.Grant) error {
	v, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return tx.putExpiring(&expiries[store.ExpiringGrants], g.Hash, v, g.ExpiresAt)
}

// DeleteGrants removes projectID's grants for externalUserID and
// returns how many it removed. Grants are keyed by hash, so it reads
// the bucket (which holds at most 5 minutes of grants).
func (tx txn) DeleteGrants(projectID, externalUserID string) (int, error) {
	return tx.deleteExpiringWhere(&expiries[store.ExpiringGrants], func(_, v []byte, h expiryRow) (bool, error) {
		if h.projectID != projectID {
			return false, nil
		}
		var g store.Grant
		err := jsonDecode(v, &g)
		return err == nil && g.ExternalUserID == externalUserID, err
	})
}
