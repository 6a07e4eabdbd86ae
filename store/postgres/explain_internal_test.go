package postgres

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"latchkey/store"
)

// explainTx runs EXPLAIN for every statement before running it, under a
// custom and a generic plan (pgx prepares statements, so PostgreSQL may
// switch to the generic one), and keeps the plans.
type explainTx struct {
	pgx.Tx
	ctx   context.Context
	plans []explained
}

// explained is a statement with its plans.
type explained struct {
	sql   string
	plans []string
}

func (e *explainTx) explain(sql string, args []any) {
	var plans []string
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := e.Tx.Exec(e.ctx, `SET LOCAL plan_cache_mode = `+mode); err != nil {
			panic(err)
		}
		rows, err := e.Tx.Query(e.ctx, `EXPLAIN `+sql, args...)
		if err != nil {
			panic(fmt.Sprintf("EXPLAIN %s: %v", sql, err))
		}
		var lines []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				panic(err)
			}
			lines = append(lines, l)
		}
		rows.Close()
		plans = append(plans, strings.Join(lines, "\n"))
	}
	e.plans = append(e.plans, explained{sql, plans})
}

func (e *explainTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	e.explain(sql, args)
	return e.Tx.Exec(ctx, sql, args...)
}

func (e *explainTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	e.explain(sql, args)
	return e.Tx.Query(ctx, sql, args...)
}

func (e *explainTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	e.explain(sql, args)
	return e.Tx.QueryRow(ctx, sql, args...)
}

// wholeRead reports whether sql reads table whole by design: a count
// (tests, tools, metrics), or the sweep's read of every scope's kept
// numbers (a few rows per project).
func wholeRead(sql, table string) bool {
	if strings.Contains(sql, "count(*) FROM "+table+")") || strings.HasSuffix(sql, "count(*) FROM "+table) {
		return true
	}
	return table == "event_totals" && (strings.Contains(sql, "FROM event_totals GROUP BY scope") || strings.Contains(sql, "pg_stat_activity"))
}

// TestPlans loads a few thousand rows into every table of this domain,
// runs every method, and fails when a statement's plan reads a table
// whole where it should not (a Seq Scan), under custom and generic plans.
func TestPlans(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := replicaDatabase(t)
	sdb, _, err := Open(ctx, url, store.Options{MaxEventsPerProject: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	db := sdb.(*DB)
	hour := time.Now().Unix() / 3600
	// Rows: 5000 webhooks, 3000 of them with a few jobs and one (w77)
	// with a backlog of 10 000 spread over the table, 9000 deliveries,
	// 20 000 events of 40 projects, their counters, mail and outbox
	// rows.
	if _, err := db.pool.Exec(ctx, strings.ReplaceAll(`
		INSERT INTO webhooks (project_id, id, url, mode) SELECT 'p' || (i % 40), 'w' || i, 'u', 'live' FROM generate_series(1, 5000) i;
		INSERT INTO jobs (webhook_id, next_attempt_at, project_id, event_id, event_type, attempt)
			SELECT CASE WHEN i % 3 = 0 THEN 'w77' ELSE 'w' || (i % 3000) END, i * 1000000000::bigint, 'p', 'e', 't', 1
			FROM generate_series(1, 30000) i;
		INSERT INTO deliveries (webhook_id, id, event_id, event_type, attempt, status, response_status, error, duration_ms, expires_at)
			SELECT 'w' || (i % 300), 'd', 'e', 't', 1, 'ok', 200, '', 1, i * 1000000000::bigint FROM generate_series(1, 9000) i;
		INSERT INTO mail (project_id, recipient, kind, body, attempts, last_error, next_attempt_at)
			SELECT 'p', 'r', 'otp', '', 0, '', i FROM generate_series(1, 5000) i;
		INSERT INTO outbox (id, project_id, type, data) SELECT 'e', 'p', 't', '' FROM generate_series(1, 5000) i;
		INSERT INTO auth_events (nanos, project_id, kind, id, user_id, email, method, action, success, failure_code, ip, user_agent)
			SELECT i * 1000000000::bigint, 'p' || (i % 40), (ARRAY['+', 'expired', 'invalid_code'])[i % 3 + 1], 'e', 'u', '', 'm', 'a', i % 3 = 0, '', '', ''
			FROM generate_series(1, 20000) i;
		INSERT INTO event_totals (scope, shard, n) SELECT 'p' || i, 0, 500 FROM generate_series(0, 1999) i;
		INSERT INTO event_counts (scope, hour, kind, shard, n)
			SELECT 'p' || (i % 40), $1 - i / 40 % 500, (ARRAY['+', 'expired', 'invalid_code'])[i % 3 + 1], i % 7, 1 FROM generate_series(1, 20000) i
			ON CONFLICT DO NOTHING;
		INSERT INTO suppressed_counts (hour, project_id, method, action, failure_code, n)
			SELECT $1 - i / 40, 'p' || (i % 40), 'm', 'a', 'c', 1 FROM generate_series(1, 20000) i;
		ANALYZE`, "$1", fmt.Sprint(hour))); err != nil {
		t.Fatal(err)
	}
	ptx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ptx.Rollback(ctx)
	etx := &explainTx{Tx: ptx, ctx: ctx}
	tx := &txn{ctx: ctx, ptx: etx, db: db}
	now := time.Unix(0, 4000*1e9)
	never := func(uint64) bool { return false }
	steps := []func() error{
		func() error { _, err := tx.Webhook("p1", "w1"); return err },
		func() error { _, err := tx.Webhooks("p1"); return err },
		func() error { return tx.PutWebhook(&store.Webhook{ProjectID: "p1", ID: "w1", Mode: "live"}) },
		func() error { return tx.DeleteWebhook(&store.Webhook{ProjectID: "p1", ID: "w1"}) },
		func() error { return tx.deleteProjectWebhooks("p2") },
		func() error { return tx.EnqueueJob(&store.Job{WebhookID: "w5", NextAttemptAt: now}) },
		func() error {
			_, err := tx.DueJobs(now, 10, "w50", 65, func(h string, n int) int { return min(n, 8) }, never)
			return err
		},
		func() error { // bodies of jobs past the first few, and a backlog in flight
			_, err := tx.DueJobs(now, 10, "w76", 5, func(h string, n int) int { return n }, func(s uint64) bool { return s%3 == 0 && s < 3000 })
			return err
		},
		func() error { _, _, err := tx.NextJobAt(); return err },
		func() error {
			_, err := tx.DeleteJob(&store.Job{WebhookID: "w5", NextAttemptAt: now, Seq: 3})
			return err
		},
		func() error { return tx.AddDelivery(&store.Delivery{WebhookID: "w5", CreatedAt: now}) },
		func() error { _, _, err := tx.DeliveriesBefore("w5", 4000, 10); return err },
		func() error { _, err := tx.ExpiryDue(store.ExpiringDeliveries, now); return err },
		func() error { _, err := tx.SweepExpired(store.ExpiringDeliveries, time.Unix(40, 0), 50); return err },
		func() error { return tx.AppendEvent(&store.Event{ID: "e"}) },
		func() error { _, err := tx.HasEvents(); return err },
		func() error { _, err := tx.EventsAfter(4000, 10); return err },
		func() error { return tx.DeleteEvent(4000) },
		func() error { return tx.EnqueueMail(&store.Mail{}) },
		func() error { _, err := tx.DueMail(time.Unix(0, 100), 10); return err },
		func() error { return tx.PutMail(&store.Mail{ID: 7}) },
		func() error { return tx.DeleteMail(8) },
		func() error { return tx.RecentMail(func(*store.Mail) bool { return false }) },
		func() error {
			return tx.AddAuthEvent(&store.AuthEvent{ProjectID: "p3", Success: true, CreatedAt: now})
		},
		func() error {
			for _, f := range []store.AuthEventFilter{{}, {ProjectID: "p3"}, {ProjectID: "p3", FailureCode: "expired"}, {FailureCode: "expired"}} {
				f.Limit, f.Before = 50, store.EventPos{Nanos: 15000 * 1e9}
				if _, _, err := tx.AuthEvents(f); err != nil {
					return err
				}
			}
			return nil
		},
		func() error { _, err := tx.AuthEventCount("p3"); return err },
		func() error { _, err := tx.SweepAuthEvents(time.Unix(100, 0), 50); return err },
		func() error { _, err := tx.trimScope("p4", 4); return err },
		func() error { _, err := tx.TrimAuthEvents(10); return err },
		func() error {
			_, err := tx.HourlyCounts("p3", time.Unix((hour-24)*3600, 0), time.Unix(hour*3600, 0))
			return err
		},
		func() error {
			return tx.AddSuppressed(store.SuppressedCount{Hour: now, ProjectID: "p3", Method: "m", Action: "a", FailureCode: "c", N: 1})
		},
		func() error {
			from, to := time.Unix((hour-24)*3600, 0), time.Unix(hour*3600, 0)
			if _, err := tx.SuppressedCounts("", "", from, to, 100); err != nil {
				return err
			}
			_, err := tx.SuppressedCounts("p3", "", from, to, 100)
			return err
		},
		func() error { _, err := tx.SweepEventCounts(time.Unix((hour-400)*3600, 0), 50); return err },
		func() error { _, _, _, err := tx.EventSweepDue(time.Unix((hour-400)*3600, 0)); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	ours := regexp.MustCompile(`Seq Scan on (webhooks|jobs|deliveries|outbox|mail|auth_events|event_counts|event_totals|suppressed_counts)\b`)
	for _, e := range etx.plans {
		for _, plan := range e.plans {
			for _, m := range ours.FindAllStringSubmatch(plan, -1) {
				if !wholeRead(e.sql, m[1]) {
					t.Errorf("%s in the plan of\n%s\n%s", m[0], e.sql, plan)
				}
			}
			// A bitmap scan reads a webhook's whole due backlog.
			if strings.Contains(e.sql, "FROM jobs") && strings.Contains(plan, "Bitmap Heap Scan on jobs") && !strings.Contains(e.sql, "DELETE") {
				t.Errorf("a bitmap scan of jobs in the plan of\n%s\n%s", e.sql, plan)
			}
		}
	}
	if testing.Verbose() {
		for _, e := range etx.plans {
			t.Logf("%s\n%s", strings.Join(strings.Fields(e.sql), " "), e.plans[1])
		}
	}
}
