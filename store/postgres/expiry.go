package postgres

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"latchkey/store"
)

// due is a table whose rows expire: column holds when each row is due
// (a bigint written with dueNanos), indexed (CREATE INDEX ON table
// (column)) so that the sweep reads only due rows.
type due struct {
	table, column string
}

// expiring is each kind of expiring row's tables. It is a table the
// compiler lays out, not a map an initialiser fills, so that a process
// on bbolt runs none of this package's code at start.
var expiring = [...]struct {
	kind   store.Expiring
	tables []due
}{
	{store.ExpiringSessions, []due{{"sessions", "due"}}},
	{store.ExpiringCodes, []due{{"codes", "due"}, {"throttles", "due"}}},
	{store.ExpiringMagicLinks, []due{{"magic_links", "due"}}},
	{store.ExpiringChallenges, []due{{"challenges", "due"}}},
	{store.ExpiringGrants, []due{{"grants", "due"}}},
	{store.ExpiringDevices, []due{{"devices", "due"}}},
	{store.ExpiringDeliveries, []due{{"deliveries", "expires_at"}}},
	{store.ExpiringOAuthFlows, []due{{"oauth_flows", "due"}}},
	{store.ExpiringRefreshTokens, []due{{"refresh_tokens", "due"}}},
	{store.ExpiringOIDCAuthRequests, []due{{"oidc_auth_requests", "due"}}},
	{store.ExpiringOIDCGrants, []due{{"oidc_grants", "due"}}},
	{store.ExpiringOIDCRefreshTokens, []due{{"oidc_refresh_tokens", "due"}}},
	{store.ExpiringOIDCRevokedTokens, []due{{"oidc_revoked_tokens", "due"}}},
	{store.ExpiringOIDCDeviceAuths, []due{{"oidc_device_auths", "due"}}},
}

// dueNanos is the value of a due column for a row due at t: its Unix
// nanoseconds, as bbolt's expiry index keys it: times before 1970 (the
// zero time too) are 0, long due, and times past 2262 the largest value.
func dueNanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, 0)): // the zero time too
		return 0
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// goesWith is, for a table whose rows expire, the rows of other tables
// that the sweep deletes with each of its rows, in the same statement:
// what a foreign key's ON DELETE CASCADE would do, without the key's
// reads (refresh.go): a session's refresh tokens.
var goesWith = [...]struct {
	parent string
	deps   []dependent
}{
	{"sessions", []dependent{{"id", "refresh_tokens", "session_id"}}},
}

// dependent is table's rows whose column holds the key of the row they
// go with.
type dependent struct {
	key, table, column string
}

// dependents returns the rows that go with each row of table.
func dependents(table string) []dependent {
	for _, g := range goesWith {
		if g.parent == table {
			return g.deps
		}
	}
	return nil
}

// tables returns kind's tables, or an error for a kind expiring does
// not list.
func tables(kind store.Expiring) ([]due, error) {
	for _, e := range expiring {
		if e.kind == kind {
			return e.tables, nil
		}
	}
	return nil, fmt.Errorf("postgres: no table for expiring kind %v", kind)
}

// ExpiryDue reports whether a row of kind is due at now.
func (tx *txn) ExpiryDue(kind store.Expiring, now time.Time) (bool, error) {
	ts, err := tables(kind)
	if err != nil {
		return false, err
	}
	for _, d := range ts {
		// min() reads the first entry of the column's index, whatever
		// the plan: EXISTS (... WHERE column <= $1) may get a generic
		// plan (after five runs of the prepared statement) that scans
		// the table when nothing is due.
		var yes bool
		if err := tx.one(`SELECT coalesce(min(`+d.column+`) <= $1, false) FROM `+d.table, []any{dueNanos(now)}, &yes); err != nil || yes {
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
	tx.forgetAll() // codes and histories among them (prefetch.go)
	ts, err := tables(kind)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, d := range ts {
		if deleted >= max {
			break
		}
		// ctid = ANY (ARRAY(...)): a TID scan of the rows the index
		// found; ctid IN (SELECT ...) may get a generic plan that joins
		// with a scan of the whole table.
		del := `DELETE FROM ` + d.table + ` WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM ` + d.table + ` WHERE ` + d.column + ` <= $1
			ORDER BY ` + d.column + ` LIMIT $2))`
		deps := dependents(d.table)
		if len(deps) == 0 {
			tag, err := tx.exec(del, dueNanos(now), max-deleted)
			if err != nil {
				return deleted, err
			}
			deleted += int(tag.RowsAffected())
			continue
		}
		// The rows that go with them, found by index from the keys the
		// deletion returns (= ANY (ARRAY(...)), as above).
		var keys []string
		with := ""
		for i, dep := range deps {
			if !slices.Contains(keys, dep.key) {
				keys = append(keys, dep.key)
			}
			with += fmt.Sprintf(`, d%d AS (DELETE FROM %s WHERE %s = ANY (ARRAY(SELECT %s FROM x)))`, i, dep.table, dep.column, dep.key)
		}
		var n int
		sql := `WITH x AS (` + del + ` RETURNING ` + strings.Join(keys, ", ") + `)` + with + ` SELECT count(*) FROM x`
		if err := tx.one(sql, []any{dueNanos(now), max - deleted}, &n); err != nil {
			return deleted, err
		}
		deleted += n
	}
	if kind == store.ExpiringSessions && deleted > 0 {
		tx.putSession = "" // perhaps among them
		// Replicas (rep-sync): session caches drop what the sweep
		// deleted (sessioncache.go).
		return deleted, tx.sweptSessions(now)
	}
	return deleted, nil
}
