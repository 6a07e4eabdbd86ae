package postgres

import (
	"latchkey/store"
)

// External-method registrations (external_methods), and what
// DeleteProject removes of this file's domain.

const (
	sqlExternalMethod = `SELECT project_id, method, pattern, status, secret, created_at
		FROM external_methods WHERE id = $1`
	// sqlExternalMethodByName takes the lowest id when several share a
	// name (the store does not make names unique).
	sqlExternalMethodByName = `SELECT id, pattern, status, secret, created_at
		FROM external_methods WHERE project_id = $1 AND method = $2
		ORDER BY id LIMIT 1`
	sqlExternalMethods = `SELECT id, method, pattern, status, secret, created_at
		FROM external_methods WHERE project_id = $1
		ORDER BY created_at NULLS FIRST, id`
	sqlPutExternalMethod = `INSERT INTO external_methods (id, project_id, method, pattern, status, secret, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, method = excluded.method,
			pattern = excluded.pattern, status = excluded.status, secret = excluded.secret,
			created_at = excluded.created_at`
	sqlProjectMethodIDs = `SELECT id FROM external_methods WHERE project_id = $1 ORDER BY id`
	// sqlDeleteProjectAuthRows removes, in one statement, the project's
	// rows of this domain. Codes and histories are scoped by the project
	// or one of its external methods (replay marks): those passed in and
	// those the table holds (every sub-statement sees the rows as they
	// were before the statement). ANY (ARRAY(...)) probes the primary
	// key once per scope under any plan (IN (SELECT ...) may be planned,
	// generically, as a join with a scan of the table).
	sqlDeleteProjectAuthRows = `WITH
		scopes AS (
			SELECT $1::text AS id
			UNION SELECT unnest($2::text[])
			UNION SELECT id FROM external_methods WHERE project_id = $1),
		c AS (DELETE FROM codes WHERE project_id = ANY (ARRAY(SELECT id FROM scopes))),
		t AS (DELETE FROM throttles WHERE project_id = ANY (ARRAY(SELECT id FROM scopes))),
		m AS (DELETE FROM magic_links WHERE project_id = $1),
		ch AS (DELETE FROM challenges WHERE project_id = $1),
		o AS (DELETE FROM oauth_flows WHERE project_id = $1),
		g AS (DELETE FROM grants WHERE project_id = $1),
		f AS (DELETE FROM factors WHERE project_id = $1),
		b AS (DELETE FROM backup_codes WHERE project_id = $1),
		p AS (DELETE FROM passkeys WHERE project_id = $1)
		DELETE FROM external_methods WHERE project_id = $1`
)

// ExternalMethod returns the registration with id.
func (tx *txn) ExternalMethod(id string) (*store.ExternalMethod, error) {
	if !storable(id) {
		return nil, store.ErrNotFound
	}
	m := &store.ExternalMethod{ID: id}
	err := tx.one(sqlExternalMethod, []any{id}, &m.ProjectID, &m.Method, &m.Pattern, &m.Status, &m.Secret, timeDest(&m.CreatedAt))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ExternalMethodByName returns projectID's registration whose Method is
// method (the lowest id when several are).
func (tx *txn) ExternalMethodByName(projectID, method string) (*store.ExternalMethod, error) {
	if !storable(projectID, method) {
		return nil, store.ErrNotFound
	}
	m := &store.ExternalMethod{ProjectID: projectID, Method: method}
	err := tx.one(sqlExternalMethodByName, []any{projectID, method}, &m.ID, &m.Pattern, &m.Status, &m.Secret, timeDest(&m.CreatedAt))
	if err != nil {
		return nil, err
	}
	return m, nil
}

// ExternalMethods returns projectID's registrations, oldest CreatedAt
// first (equal times in ID byte order); nil when there are none.
func (tx *txn) ExternalMethods(projectID string) ([]*store.ExternalMethod, error) {
	if !storable(projectID) {
		return nil, nil
	}
	rows, err := tx.query(sqlExternalMethods, projectID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.ExternalMethod
	for rows.Next() {
		m := &store.ExternalMethod{ProjectID: projectID}
		if err := rows.Scan(&m.ID, &m.Method, &m.Pattern, &m.Status, &m.Secret, timeDest(&m.CreatedAt)); err != nil {
			return nil, tx.note(err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, tx.note(unavailable(err))
	}
	return out, nil
}

// PutExternalMethod creates or replaces the registration m.ID.
func (tx *txn) PutExternalMethod(m *store.ExternalMethod) error {
	_, err := tx.exec(sqlPutExternalMethod, m.ID, m.ProjectID, m.Method, m.Pattern, m.Status, m.Secret, timeArg(m.CreatedAt))
	return err
}

// projectMethodIDs returns the ids of projectID's external methods, in
// id byte order (DeleteProject: they scope the methods' replay marks).
func (tx *txn) projectMethodIDs(projectID string) ([]string, error) {
	rows, err := tx.query(sqlProjectMethodIDs, projectID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, tx.note(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, tx.note(unavailable(err))
	}
	return ids, nil
}

// deleteProjectAuthRows removes what DeleteProject removes of this
// domain, in one round trip: codes and send or failure histories whose
// project is projectID, one of methodIDs or one of projectID's external
// methods; projectID's magic links, challenges, sign-ins with providers
// in flight, grants, external methods, and the factors, backup codes and
// passkeys that name it (DeleteUser removes those of each user; this
// also catches any whose user row is gone).
func (tx *txn) deleteProjectAuthRows(projectID string, methodIDs []string) error {
	tx.forgetAll() // the project's codes and histories (prefetch.go)
	if methodIDs == nil {
		methodIDs = []string{}
	}
	_, err := tx.exec(sqlDeleteProjectAuthRows, projectID, methodIDs)
	return err
}
