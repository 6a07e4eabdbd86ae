package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"latchkey/store"
)

// Tests that look inside the accounts domain's SQL: the plans of the
// statements its methods send (no sequential scan of a table that
// grows), and how many round trips the hot calls cost.

// traced is a store whose connections record every statement the
// methods send and count round trips (a write to the server after a
// read from it).
type traced struct {
	db    *DB
	trips atomic.Int64

	mu    sync.Mutex
	stmts map[string][]any // SQL → the arguments of its last run
}

// TraceQueryStart records the statement (pgx.QueryTracer).
func (tr *traced) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	tr.mu.Lock()
	tr.stmts[data.SQL] = data.Args
	tr.mu.Unlock()
	return ctx
}

// TraceQueryEnd implements pgx.QueryTracer.
func (tr *traced) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// countingConn counts the round trips of a connection into n.
type countingConn struct {
	net.Conn
	n    *atomic.Int64
	read atomic.Bool // read since the last counted write
}

// Write counts a round trip when the server has answered since the last
// one.
func (c *countingConn) Write(b []byte) (int, error) {
	if c.read.Swap(false) {
		c.n.Add(1)
	}
	return c.Conn.Write(b)
}

// Read notes that the server answered.
func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.read.Store(true)
	}
	return n, err
}

// openTraced opens a store on a fresh database through connections that
// trace statements and count round trips. Without PostgreSQL the test is
// skipped, unless LATCHKEY_REQUIRE_POSTGRES is set.
func openTraced(t *testing.T) *traced {
	t.Helper()
	ctx := context.Background()
	url := replicaDatabase(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	tr := &traced{stmts: map[string][]any{}}
	cfg.ConnConfig.Tracer = tr
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cc := &countingConn{Conn: conn, n: &tr.trips}
		cc.read.Store(true)
		return cc, nil
	}
	cfg.MaxConns = 1 // one connection: its statement cache is warm after the first run
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr.db = &DB{pool: pool, log: slog.New(slog.DiscardHandler)}
	if _, err := tr.db.migrate(ctx); err != nil {
		pool.Close()
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return tr
}

// fillAccounts writes n users in 10 projects, each with a session and a
// remembered device, 1,000 API keys and 5,000 projects, a project of 5
// users (p11), and analyzes the tables.
func fillAccounts(t *testing.T, db *DB, n int) {
	t.Helper()
	due := time.Now().Add(time.Hour).UnixNano()
	for _, sql := range []string{
		`INSERT INTO projects (id, name, company_id, rp_id, session_ttl_seconds, rate_limit_per_minute, email_change, signing_key_id)
			SELECT 'p' || i, '', '', '', 0, 0, '', '' FROM generate_series(0, 4999) i`,
		`INSERT INTO api_keys (prefix, project_id, mode, revoked)
			SELECT 'sk_test_' || i, 'p' || (i % 10), 'test', false FROM generate_series(0, 999) i`,
		`INSERT INTO users (id, project_id, email, external_user_id, first_name, company_id, disabled)
			SELECT 'u' || i, 'p' || (i % 10), 'user' || i || '@example.com', CASE WHEN i % 2 = 0 THEN 'x' || i END, '', '', false
			FROM generate_series(0, $1::int - 1) i`,
		`INSERT INTO sessions (id, user_id, project_id, method, ip, user_agent, expires_at, due)
			SELECT 's' || i, 'u' || i, 'p' || (i % 10), 'otp', '', '', $2::bigint + i, $2::bigint + i FROM generate_series(0, $1::int - 1) i`,
		`INSERT INTO devices (key, user_id, project_id, last_used_at, due)
			SELECT convert_to('d' || i, 'UTF8'), 'u' || i, 'p' || (i % 10), $2::bigint, $2::bigint + i FROM generate_series(0, $1::int - 1) i`,
		// A small project among the big ones, for DeleteProject: deleting
		// a tenth of a table (one of p0...p9) rightly reads all of it.
		`INSERT INTO users (id, project_id, email, first_name, company_id, disabled)
			SELECT 'small-u' || i, 'p11', 'small' || i || '@example.com', '', '', false FROM generate_series(0, 4) i`,
		`INSERT INTO sessions (id, user_id, project_id, method, ip, user_agent, due)
			SELECT 'small-s' || i, 'small-u' || i, 'p11', 'otp', '', '', $2::bigint FROM generate_series(0, least(4, $1::int)) i`,
		`ANALYZE projects, api_keys, users, sessions, devices`,
	} {
		var args []any
		if strings.Contains(sql, "$2") {
			args = []any{n, due}
		} else if strings.Contains(sql, "$1") {
			args = []any{n}
		}
		if _, err := db.pool.Exec(context.Background(), sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// accountsWorkload calls every method of the domain at least once, in
// the shapes the callers use.
func accountsWorkload(tx store.Tx) error {
	now := time.Now()
	yes := true
	steps := []func() error{
		func() error { _, err := tx.Project("p3"); return err },
		func() error { return tx.PutProject(&store.Project{ID: "p3", Name: "three", CreatedAt: now}) },
		func() error { _, err := tx.Projects(); return err },
		func() error { _, err := tx.APIKey("sk_test_7"); return err },
		func() error {
			return tx.PutAPIKey(&store.APIKey{Prefix: "sk_test_7", ProjectID: "p7", Mode: "test", ExpiresAt: &now, CreatedAt: now})
		},
		func() error { _, err := tx.APIKeys("p7"); return err },
		func() error { _, err := tx.APIKeys(""); return err },
		func() error { _, err := tx.User("u42"); return err },
		func() error { _, err := tx.UserByEmail("p2", "user42@example.com"); return err },
		func() error { _, err := tx.UserByExternalID("p2", "x42"); return err },
		func() error {
			return tx.PutUser(&store.User{ID: "new-user", ProjectID: "p2", Email: "new@example.com", EmailVerified: &yes, CreatedAt: now, UpdatedAt: now})
		},
		func() error {
			return tx.PutUser(&store.User{ID: "u42", ProjectID: "p2", Email: "user42@example.com", ExternalUserID: "x42", FirstName: "Ada", UpdatedAt: now})
		},
		func() error { _, _, err := tx.Users("p2", "", "", 100); return err },
		func() error { _, _, err := tx.Users("p2", "user4", "", 100); return err },
		func() error { _, _, err := tx.Users("p2", "user4", "user42@example.com", 100); return err },
		func() error { _, _, err := tx.Users("p2", "", "user42@example.com", 100); return err },
		func() error { _, _, err := tx.Users("p2", "user\xc3", "user\xff", 100); return err },
		func() error { _, err := tx.Session("s42"); return err },
		func() error { _, err := tx.SessionExists("s42"); return err },
		func() error {
			return tx.PutSession(&store.Session{ID: "new-session", UserID: "u42", ProjectID: "p2", Method: "otp", IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
		},
		func() error { return tx.TouchSession("s42", now, time.Minute) },
		func() error { _, err := tx.UserSessions("u42"); return err },
		func() error { _, err := tx.UserSessionRows("u42"); return err },
		func() error { _, _, err := tx.RecentUserSessions("u42", 10); return err },
		func() error { return tx.DeleteSession(&store.Session{ID: "s43", UserID: "u43"}) },
		func() error { return tx.DeleteUserSessions("u44") },
		func() error { _, err := tx.Device([]byte("d42")); return err },
		func() error {
			return tx.PutDevice(&store.Device{Key: []byte("new-device"), Hash: []byte{1}, UserID: "u42", ProjectID: "p2", CreatedAt: now})
		},
		func() error { _, err := tx.ExpiryDue(store.ExpiringSessions, now); return err },
		func() error { _, err := tx.ExpiryDue(store.ExpiringDevices, now); return err },
		func() error { _, err := tx.SweepExpired(store.ExpiringSessions, now, 100); return err },
		func() error { _, err := tx.SweepExpired(store.ExpiringDevices, now, 100); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("step %d: %w", i, err)
		}
	}
	if _, err := tx.DeleteProject("p11"); err != nil {
		return err
	}
	if err := tx.DeleteUser(&store.User{ID: "u45", ProjectID: "p5"}); err != nil {
		return err
	}
	return nil
}

// accountTables are the tables of the domain, which grow with the
// deployment.
var accountTables = []string{"projects", "api_keys", "users", "sessions", "devices"}

// TestAccountsPlans: no statement of the domain reads a table with a
// sequential scan, on tables of 20,000 users with statistics, with the
// plan for its arguments (custom) and the generic plan a prepared
// statement switches to. Statements without a WHERE (the full listings
// and counts, for tools and the admin's project list) are left out.
func TestAccountsPlans(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fills tables")
	}
	tr := openTraced(t)
	fillAccounts(t, tr.db, 20000)
	ctx := context.Background()
	err := tr.db.Update(ctx, func(tx store.Tx) error {
		if err := accountsWorkload(tx); err != nil {
			return err
		}
		return errors.New("rollback")
	})
	if err == nil || err.Error() != "rollback" {
		t.Fatal(err)
	}
	conn, err := tr.db.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var sqls []string
	for sql := range tr.stmts {
		if strings.Contains(sql, "WHERE") && mentionsTable(sql) {
			sqls = append(sqls, sql)
		}
	}
	sort.Strings(sqls)
	if len(sqls) < 20 {
		t.Fatalf("only %d statements traced", len(sqls))
	}
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		for i, sql := range sqls {
			plan, err := explain(ctx, conn.Conn(), mode, fmt.Sprint("q", i), sql, tr.stmts[sql])
			if err != nil {
				t.Fatalf("%s: EXPLAIN %s: %v", mode, sql, err)
			}
			if os.Getenv("DUMP_PLANS") != "" {
				t.Logf("%s\n%s\n%s", mode, sql, plan)
			}
			for _, table := range accountTables {
				if strings.Contains(plan, "Seq Scan on "+table+" ") || strings.HasSuffix(plan, "Seq Scan on "+table) {
					t.Errorf("%s plan of\n%s\nscans %s:\n%s", mode, sql, table, plan)
				}
			}
		}
	}
}

// mentionsTable reports whether sql names a table of the domain.
func mentionsTable(sql string) bool {
	for _, table := range accountTables {
		if strings.Contains(sql, table) {
			return true
		}
	}
	return false
}

// explain returns the plan of sql with args under plan_cache_mode mode,
// as a prepared statement's EXPLAIN EXECUTE, in a transaction it rolls
// back.
func explain(ctx context.Context, conn *pgx.Conn, mode, name, sql string, args []any) (string, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, "PREPARE "+name+" AS "+sql); err != nil {
		return "", err
	}
	// A prepared statement outlives the transaction.
	defer conn.Exec(ctx, "DEALLOCATE "+name)
	lits := make([]string, len(args))
	for i, a := range args {
		if lits[i], err = literal(a); err != nil {
			return "", err
		}
	}
	q := "EXPLAIN EXECUTE " + name
	if len(args) > 0 {
		q += "(" + strings.Join(lits, ", ") + ")"
	}
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	return strings.Join(lines, "\n"), nil
}

// literal returns a statement argument as an SQL literal (EXECUTE takes
// no parameters of its own).
func literal(a any) (string, error) {
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	switch v := a.(type) {
	case nil:
		return "NULL", nil
	case string:
		return quote(v), nil
	case []byte:
		if v == nil {
			return "NULL", nil
		}
		return fmt.Sprintf("'\\x%x'::bytea", v), nil
	case int, int64:
		return fmt.Sprint(v), nil
	case bool:
		return fmt.Sprint(v), nil
	case *bool:
		if v == nil {
			return "NULL", nil
		}
		return fmt.Sprint(*v), nil
	case pgtype.Int8:
		if !v.Valid {
			return "NULL", nil
		}
		return fmt.Sprint(v.Int64), nil
	case []string:
		if v == nil {
			return "NULL", nil
		}
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = quote(s)
		}
		return "ARRAY[" + strings.Join(q, ", ") + "]::text[]", nil
	}
	return "", fmt.Errorf("literal: teach the test the type %T", a)
}

// TestAccountsRoundTrips: with a warm statement cache, BEGIN goes with a
// transaction's first statement and COMMIT is one round trip with the
// queued writes; a login's writes (PutUser of a new user, PutSession,
// PutDevice) cost one round trip besides COMMIT, and GET /session's
// SessionExists one. It logs what it measured (go test -v).
func TestAccountsRoundTrips(t *testing.T) {
	t.Parallel()
	tr := openTraced(t)
	ctx := context.Background()
	measure := func(name string, view bool, fn func(tx store.Tx, i int) error) int64 {
		t.Helper()
		run := tr.db.Update
		if view {
			run = tr.db.View
		}
		var trips []int64
		for i := range 3 { // the first run prepares the statements
			before := tr.trips.Load()
			if err := run(ctx, func(tx store.Tx) error { return fn(tx, i) }); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			trips = append(trips, tr.trips.Load()-before)
		}
		t.Logf("%-40s round trips: %d cold (statements prepared), then %d, %d", name, trips[0], trips[1], trips[2])
		return trips[2]
	}
	now := time.Now()
	// Replicas (rep-sync): a transaction begins at its first statement
	// (lazy.go), so an empty one costs nothing; BEGIN and COMMIT are
	// measured as a transaction of one read, less the read.
	oneRead := func(tx store.Tx, _ int) error { _, err := tx.AdminTokenHash(); return err }
	empty := measure("Update of one read (BEGIN, read, COMMIT)", false, oneRead) - 1
	emptyView := measure("View of one read (BEGIN, read, COMMIT)", true, oneRead) - 1
	login := func(tx store.Tx, i int) error {
		uid := fmt.Sprint("user-", i)
		if err := tx.PutUser(&store.User{ID: uid, ProjectID: "p", Email: uid + "@example.com", CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		if err := tx.PutSession(&store.Session{ID: fmt.Sprint("session-", i), UserID: uid, ProjectID: "p", Method: "otp",
			IssuedAt: now, ExpiresAt: now.Add(time.Hour), IP: "192.0.2.1", UserAgent: "curl/8"}); err != nil {
			return err
		}
		return tx.PutDevice(&store.Device{Key: []byte(fmt.Sprint("device-", i)), Hash: []byte{1}, UserID: uid, ProjectID: "p", CreatedAt: now})
	}
	// PutUser answers a conflict, so it is a round trip of its own (with
	// BEGIN); the feed's row for the user (feed.go), the session and the
	// device are queued writes that go with COMMIT (txn.later).
	if got := measure("login writes (PutUser, PutSession, PutDevice)", false, login) - empty; got != 1 {
		t.Errorf("a login's writes take %d round trips besides COMMIT, want 1", got)
	}
	exists := func(tx store.Tx, _ int) error {
		ok, err := tx.SessionExists("session-0")
		if err == nil && !ok {
			err = errors.New("session-0 does not exist")
		}
		return err
	}
	if got := measure("GET /session: SessionExists", true, exists) - emptyView; got != 1 {
		t.Errorf("SessionExists takes %d round trips, want 1", got)
	}
	t.Logf("BEGIN and COMMIT take %d round trips in an Update, %d in a View", empty, emptyView)
}
