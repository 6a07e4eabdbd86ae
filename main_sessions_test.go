package main

import (
	"bytes"
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/internal/background"
	"latchkey/store"
	"latchkey/store/storetest"
)

// TestLastSeenFlushedAtShutdown: the session check notes a session's
// last request in memory; serve flushes it every minute and once more
// at shutdown, so a clean stop loses none.
func TestLastSeenFlushedAtShutdown(t *testing.T) {
	t.Parallel()
	dsn := storetest.New(t)
	m := NewMain()
	var out bytes.Buffer
	m.Stdout = &out
	args := []string{"--addr", "127.0.0.1:0", "--data", dsn}
	if store.IsURL(dsn) {
		args = []string{"--addr", "127.0.0.1:0", "--database-url", dsn, "--master-key", testMasterKey}
		m.outbox = filepath.Join(t.TempDir(), "outbox")
	}
	if err := m.ParseFlags(args, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	m.Logger = discardLogger()
	var offset atomic.Int64
	m.Now = func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var task *background.Task
	for _, tk := range m.tasks {
		if tk.Name == "last-seen" {
			task = tk
		}
	}
	if task == nil || task.Interval != time.Minute {
		t.Fatalf("last-seen flush task %+v, want one every minute", task)
	}

	key := match(t, keyLine, out.String())
	c := client{t, "http://" + m.Addr()}
	c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "seen@example.com"})
	st, login := c.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "seen@example.com", "code": waitForCode(t, m.outboxDir())})
	if st != 200 {
		t.Fatalf("otp verify: %d %v", st, login)
	}
	offset.Add(int64(10 * time.Minute))
	st, sess := c.do("GET", "/api/v1/session", login["token"].(string), nil)
	if st != 200 {
		t.Fatalf("session: %d %v", st, sess)
	}
	seen := m.Now().Unix()
	id := sess["session"].(map[string]any)["id"].(string)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	db, _, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var row *store.Session
	if err := db.View(ctx, func(tx store.Tx) error {
		row, err = tx.Session(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := row.LastSeenAt.Unix(); got < seen-1 || got > seen {
		t.Fatalf("stored lastSeenAt %s, want %s", row.LastSeenAt, time.Unix(seen, 0).UTC())
	}
	if row.LastSeenAt.Sub(row.IssuedAt) < 9*time.Minute {
		t.Fatalf("lastSeenAt %s is the login time %s: not flushed", row.LastSeenAt, row.IssuedAt)
	}
}
