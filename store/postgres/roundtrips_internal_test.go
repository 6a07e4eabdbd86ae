package postgres

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"latchkey/store"
)

// statements counts the statements a pool sends, transaction control
// left out.
type statements struct {
	mu  sync.Mutex
	sql []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	switch strings.ToLower(strings.Fields(data.SQL)[0]) {
	case "begin", "commit", "rollback":
	default:
		s.mu.Lock()
		s.sql = append(s.sql, data.SQL)
		s.mu.Unlock()
	}
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The statements of a batch (txn.later's queued writes) count one by one.
func (s *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (s *statements) TraceBatchQuery(ctx context.Context, c *pgx.Conn, data pgx.TraceBatchQueryData) {
	s.TraceQueryStart(ctx, c, pgx.TraceQueryStartData{SQL: data.SQL})
}

func (s *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// take returns the statements sent since the last call.
func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sql
	s.sql = nil
	return out
}

// TestRoundTrips: a sign-in's writes of this domain (its event with
// its counters, its outbox event, a queued mail) are one statement each,
// and so is the webhook worker's common claim.
func TestRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := replicaDatabase(t)
	sdb, _, err := Open(ctx, url, store.Options{}) // the schema
	if err != nil {
		t.Fatal(err)
	}
	sdb.Close()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	trace := &statements{}
	cfg.ConnConfig.Tracer = trace
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := &DB{pool: pool, log: slog.New(slog.DiscardHandler)}
	defer db.Close()
	now := time.Now()
	count := func(what string, want int, fn func(tx store.Tx) error) {
		t.Helper()
		trace.take()
		if err := db.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
		if got := trace.take(); len(got) != want {
			t.Errorf("%s: %d statements, want %d: %q", what, len(got), want, got)
		}
	}
	event := func() *store.AuthEvent {
		return &store.AuthEvent{ID: "e", ProjectID: "p", Success: true, Method: "email_otp", Action: "verify", CreatedAt: now}
	}
	// The first event of a project reads its kept number (in the same
	// statement); the next ones, far below the cap, do not.
	count("first AddAuthEvent", 1, func(tx store.Tx) error { return tx.AddAuthEvent(event()) })
	count("AddAuthEvent", 1, func(tx store.Tx) error { return tx.AddAuthEvent(event()) })
	// Replicas (rep-sync): a transaction that writes outbox events or
	// queues mail also writes one wake-up row to the invalidation feed
	// for each (feed.go), whatever the number of events or messages.
	count("AppendEvent", 2, func(tx store.Tx) error {
		return tx.AppendEvent(&store.Event{ID: "evt", ProjectID: "p", Type: "user.login"})
	})
	count("AppendEvent twice", 3, func(tx store.Tx) error {
		if err := tx.AppendEvent(&store.Event{ID: "evt", ProjectID: "p", Type: "user.login"}); err != nil {
			return err
		}
		return tx.AppendEvent(&store.Event{ID: "evt", ProjectID: "p", Type: "session.created"})
	})
	count("EnqueueMail", 2, func(tx store.Tx) error { return tx.EnqueueMail(&store.Mail{To: "a@example.com", NextAttemptAt: now}) })
	// A transaction's feed rows go in one statement.
	count("EnqueueMail and AppendEvent", 3, func(tx store.Tx) error {
		if err := tx.EnqueueMail(&store.Mail{To: "a@example.com", NextAttemptAt: now}); err != nil {
			return err
		}
		return tx.AppendEvent(&store.Event{ID: "evt", ProjectID: "p", Type: "user.login"})
	})
	// While this replica's own queue sends mail (it holds the lease
	// firmly: WakeHere), queued mail writes no wake-up row.
	here := true
	db.WakeHere(store.ChangeMail, func() bool { return here })
	count("EnqueueMail, sent here", 1, func(tx store.Tx) error { return tx.EnqueueMail(&store.Mail{To: "a@example.com", NextAttemptAt: now}) })
	count("AppendEvent, mail sent here", 2, func(tx store.Tx) error {
		return tx.AppendEvent(&store.Event{ID: "evt", ProjectID: "p", Type: "user.login"})
	})
	here = false
	count("EnqueueMail, sent elsewhere", 2, func(tx store.Tx) error { return tx.EnqueueMail(&store.Mail{To: "a@example.com", NextAttemptAt: now}) })
	// The lease was released (a shutdown) or ran low while the
	// transaction ran: its commit writes the wake-up after all.
	here = true
	count("EnqueueMail, lease gone before the commit", 2, func(tx store.Tx) error {
		err := tx.EnqueueMail(&store.Mail{To: "a@example.com", NextAttemptAt: now})
		here = false
		return err
	})
	here = true
	db.WakeHere(store.ChangeMail, nil)
	count("EnqueueMail, WakeHere undone", 2, func(tx store.Tx) error { return tx.EnqueueMail(&store.Mail{To: "a@example.com", NextAttemptAt: now}) })
	var wakes int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM changes WHERE kind = $1`, string(store.ChangeMail)).Scan(&wakes); err != nil {
		t.Fatal(err)
	}
	if wakes != 5 {
		t.Errorf("%d wake-up rows for mail, want 5 (none from the message sent here)", wakes)
	}
	count("EnqueueJob", 1, func(tx store.Tx) error { return tx.EnqueueJob(&store.Job{WebhookID: "w", NextAttemptAt: now}) })
	count("DueJobs", 1, func(tx store.Tx) error {
		jobs, err := tx.DueJobs(now, 64, "", 65, func(string, int) int { return 1 }, func(uint64) bool { return false })
		if len(jobs) != 1 {
			t.Errorf("DueJobs: %d jobs", len(jobs))
		}
		return err
	})
}
