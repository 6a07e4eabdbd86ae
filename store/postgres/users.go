package postgres

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"latchkey/store"
)

// Users: one row each in users. The unique constraints users_email
// (project_id, email) and users_external_id (project_id,
// external_user_id; NULL when unset) are the lookups by email and
// external id and the email-ordered listing.

const userCols = `id, project_id, email, coalesce(external_user_id, ''), first_name, company_id,
	disabled, email_verified, created_at, updated_at, vouched, groups, metadata`

// userDest returns the scan destinations of userCols in u.
func userDest(u *store.User) []any {
	return []any{&u.ID, &u.ProjectID, &u.Email, &u.ExternalUserID, &u.FirstName, &u.CompanyID,
		&u.Disabled, &u.EmailVerified, timeDest(&u.CreatedAt), timeDest(&u.UpdatedAt), &u.Vouched,
		&u.Groups, (*[]byte)(&u.Metadata)}
}

// oneUser returns the user the query's single row holds.
func (tx *txn) oneUser(sql string, args ...any) (*store.User, error) {
	u := &store.User{}
	if err := tx.one(sql, args, userDest(u)...); err != nil {
		return nil, err
	}
	return u, nil
}

// User returns the user with id.
func (tx *txn) User(id string) (*store.User, error) {
	if !validText(id) {
		return nil, store.ErrNotFound
	}
	return tx.oneUser(`SELECT `+userCols+` FROM users WHERE id = $1`, id)
}

// UserByEmail returns projectID's user whose Email is email.
func (tx *txn) UserByEmail(projectID, email string) (*store.User, error) {
	if !validText(projectID) || !validText(email) {
		return nil, store.ErrNotFound
	}
	key := [2]string{projectID, email}
	if u, ok := tx.byEmail[key]; ok {
		if u == nil {
			return nil, store.ErrNotFound
		}
		return copyUser(u), nil
	}
	u, err := tx.oneUser(`SELECT `+userCols+` FROM users WHERE project_id = $1 AND email = $2`, projectID, email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if tx.byEmail == nil {
		tx.byEmail = map[[2]string]*store.User{}
	}
	if u == nil {
		tx.byEmail[key] = nil
		return nil, err
	}
	tx.byEmail[key] = copyUser(u)
	return u, nil
}

// sqlUpsertUser writes a user without PutUser's conflict check.
const sqlUpsertUser = `INSERT INTO users (id, project_id, email, external_user_id, first_name, company_id,
		disabled, email_verified, created_at, updated_at, vouched, groups, metadata)
	VALUES ($1, $2, $3, $4, $5::text, $6::text, $7::boolean, $8::boolean, $9::bigint, $10::bigint, $11::boolean,
		$12::text[], $13::json)
	ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, email = excluded.email,
		external_user_id = excluded.external_user_id, first_name = excluded.first_name,
		company_id = excluded.company_id, disabled = excluded.disabled,
		email_verified = excluded.email_verified, created_at = excluded.created_at,
		updated_at = excluded.updated_at, vouched = excluded.vouched,
		groups = excluded.groups, metadata = excluded.metadata`

// concurrentlyTaken is the serialization failure a unique violation of
// users stands for: a concurrent transaction took the address or the
// external id after this one's snapshot; the rerun sees it.
func concurrentlyTaken(err error) error {
	return &pgconn.PgError{Code: "40001", Message: "a concurrent transaction took the user's address or external id: " + err.Error()}
}

// proven reports whether what this transaction read by address shows
// that PutUser's check for u could find nothing: no user has u's Email
// and u has no ExternalUserID, or u itself has that Email and u keeps
// the ExternalUserID it was read with (or has none). The unique
// constraints then leave no other user holding either.
func (tx *txn) proven(u *store.User) bool {
	got, ok := tx.byEmail[[2]string{u.ProjectID, u.Email}]
	switch {
	case !ok:
		return false
	case got == nil:
		return u.ExternalUserID == ""
	}
	return got.ID == u.ID && (u.ExternalUserID == "" || u.ExternalUserID == got.ExternalUserID)
}

// forgetUsers drops every user read by address, and those asked for
// ahead (which would go before the next statement and answer for the
// table as it was): a statement deletes users.
func (tx *txn) forgetUsers() {
	tx.byEmail, tx.aheadUsers = nil, nil
}

// forgetUser drops what this transaction read by address that writing u
// can change: u's Email, and every address it read u at (an address u
// leaves). The other answers stay true.
func (tx *txn) forgetUser(u *store.User) {
	delete(tx.byEmail, [2]string{u.ProjectID, u.Email})
	for k, v := range tx.byEmail {
		if v != nil && v.ID == u.ID {
			delete(tx.byEmail, k)
		}
	}
}

// metadataArg is u.Metadata as a query argument: NULL for nil, else its
// text as it is (json keeps it byte for byte).
func metadataArg(m json.RawMessage) any {
	if m == nil {
		return nil
	}
	return string(m)
}

// copyUser returns a copy of u that shares nothing with it.
func copyUser(u *store.User) *store.User {
	cp := *u
	cp.Groups = slices.Clone(u.Groups)
	cp.Metadata = slices.Clone(u.Metadata)
	if u.EmailVerified != nil {
		v := *u.EmailVerified
		cp.EmailVerified = &v
	}
	if u.Vouched != nil {
		v := *u.Vouched
		cp.Vouched = &v
	}
	return &cp
}

// UserByExternalID returns projectID's user whose ExternalUserID is ext.
func (tx *txn) UserByExternalID(projectID, ext string) (*store.User, error) {
	if ext == "" || !validText(projectID) || !validText(ext) {
		return nil, store.ErrNotFound
	}
	return tx.oneUser(`SELECT `+userCols+` FROM users WHERE project_id = $1 AND external_user_id = $2`, projectID, ext)
}

// PutUser creates or replaces the user u.ID, and returns ErrConflict,
// changing nothing, when another user of u.ProjectID has u's Email or
// ExternalUserID. One statement: the check and the upsert read the same
// snapshot, so a conflict this transaction can see never reaches the
// unique constraints, which would abort the transaction. A unique
// violation can then only come from a concurrent transaction that took
// the address or external id after this one's snapshot (PostgreSQL
// reports it as such, 23505, when the check's read did not lock the
// index page the insert checks): it is a serialization failure in all
// but name, and retried as one; the rerun sees the other user and
// answers ErrConflict.
//
// When what this transaction read by address shows the check could find
// nothing (proven: a new address without an external id, or the user
// read at its address keeping its external id), the upsert is queued
// with the transaction's other writes (txn.later), and a unique
// violation at the commit is a concurrent transaction's doing, retried
// as above. A sign-up's user costs no round trip of its own, nor does
// each line of an import's chunk (PrefetchUsers).
func (tx *txn) PutUser(u *store.User) error {
	proven := tx.proven(u)
	tx.forgetUser(u)
	args := []any{u.ID, u.ProjectID, u.Email, nil, u.FirstName, u.CompanyID,
		u.Disabled, u.EmailVerified, timeArg(u.CreatedAt), timeArg(u.UpdatedAt), u.Vouched,
		u.Groups, metadataArg(u.Metadata)}
	if u.ExternalUserID != "" {
		args[3] = u.ExternalUserID
	}
	if proven {
		tx.queue(sqlUpsertUser, args, func(br pgx.BatchResults) error {
			_, err := br.Exec()
			if uniqueViolation(err) {
				return concurrentlyTaken(err)
			}
			return err
		})
		return tx.changed(store.ChangeUser, u.ID)
	}
	// Users read ahead would go before this statement and answer for
	// the table as it was: drop them (UserByEmail reads for itself).
	tx.aheadUsers = nil
	var taken bool
	err := tx.one(`WITH taken AS (
			SELECT 1 FROM users
			WHERE project_id = $2 AND id <> $1 AND (email = $3 OR external_user_id = $4)
			LIMIT 1
		), put AS (
			INSERT INTO users (id, project_id, email, external_user_id, first_name, company_id,
				disabled, email_verified, created_at, updated_at, vouched, groups, metadata)
			SELECT $1, $2, $3, $4, $5::text, $6::text, $7::boolean, $8::boolean, $9::bigint, $10::bigint, $11::boolean,
				$12::text[], $13::json
			WHERE NOT EXISTS (SELECT 1 FROM taken)
			ON CONFLICT (id) DO UPDATE SET project_id = excluded.project_id, email = excluded.email,
				external_user_id = excluded.external_user_id, first_name = excluded.first_name,
				company_id = excluded.company_id, disabled = excluded.disabled,
				email_verified = excluded.email_verified, created_at = excluded.created_at,
				updated_at = excluded.updated_at, vouched = excluded.vouched,
				groups = excluded.groups, metadata = excluded.metadata
		)
		SELECT EXISTS (SELECT 1 FROM taken)`, args, &taken)
	if uniqueViolation(err) && tx.err == nil {
		tx.err = concurrentlyTaken(err)
	}
	if err != nil {
		return err
	}
	if taken {
		return store.ErrConflict
	}
	// Replicas (rep-sync): the user changed, for other replicas' caches
	// (feed.go).
	return tx.changed(store.ChangeUser, u.ID)
}

// DeleteUser removes the user u.ID with its sessions and its links to
// sign-in providers, and its factors, backup codes and passkeys
// (deleteUserFactors).
func (tx *txn) DeleteUser(u *store.User) error {
	tx.forgetUsers()
	if !validText(u.ID) {
		return nil
	}
	if err := tx.deleteUserFactors(u.ID); err != nil {
		return err
	}
	// The sessions' refresh tokens go with them (refresh.go: no foreign
	// key).
	tx.putSession = ""
	_, err := tx.exec(`WITH s AS (DELETE FROM sessions WHERE user_id = $1 RETURNING id),
			st AS (DELETE FROM refresh_tokens WHERE session_id = ANY (ARRAY(SELECT id FROM s))),
			i AS (DELETE FROM identities WHERE user_id = $1),
			c AS (DELETE FROM oidc_consents WHERE project_id = $2 AND user_id = $1)
		DELETE FROM users WHERE id = $1`, u.ID, u.ProjectID)
	if err != nil {
		return err
	}
	// Replicas (rep-sync): the user and its sessions are gone, for every
	// replica's caches (feed.go).
	return tx.changes(store.Change{Kind: store.ChangeUser, ID: u.ID}, store.Change{Kind: store.ChangeUserSessions, ID: u.ID})
}

// Users returns up to limit of projectID's users in Email byte order
// whose Email starts with emailPrefix and sorts after after (see
// store.Tx), with one range scan of users_email that reads the page's
// rows (and one more, for more).
//
// A prefix or cursor that is not valid text (a NUL byte, broken UTF-8:
// a cursor is any bytes) cannot be a query argument. Stored addresses
// are valid text, so the range is bounded by its valid head and the
// bytes are compared exactly in the filter: that reads, besides the
// page, only addresses that share the head and sort before the cursor.
func (tx *txn) Users(projectID, emailPrefix, after string, limit int) (users []*store.User, more bool, err error) {
	if !validText(projectID) {
		return nil, false, nil
	}
	args := []any{projectID}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	var q strings.Builder
	q.WriteString(`SELECT ` + userCols + ` FROM users WHERE project_id = $1`)
	if emailPrefix != "" {
		head := emailPrefix
		if i := badTextAt(emailPrefix); i >= 0 {
			if strings.IndexByte(emailPrefix, 0) >= 0 {
				return nil, false, nil // no text holds a NUL
			}
			head = emailPrefix[:i]
			q.WriteString(` AND substring(convert_to(email, 'UTF8') from 1 for ` + arg(len(emailPrefix)) + `) = ` + arg([]byte(emailPrefix)))
		}
		if head != "" {
			q.WriteString(` AND email >= ` + arg(head))
			if end, ok := textAfterPrefix(head); ok {
				q.WriteString(` AND email < ` + arg(end))
			}
		}
	}
	if after != "" {
		if i := badTextAt(after); i >= 0 {
			if i > 0 {
				q.WriteString(` AND email >= ` + arg(after[:i]))
			}
			q.WriteString(` AND convert_to(email, 'UTF8') > ` + arg([]byte(after)))
		} else {
			q.WriteString(` AND email > ` + arg(after))
		}
	}
	q.WriteString(` ORDER BY email`)
	if limit > 0 {
		q.WriteString(` LIMIT ` + arg(limit+1))
	}
	users, err = scanAll(tx, q.String(), args, userDest)
	if err != nil {
		return nil, false, err
	}
	if limit > 0 && len(users) > limit {
		users, more = users[:limit], true
	}
	return users, more, nil
}
