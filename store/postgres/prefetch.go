package postgres

import (
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// Reads a transaction said it is about to make (store.Tx's PrefetchCode
// and PrefetchThrottle): they go to the server with the transaction's
// next statement, in the same round trip, and Code and Throttle answer
// from what they read. A sign-in reads its user, its code and its
// address's histories one after the other; this way it pays one round
// trip for all of them.
//
// The answers are of the transaction's snapshot, as the reads they stand
// for would be (a REPEATABLE READ or SERIALIZABLE transaction reads one
// snapshot, taken at its first statement, and the reads come after the
// writes queued before them). A write of a key drops its answer, and a
// statement that deletes codes or histories in bulk drops them all.

// rowKey names a code ('c') or a history ('t').
type rowKey struct {
	table                  byte
	kind, project, subject string
}

// PrefetchCode reads the code of (kind, projectID, subject) with the next
// statement.
func (tx *txn) PrefetchCode(kind, projectID, subject string) {
	tx.prefetch(rowKey{'c', kind, projectID, subject})
}

// PrefetchThrottle reads the history of (kind, projectID, subject) with
// the next statement.
func (tx *txn) PrefetchThrottle(kind, projectID, subject string) {
	tx.prefetch(rowKey{'t', kind, projectID, subject})
}

// prefetch queues the read of k unless it is read or queued already.
func (tx *txn) prefetch(k rowKey) {
	if !storable(k.kind, k.project) {
		return // Code and Throttle read it themselves (and fail as they do)
	}
	if _, ok := tx.fetched[k]; ok || slices.Contains(tx.ahead, k) {
		return
	}
	tx.ahead = append(tx.ahead, k)
}

// usersAhead is a read of projectID's users by address (PrefetchUsers).
type usersAhead struct {
	project string
	emails  []string
}

// PrefetchUsers reads projectID's users with emails, with the next
// statement, into the answers of UserByEmail: an import's chunk pays one
// round trip for its lookups instead of one per line. Addresses already
// read are not read again.
func (tx *txn) PrefetchUsers(projectID string, emails []string) {
	if !validText(projectID) {
		return // UserByEmail answers ErrNotFound by itself
	}
	var want []string
	for _, e := range emails {
		if _, ok := tx.byEmail[[2]string{projectID, e}]; !ok && validText(e) {
			want = append(want, e)
		}
	}
	if len(want) > 0 {
		tx.aheadUsers = append(tx.aheadUsers, usersAhead{projectID, want})
	}
}

// readsAhead reports whether reads wait to go with the next statement.
func (tx *txn) readsAhead() bool { return len(tx.ahead) > 0 || len(tx.aheadUsers) > 0 }

// queueUsersAhead adds the queued reads of users to b and returns the
// functions that keep their answers, in b's order.
func (tx *txn) queueUsersAhead(b *pgx.Batch) []func(pgx.BatchResults) error {
	var reads []func(pgx.BatchResults) error
	for _, a := range tx.aheadUsers {
		b.Queue(`SELECT `+userCols+` FROM users WHERE project_id = $1 AND email = ANY($2::text[])`, a.project, a.emails)
		reads = append(reads, func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			found := map[string]*store.User{}
			for rows.Next() {
				u := &store.User{}
				if err := rows.Scan(userDest(u)...); err != nil {
					rows.Close()
					return err
				}
				found[u.Email] = u
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if tx.byEmail == nil {
				tx.byEmail = map[[2]string]*store.User{}
			}
			for _, e := range a.emails {
				tx.byEmail[[2]string{a.project, e}] = found[e] // nil: none
			}
			return nil
		})
	}
	tx.aheadUsers = nil
	return reads
}

// queueAhead adds the queued reads to b and returns the functions that
// keep their answers, in b's order.
func (tx *txn) queueAhead(b *pgx.Batch) []func(pgx.BatchResults) error {
	users := tx.queueUsersAhead(b)
	if len(tx.ahead) == 0 {
		return users
	}
	if tx.fetched == nil {
		tx.fetched = map[rowKey]any{}
	}
	reads := make([]func(pgx.BatchResults) error, len(tx.ahead))
	for i, k := range tx.ahead {
		args := []any{k.project, k.kind, []byte(k.subject)}
		switch k.table {
		case 'c':
			b.Queue(sqlCode, args...)
			reads[i] = func(br pgx.BatchResults) error {
				c, err := scanCode(br.QueryRow(), k.kind, k.project, k.subject)
				return tx.keep(k, c, err)
			}
		default:
			b.Queue(sqlThrottle, args...)
			reads[i] = func(br pgx.BatchResults) error {
				t, err := scanThrottle(br.QueryRow())
				return tx.keep(k, t, err)
			}
		}
	}
	tx.ahead = nil
	return append(users, reads...)
}

// keep keeps the answer v (nil for none) of k's read.
func (tx *txn) keep(k rowKey, v any, err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		tx.fetched[k] = nil
		return nil
	}
	if err != nil {
		return err
	}
	tx.fetched[k] = v
	return nil
}

// fetchedCode returns the prefetched answer of Code: a copy of the code,
// or store.ErrNotFound; ok is false when it was not prefetched.
func (tx *txn) fetchedCode(k rowKey) (c *store.Code, err error, ok bool) {
	v, ok := tx.fetched[k]
	if !ok {
		return nil, nil, false
	}
	if v == nil {
		return nil, store.ErrNotFound, true
	}
	cp := *v.(*store.Code)
	cp.Hash = slices.Clone(cp.Hash)
	return &cp, nil, true
}

// fetchedThrottle returns the prefetched answer of Throttle, a copy
// (an empty history when there is none); ok is false when it was not
// prefetched.
func (tx *txn) fetchedThrottle(k rowKey) (*store.Throttle, bool) {
	v, ok := tx.fetched[k]
	if !ok {
		return nil, false
	}
	if v == nil {
		return &store.Throttle{}, true
	}
	t := v.(*store.Throttle)
	return &store.Throttle{Sends: slices.Clone(t.Sends), KeepUntil: t.KeepUntil}, true
}

// forget drops what was read of k (the transaction writes it), and a
// queued read of it.
func (tx *txn) forget(k rowKey) {
	delete(tx.fetched, k)
	tx.ahead = slices.DeleteFunc(tx.ahead, func(a rowKey) bool { return a == k })
}

// forgetAll drops every answer and queued read (a bulk delete of codes
// or histories).
func (tx *txn) forgetAll() {
	tx.fetched, tx.ahead = nil, nil
}
