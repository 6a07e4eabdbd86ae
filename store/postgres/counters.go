package postgres

import (
	"strings"
	"time"

	"latchkey/store"
)

// Hourly counters of authentication events (event_counts) and suppressed
// failures (suppressed_counts). event_counts and event_totals are split
// by writer (shard = pg_backend_pid(), see the migration): readers sum a
// key's shards, and the sweep folds shards that no backend writes any
// more into shard 0.

// hourOf returns t's hour in Unix hours (bbolt's, without its 32-bit
// wrap).
func hourOf(t time.Time) int64 { return t.Unix() / 3600 }

// hourTime returns the start of Unix hour h, in UTC.
func hourTime(h int64) time.Time { return time.Unix(h*3600, 0).UTC() }

// HourlyCounts returns the counters of projectID ("" for all projects)
// for the hours of from to to, oldest hour first and, within an hour, by
// kind in byte order (success '+', failure codes, suppressed '~'): one
// index range.
func (tx *txn) HourlyCounts(projectID string, from, to time.Time) ([]store.HourCount, error) {
	scope := projectID
	if scope == "" {
		scope = allScope
	}
	if !storable(scope) {
		return nil, nil
	}
	rows, err := tx.query(`SELECT hour, kind, sum(n)::bigint FROM event_counts
		WHERE scope = $1 AND hour BETWEEN $2 AND $3
		GROUP BY hour, kind HAVING sum(n) <> 0 ORDER BY hour, kind`, scope, hourOf(from), hourOf(to))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.HourCount
	for rows.Next() {
		var h int64
		var kind string
		hc := store.HourCount{}
		if err := rows.Scan(&h, &kind, &hc.N); err != nil {
			return nil, err
		}
		hc.Hour = hourTime(h)
		switch kind {
		case successKind:
			hc.Success = true
		case suppressedKind:
			hc.Suppressed = true
		default:
			hc.FailureCode = kind
		}
		out = append(out, hc)
	}
	return out, tx.note(unavailable(rows.Err()))
}

// AddSuppressed adds c.N to its suppressed counter and to the hourly
// counters of its project and of all projects (its failure category's
// and the hour's suppressed one), in one statement.
func (tx *txn) AddSuppressed(c store.SuppressedCount) error {
	if c.N <= 0 {
		return nil
	}
	for _, s := range []string{c.ProjectID, c.Method, c.Action, c.FailureCode} {
		if strings.IndexByte(s, 0) >= 0 || !storable(s) {
			return store.ErrBadEventField
		}
	}
	// GROUP BY sums the rows that meet (a project whose id is allScope,
	// a failure code that is the suppressed kind), as bbolt adds twice.
	_, err := tx.exec(`WITH s AS (
			INSERT INTO suppressed_counts (hour, project_id, method, action, failure_code, n)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (hour, project_id, method, action, failure_code) DO UPDATE SET n = suppressed_counts.n + excluded.n
		)
		INSERT INTO event_counts (scope, hour, kind, shard, n)
		SELECT sc, $1, k, pg_backend_pid(), count(*) * $6
		FROM unnest($7::text[]) AS sc, unnest($8::text[]) AS k GROUP BY sc, k
		ON CONFLICT (scope, hour, kind, shard) DO UPDATE SET n = event_counts.n + excluded.n`,
		hourOf(c.Hour), c.ProjectID, c.Method, c.Action, c.FailureCode, c.N,
		[]string{c.ProjectID, allScope}, []string{outcomeKind(false, c.FailureCode), suppressedKind})
	return err
}

// SuppressedCounts returns suppressed counters of the hours of from to
// to, newest hour first, considering at most limit of them: one index
// range (suppressed_counts' key for every project, its index by project
// for one).
func (tx *txn) SuppressedCounts(projectID, failureCode string, from, to time.Time, limit int) ([]store.SuppressedCount, error) {
	if limit <= 0 || !storable(projectID) {
		return nil, nil
	}
	args := []any{hourOf(from), hourOf(to), limit}
	where := ``
	if projectID != "" {
		args = append(args, projectID)
		where = ` AND project_id = $4`
	}
	rows, err := tx.query(`SELECT hour, project_id, method, action, failure_code, n FROM suppressed_counts
		WHERE hour BETWEEN $1 AND $2`+where+` ORDER BY hour DESC LIMIT $3`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.SuppressedCount
	for rows.Next() {
		var h int64
		var c store.SuppressedCount
		if err := rows.Scan(&h, &c.ProjectID, &c.Method, &c.Action, &c.FailureCode, &c.N); err != nil {
			return nil, err
		}
		if failureCode != "" && c.FailureCode != failureCode {
			continue // read, so counted towards limit
		}
		c.Hour = hourTime(h)
		out = append(out, c)
	}
	return out, tx.note(unavailable(rows.Err()))
}

// SweepEventCounts deletes up to max counters of hours before cutoff's
// hour (suppressed ones first), then, with what max leaves, folds the
// shards of counters no backend writes any more (hours before the
// newest hour but one; kept numbers of backends that are gone) into
// shard 0. It returns the rows it deleted, folded ones included.
func (tx *txn) SweepEventCounts(cutoff time.Time, max int) (int, error) {
	n := 0
	hour := hourOf(cutoff)
	steps := []string{
		`DELETE FROM suppressed_counts WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM suppressed_counts
			WHERE hour < $1 ORDER BY hour LIMIT $2))`,
		`DELETE FROM event_counts WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM event_counts WHERE hour < $1 ORDER BY hour LIMIT $2))`,
	}
	for _, sql := range steps {
		if n >= max {
			return n, nil
		}
		tag, err := tx.exec(sql, hour, max-n)
		if err != nil {
			return n, err
		}
		n += int(tag.RowsAffected())
	}
	folds := []string{
		// Hourly counters of hours before the newest but one: every
		// writer has moved on.
		`WITH d AS (
			DELETE FROM event_counts WHERE ctid = ANY (ARRAY(
				SELECT ctid FROM event_counts
				WHERE shard <> 0 AND hour < (SELECT max(hour) FROM event_counts) - 1 ORDER BY hour LIMIT $1))
			RETURNING scope, hour, kind, n
		), f AS (
			INSERT INTO event_counts (scope, hour, kind, shard, n)
			SELECT scope, hour, kind, 0, sum(n) FROM d GROUP BY scope, hour, kind
			ON CONFLICT (scope, hour, kind, shard) DO UPDATE SET n = event_counts.n + excluded.n
		)
		SELECT count(*) FROM d`,
		// Kept numbers written by backends that are gone.
		`WITH d AS (
			DELETE FROM event_totals WHERE ctid = ANY (ARRAY(
				SELECT ctid FROM event_totals
				WHERE shard <> 0 AND shard NOT IN (SELECT pid FROM pg_stat_activity WHERE pid IS NOT NULL) LIMIT $1))
			RETURNING scope, n
		), f AS (
			INSERT INTO event_totals (scope, shard, n)
			SELECT scope, 0, sum(n) FROM d GROUP BY scope
			ON CONFLICT (scope, shard) DO UPDATE SET n = event_totals.n + excluded.n
		)
		SELECT count(*) FROM d`,
	}
	for _, sql := range folds {
		if n >= max {
			return n, nil
		}
		var d int
		if err := tx.one(sql, []any{max - n}, &d); err != nil {
			return n, err
		}
		n += d
	}
	return n, nil
}

// EventSweepDue reports, in one statement of index probes, whether
// events are older than cutoff, whether counters are older than its
// hour or wait to be folded, and whether a scope keeps more than the cap
// (which reads every scope's kept-number rows: a few per project).
func (tx *txn) EventSweepDue(cutoff time.Time) (events, counters, overCap bool, err error) {
	// min() and max() are one index probe each under any plan (an
	// EXISTS over a range may be planned as a scan that reads every row
	// when none is due).
	err = tx.one(`SELECT
			coalesce((SELECT min(nanos) FROM auth_events) < $1, false),
			coalesce((SELECT min(hour) FROM suppressed_counts) < $2, false)
				OR coalesce((SELECT min(hour) FROM event_counts) < $2, false)
				OR coalesce((SELECT min(hour) FROM event_counts WHERE shard <> 0) < (SELECT max(hour) FROM event_counts) - 1, false),
			EXISTS (SELECT 1 FROM event_totals GROUP BY scope HAVING sum(n) > $3)`,
		[]any{store.PosBefore(cutoff).Nanos, hourOf(cutoff), tx.maxEvents()}, &events, &counters, &overCap)
	return events, counters, overCap, err
}
