package postgres

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// Authentication events (table auth_events) and how many each project
// keeps (event_totals); their hourly counters are in counters.go.

// Outcome kinds, as bbolt's index: a success, a failure without a code,
// and the counter of an hour's suppressed failures (counters.go).
const (
	successKind    = "+"
	noCodeKind     = "?"
	suppressedKind = "~"
	// allScope is the counters' scope of the sums over every project.
	allScope = "*"
)

// outcomeKind returns the kind of an outcome.
func outcomeKind(success bool, failureCode string) string {
	switch {
	case success:
		return successKind
	case failureCode == "":
		return noCodeKind
	}
	return failureCode
}

// trimPerAdd bounds the old events one AddAuthEvent deletes to bring its
// project back under the cap.
const trimPerAdd = 4

// maxEvents returns the per-project cap.
func (tx *txn) maxEvents() int64 {
	if n := tx.db.opt.MaxEventsPerProject; n > 0 {
		return int64(n)
	}
	return store.DefaultMaxEventsPerProject
}

// AddAuthEvent records e and counts it, in one statement: the event, its
// hour's counters of its outcome (its project's and all projects'), and
// its project's number of kept events. It sets e.Pos. When the project
// may be near the cap (see capCache), the statement also reads the
// project's number, and a project over the cap loses up to trimPerAdd of
// its oldest events in a second statement.
func (tx *txn) AddAuthEvent(e *store.AuthEvent) error {
	kind := outcomeKind(e.Success, e.FailureCode)
	if strings.IndexByte(e.ProjectID, 0) >= 0 || strings.IndexByte(kind, 0) >= 0 || !storable(e.ProjectID, kind) {
		return store.ErrBadEventField
	}
	max := tx.maxEvents()
	caps := capsOf(tx.db)
	exact := caps.needsCount(e.ProjectID, max)
	nanos := e.CreatedAt.UnixNano()
	// The counters' rows: the project's and all projects' (one row
	// counting 2 when the project's id is allScope itself).
	scopes, n := []string{e.ProjectID, allScope}, []int64{1, 1}
	if e.ProjectID == allScope {
		scopes, n = scopes[:1], []int64{2}
	}
	total := ``
	if exact {
		// The statement's snapshot does not hold its own upsert: +1.
		total = `, (SELECT coalesce(sum(n), 0)::bigint + 1 FROM event_totals WHERE scope = $2)`
	}
	sql := `WITH ev AS (
			INSERT INTO auth_events (nanos, project_id, kind, id, user_id, email, method, action, success, failure_code, ip, user_agent)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING seq
		), c AS (
			INSERT INTO event_counts (scope, hour, kind, shard, n)
			SELECT s.scope, $13, $3, pg_backend_pid(), s.n FROM unnest($14::text[], $15::bigint[]) AS s(scope, n)
			ON CONFLICT (scope, hour, kind, shard) DO UPDATE SET n = event_counts.n + excluded.n
		), t AS (
			INSERT INTO event_totals (scope, shard, n) VALUES ($2, pg_backend_pid(), 1)
			ON CONFLICT (scope, shard) DO UPDATE SET n = event_totals.n + 1
		)
		SELECT seq` + total + ` FROM ev`
	args := []any{nanos, e.ProjectID, kind, e.ID, e.UserID, []byte(e.Email), e.Method, e.Action, e.Success, e.FailureCode,
		[]byte(e.IP), []byte(e.UserAgent), hourOf(e.CreatedAt), scopes, n}
	e.Pos = store.EventPos{Nanos: nanos}
	if !exact {
		// Far below the cap, nothing waits for the event's number: it
		// goes with the next statement or the commit (txn.later).
		tx.laterRow(sql, args, func(row pgx.Row) error {
			var seq int64
			err := row.Scan(&seq)
			e.Pos.Seq = uint64(seq)
			return err
		})
		return nil
	}
	var seq, kept int64
	if err := tx.one(sql, args, &seq, &kept); err != nil {
		return err
	}
	e.Pos.Seq = uint64(seq)
	if kept > max {
		deleted, err := tx.trimScope(e.ProjectID, min(trimPerAdd, kept-max))
		if err != nil {
			return err
		}
		kept -= deleted
	}
	caps.counted(e.ProjectID, kept)
	return nil
}

// trimScope deletes up to n of scope's oldest events, with its kept
// number, and returns how many it deleted.
func (tx *txn) trimScope(scope string, n int64) (int64, error) {
	var deleted int64
	err := tx.one(`WITH d AS (
			DELETE FROM auth_events WHERE ctid = ANY (ARRAY(
				SELECT ctid FROM auth_events WHERE project_id = $1 ORDER BY nanos, seq LIMIT $2))
			RETURNING 1
		), t AS (
			INSERT INTO event_totals (scope, shard, n) SELECT $1, pg_backend_pid(), -count(*) FROM d HAVING count(*) > 0
			ON CONFLICT (scope, shard) DO UPDATE SET n = event_totals.n + excluded.n
		)
		SELECT count(*) FROM d`, []any{scope, n}, &deleted)
	return deleted, err
}

// capCache spares AddAuthEvent the read of its project's number of kept
// events while the project is far below the cap. That read is what makes
// two concurrent transactions adding events to one project conflict
// under SERIALIZABLE (each reads the counter rows the other writes), so
// the sign-ins of a busy project would retry each other. A project is
// read when this DB has not read it within capRefresh, or when what it
// read plus what it has added since (retried or rolled-back
// transactions included, so never less than the truth from this
// process) passes half the cap; below half, no trim can be due. Events
// added by other replicas within capRefresh are not seen: the cap could
// be passed only by another replica adding more than half the cap
// (500 000 events by default) to one project within capRefresh, and the
// next read trims it back. Every decision to trim is made on an exact
// read.
type capCache struct {
	mu     sync.Mutex
	scopes map[string]*capSeen
}

// capSeen is what a DB knows of one scope's number of kept events.
type capSeen struct {
	kept  int64     // as read
	at    time.Time // when
	added int64     // events added by this DB since
}

// capRefresh is how long a read of a project's number of kept events
// is trusted.
const capRefresh = 5 * time.Second

// capCaches holds the capCache of every DB in use, keyed weakly: an
// entry goes when its DB is collected.
var capCaches sync.Map // weak.Pointer[DB] → *capCache

// capsOf returns db's capCache.
func capsOf(db *DB) *capCache {
	key := weak.Make(db)
	if c, ok := capCaches.Load(key); ok {
		return c.(*capCache)
	}
	c, loaded := capCaches.LoadOrStore(key, &capCache{scopes: map[string]*capSeen{}})
	if !loaded {
		runtime.AddCleanup(db, func(k weak.Pointer[DB]) { capCaches.Delete(k) }, key)
	}
	return c.(*capCache)
}

// needsCount reports whether an event added to scope must read the
// scope's number of kept events; when not, it counts the event as added.
func (c *capCache) needsCount(scope string, max int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.scopes[scope]
	if s == nil || time.Since(s.at) >= capRefresh || s.kept+s.added+1 > max/2 {
		return true
	}
	s.added++
	return false
}

// counted records an exact read of scope's number of kept events.
func (c *capCache) counted(scope string, kept int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.scopes) > 10_000 {
		clear(c.scopes) // many projects: keep the cache small
	}
	c.scopes[scope] = &capSeen{kept: kept, at: time.Now()}
}

// authEventColumns are read by scanAuthEvent.
const authEventColumns = `nanos, seq, id, project_id, user_id, email, method, action, success, failure_code, ip, user_agent`

// AuthEvents returns up to f.Limit events matching f, newest first, and
// whether more match: one index range read backwards from f.Before
// (auth_events' key, or its index by project, by project and outcome, or
// by outcome).
func (tx *txn) AuthEvents(f store.AuthEventFilter) ([]*store.AuthEvent, bool, error) {
	out := []*store.AuthEvent{}
	if !storable(f.ProjectID, f.FailureCode) {
		return out, false, nil
	}
	bn, bs := int64(math.MaxInt64), int64(math.MaxInt64) // after every event
	if !f.Before.IsZero() {
		bn, bs = f.Before.Nanos, int64(min(f.Before.Seq, math.MaxInt64))
	}
	var limit *int64 // no limit
	if f.Limit > 0 {
		l := int64(min(f.Limit, math.MaxInt32)) + 1
		limit = &l
	}
	args := []any{bn, bs, limit}
	where := ``
	if f.ProjectID != "" {
		args = append(args, f.ProjectID)
		where += ` AND project_id = $4`
	}
	if f.FailureCode != "" {
		args = append(args, f.FailureCode)
		where += ` AND kind = $` + strconv.Itoa(len(args))
	}
	rows, err := tx.query(`SELECT `+authEventColumns+` FROM auth_events
		WHERE (nanos, seq) < ($1, $2)`+where+` ORDER BY nanos DESC, seq DESC LIMIT $3`, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	more := false
	for rows.Next() {
		if f.Limit > 0 && len(out) == f.Limit {
			more = true
			break
		}
		e := &store.AuthEvent{}
		var seq int64
		var email, ip, ua []byte
		if err := rows.Scan(&e.Pos.Nanos, &seq, &e.ID, &e.ProjectID, &e.UserID, &email, &e.Method, &e.Action,
			&e.Success, &e.FailureCode, &ip, &ua); err != nil {
			return nil, false, err
		}
		e.Pos.Seq = uint64(seq)
		e.Email, e.IP, e.UserAgent = string(email), string(ip), string(ua)
		e.CreatedAt = time.Unix(0, e.Pos.Nanos).UTC()
		out = append(out, e)
	}
	return out, more, tx.note(unavailable(rows.Err()))
}

// AuthEventCount returns how many events projectID keeps.
func (tx *txn) AuthEventCount(projectID string) (int, error) {
	if !storable(projectID) {
		return 0, nil
	}
	var n int64
	err := tx.one(`SELECT coalesce(sum(n), 0)::bigint FROM event_totals WHERE scope = $1`, []any{projectID}, &n)
	return int(n), err
}

// SweepAuthEvents deletes up to max events created before cutoff, oldest
// first, with their projects' kept numbers, in one statement.
func (tx *txn) SweepAuthEvents(cutoff time.Time, max int) (int, error) {
	if max <= 0 {
		return 0, nil
	}
	var n int
	err := tx.one(`WITH d AS (
			DELETE FROM auth_events WHERE ctid = ANY (ARRAY(
				SELECT ctid FROM auth_events WHERE nanos < $1 ORDER BY nanos, seq LIMIT $2))
			RETURNING project_id
		), g AS (
			SELECT project_id, count(*) AS c FROM d GROUP BY project_id
		), t AS (
			INSERT INTO event_totals (scope, shard, n) SELECT project_id, pg_backend_pid(), -c FROM g
			ON CONFLICT (scope, shard) DO UPDATE SET n = event_totals.n + excluded.n
		)
		SELECT coalesce(sum(c), 0)::bigint FROM g`, []any{store.PosBefore(cutoff).Nanos, max}, &n)
	return n, err
}

// TrimAuthEvents deletes, oldest first, up to max events of scopes that
// keep more than the cap, scope by scope in byte order.
func (tx *txn) TrimAuthEvents(max int) (int, error) {
	if max <= 0 {
		return 0, nil
	}
	type over struct {
		scope string
		kept  int64
	}
	limit := tx.maxEvents()
	rows, err := tx.query(`SELECT scope, sum(n)::bigint FROM event_totals GROUP BY scope HAVING sum(n) > $1 ORDER BY scope`, limit)
	if err != nil {
		return 0, err
	}
	var scopes []over
	for rows.Next() {
		var o over
		if err := rows.Scan(&o.scope, &o.kept); err != nil {
			rows.Close()
			return 0, err
		}
		scopes = append(scopes, o)
	}
	rows.Close()
	if err := tx.note(unavailable(rows.Err())); err != nil {
		return 0, err
	}
	n := 0
	for _, o := range scopes {
		if n >= max {
			break
		}
		d, err := tx.trimScope(o.scope, min(o.kept-limit, int64(max-n)))
		if err != nil {
			return n, err
		}
		n += int(d)
	}
	return n, nil
}
