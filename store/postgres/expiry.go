package postgres

import (
	"fmt"
	"time"

	"latchkey/store"
)

// due is a table whose rows expire: column holds when each row is due,
// indexed (CREATE INDEX ON table (column)) so that the sweep reads only
// due rows.
type due struct {
	table, column string
}

// expiring maps each kind of expiring row to its tables. The file that
// owns a table registers it in an init function.
var expiring = map[store.Expiring][]due{}

// expires registers the tables of kind.
func expires(kind store.Expiring, tables ...due) {
	expiring[kind] = append(expiring[kind], tables...)
}

// tables returns kind's tables, or an error for a kind no file
// registered.
func tables(kind store.Expiring) ([]due, error) {
	ts, ok := expiring[kind]
	if !ok {
		return nil, fmt.Errorf("postgres: no table for expiring kind %v", kind)
	}
	return ts, nil
}

// ExpiryDue reports whether a row of kind is due at now.
func (tx *txn) ExpiryDue(kind store.Expiring, now time.Time) (bool, error) {
	ts, err := tables(kind)
	if err != nil {
		return false, err
	}
	for _, d := range ts {
		var yes bool
		if err := tx.one(`SELECT EXISTS (SELECT 1 FROM `+d.table+` WHERE `+d.column+` <= $1)`, []any{now}, &yes); err != nil || yes {
			return yes, err
		}
	}
	return false, nil
}

// ExpiringCount returns the rows of kind, due or not.
func (tx *txn) ExpiringCount(kind store.Expiring) (int, error) {
	ts, err := tables(kind)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, d := range ts {
		var n int
		if err := tx.one(`SELECT count(*) FROM `+d.table, nil, &n); err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// SweepExpired deletes up to max rows of kind that are due at now, the
// oldest first, and returns how many it deleted.
func (tx *txn) SweepExpired(kind store.Expiring, now time.Time, max int) (int, error) {
	ts, err := tables(kind)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, d := range ts {
		if deleted >= max {
			break
		}
		tag, err := tx.exec(`DELETE FROM `+d.table+` WHERE ctid IN (
			SELECT ctid FROM `+d.table+` WHERE `+d.column+` <= $1
			ORDER BY `+d.column+` LIMIT $2)`, now, max-deleted)
		if err != nil {
			return deleted, err
		}
		deleted += int(tag.RowsAffected())
	}
	if kind == store.ExpiringSessions && deleted > 0 {
		// Replicas (rep-sync): session caches drop what the sweep
		// deleted (sessioncache.go).
		return deleted, tx.sweptSessions(now)
	}
	return deleted, nil
}
