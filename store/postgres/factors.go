package postgres

import (
	"bytes"

	"latchkey/store"
)

// Step-up factors (factors), backup codes (backup_codes) and Pattern B
// external-method grants (grants).

const (
	sqlFactor = `SELECT project_id, status, secret, phone, last_step, failures, locked_until, created_at, enrolled_at
		FROM factors WHERE user_id = $1 AND kind = $2`
	// sqlPutFactor upserts the factor and, when that makes it enrolled
	// or no longer enrolled, writes kindFactors ($12) for the user to the
	// feed (every sub-statement sees the row as it was before the
	// statement).
	sqlPutFactor = `WITH old AS (SELECT status FROM factors WHERE user_id = $1 AND kind = $2),
		put AS (INSERT INTO factors (user_id, kind, project_id, status, secret, phone, last_step, failures,
			locked_until, created_at, enrolled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (user_id, kind) DO UPDATE SET project_id = excluded.project_id,
			status = excluded.status, secret = excluded.secret, phone = excluded.phone,
			last_step = excluded.last_step, failures = excluded.failures,
			locked_until = excluded.locked_until, created_at = excluded.created_at,
			enrolled_at = excluded.enrolled_at)
		INSERT INTO changes (kind, id) SELECT $12, $1
		WHERE coalesce((SELECT status = 'enrolled' FROM old), false) <> ($4::text = 'enrolled')`
	// sqlDeleteFactor deletes the factor and, when it was enrolled,
	// writes kindFactors ($3) for the user to the feed.
	sqlDeleteFactor = `WITH del AS (DELETE FROM factors WHERE user_id = $1 AND kind = $2 RETURNING status)
		INSERT INTO changes (kind, id) SELECT $3, $1 FROM del WHERE status = 'enrolled'`
	sqlBackupCodes = `SELECT project_id, hashes, used, created_at
		FROM backup_codes WHERE user_id = $1`
	sqlPutBackupCodes = `INSERT INTO backup_codes (user_id, project_id, hashes, used, created_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (user_id) DO UPDATE SET project_id = excluded.project_id,
			hashes = excluded.hashes, used = excluded.used, created_at = excluded.created_at`
	sqlDeleteBackupCodes = `DELETE FROM backup_codes WHERE user_id = $1`
	sqlGrant             = `SELECT method_id, project_id, external_user_id, email, created_at, expires_at, used_at
		FROM grants WHERE hash = $1`
	sqlPutGrant = `INSERT INTO grants (hash, method_id, project_id, external_user_id, email, created_at, expires_at, used_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (hash) DO UPDATE SET method_id = excluded.method_id,
			project_id = excluded.project_id, external_user_id = excluded.external_user_id,
			email = excluded.email, created_at = excluded.created_at,
			expires_at = excluded.expires_at, used_at = excluded.used_at`
	sqlDeleteGrants = `DELETE FROM grants WHERE project_id = $1 AND external_user_id = $2`
	// sqlDeleteUserFactors removes the factors, backup codes and
	// passkeys of the users $1 in one statement.
	sqlDeleteUserFactors = `WITH f AS (DELETE FROM factors WHERE user_id = ANY($1::text[])),
			b AS (DELETE FROM backup_codes WHERE user_id = ANY($1::text[]))
		DELETE FROM passkeys WHERE user_id = ANY($1::text[])`
)

// Factor returns userID's factor of kind.
func (tx *txn) Factor(userID, kind string) (*store.Factor, error) {
	if !storable(userID, kind) {
		return nil, store.ErrNotFound
	}
	f := &store.Factor{UserID: userID, Kind: kind}
	var failures int64
	err := tx.one(sqlFactor, []any{userID, kind},
		&f.ProjectID, &f.Status, &f.Secret, &f.Phone, &f.LastStep, &failures,
		timeDest(&f.LockedUntil), timeDest(&f.CreatedAt), timePtrDest(&f.EnrolledAt))
	if err != nil {
		return nil, err
	}
	f.Failures = int(failures)
	return f, nil
}

// PutFactor creates or replaces the factor (f.UserID, f.Kind). A kind
// other than "totp" or "sms" is refused by the table's CHECK. Session
// caches drop the user's factors: this replica's as the transaction
// commits, the others' through the feed when the factor's enrolment
// changed (a code's step or a failure count leaves it as it was, and
// writes no feed row).
func (tx *txn) PutFactor(f *store.Factor) error {
	_, err := tx.exec(sqlPutFactor, f.UserID, f.Kind, f.ProjectID, f.Status, f.Secret, f.Phone,
		f.LastStep, int64(f.Failures), timeArg(f.LockedUntil), timeArg(f.CreatedAt), timePtrArg(f.EnrolledAt),
		string(kindFactors))
	tx.dropOnCommit(f.UserID, true)
	return err
}

// DeleteFactor removes userID's factor of kind. Session caches drop the
// user's factors as PutFactor's do (the feed only when it was enrolled).
func (tx *txn) DeleteFactor(userID, kind string) error {
	if !validText(userID) || !validText(kind) {
		return nil
	}
	_, err := tx.exec(sqlDeleteFactor, userID, kind, string(kindFactors))
	tx.dropOnCommit(userID, true)
	return err
}

// BackupCodes returns userID's batch of backup codes.
func (tx *txn) BackupCodes(userID string) (*store.BackupCodes, error) {
	if !storable(userID) {
		return nil, store.ErrNotFound
	}
	b := &store.BackupCodes{UserID: userID}
	err := tx.one(sqlBackupCodes, []any{userID}, &b.ProjectID, &b.Hashes, &b.Used, timeDest(&b.CreatedAt))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// PutBackupCodes stores b as b.UserID's batch, replacing the previous
// one.
func (tx *txn) PutBackupCodes(b *store.BackupCodes) error {
	_, err := tx.exec(sqlPutBackupCodes, b.UserID, b.ProjectID, b.Hashes, b.Used, timeArg(b.CreatedAt))
	return err
}

// DeleteBackupCodes removes userID's batch of backup codes.
func (tx *txn) DeleteBackupCodes(userID string) error {
	if !validText(userID) {
		return nil
	}
	_, err := tx.exec(sqlDeleteBackupCodes, userID)
	return err
}

// Grant returns the grant whose Hash is hash, used or expired or not.
func (tx *txn) Grant(hash []byte) (*store.Grant, error) {
	g := &store.Grant{Hash: bytes.Clone(hash)}
	err := tx.one(sqlGrant, []any{hash}, &g.MethodID, &g.ProjectID, &g.ExternalUserID, &g.Email,
		timeDest(&g.CreatedAt), timeDest(&g.ExpiresAt), timePtrDest(&g.UsedAt))
	if err != nil {
		return nil, err
	}
	return g, nil
}

// PutGrant creates or replaces the grant g.Hash.
func (tx *txn) PutGrant(g *store.Grant) error {
	_, err := tx.exec(sqlPutGrant, g.Hash, g.MethodID, g.ProjectID, g.ExternalUserID, g.Email,
		timeArg(g.CreatedAt), timeArg(g.ExpiresAt), timePtrArg(g.UsedAt))
	return err
}

// DeleteGrants removes projectID's grants for externalUserID and
// returns how many it removed.
func (tx *txn) DeleteGrants(projectID, externalUserID string) (int, error) {
	if !storable(projectID, externalUserID) {
		return 0, nil
	}
	tag, err := tx.exec(sqlDeleteGrants, projectID, externalUserID)
	return int(tag.RowsAffected()), err
}

// deleteUserFactors removes the factors (totp, sms), backup codes and
// passkeys of the users userIDs (DeleteUser, DeleteProject), in one
// round trip.
func (tx *txn) deleteUserFactors(userIDs ...string) error {
	if len(userIDs) == 0 {
		return nil
	}
	// This replica's session cache drops their factors as the
	// transaction commits; the others' on the user's ChangeUser, which
	// DeleteUser writes. A deleted project's users keep theirs in other
	// replicas' caches until evicted, never read again: the sessions,
	// through which alone they are read, go (ChangeProject), and no new
	// session can name a deleted user.
	for _, id := range userIDs {
		tx.dropOnCommit(id, true)
	}
	_, err := tx.exec(sqlDeleteUserFactors, userIDs)
	return err
}
