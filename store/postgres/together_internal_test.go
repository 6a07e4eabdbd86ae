package postgres

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// TestTogether: statements of concurrent callers go in one batch, each
// caller gets its own answer, and a statement that fails leaves the
// others' answers (and writes) as they would be alone.
func TestTogether(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	if _, err := db.pool.Exec(bg, `CREATE TABLE together_test (k int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	// A batch built by hand: one statement fails (a duplicate key), the
	// batch is rolled back whole and every other statement runs alone.
	calls := make([]*call, 6)
	got := make([]int, len(calls))
	for i := range calls {
		sql, args := `INSERT INTO together_test (k) VALUES ($1) RETURNING k * 10`, []any{i}
		if i == 3 {
			args = []any{1} // the key of call 1: refused
		}
		calls[i] = &call{sql: sql, args: args, done: make(chan error, 1), scan: func(row pgx.Row) error { return row.Scan(&got[i]) }}
	}
	db.together.send(calls)
	for i, c := range calls {
		err := <-c.done
		switch {
		case i == 3 && (err == nil || !uniqueViolation(err)):
			t.Errorf("call 3: %v, want a unique violation", err)
		case i != 3 && (err != nil || got[i] != i*10):
			t.Errorf("call %d: %d %v, want %d", i, got[i], err, i*10)
		}
	}
	var n int
	if err := db.pool.QueryRow(bg, `SELECT count(*) FROM together_test`).Scan(&n); err != nil || n != 5 {
		t.Fatalf("rows: %d %v, want 5", n, err)
	}
	// Through the sender, from many goroutines.
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v int
			if err := db.one(bg, []byte{byte(i)}, `SELECT $1::int + 1`, []any{i}, func(row pgx.Row) error { return row.Scan(&v) }); err != nil || v != i+1 {
				errs <- fmt.Errorf("call %d: %d %v", i, v, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	db.Close()
	if err := db.one(bg, nil, `SELECT 1`, nil, nil); err != store.ErrClosed {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// Two replicas' velocity batches lock their rows in key order, whatever
// order their statements came in: they never wait for each other in a
// cycle (which PostgreSQL would break only after deadlock_timeout, 1 s).
func TestTogetherAcrossReplicas(t *testing.T) {
	t.Parallel()
	u := replicaDatabase(t)
	a, b := openReplica(t, u, store.Options{}), openReplica(t, u, store.Options{})
	now := time.Now()
	rule := store.VelocityRule{Max: 100, BlockFor: time.Minute, Hold: time.Minute}
	k1, k2 := []byte("k1"), []byte("k2")
	for _, k := range [][]byte{k1, k2} {
		if _, err := a.ReserveVelocity(bg, k, now, rule); err != nil {
			t.Fatal(err)
		}
	}
	lock := func(k []byte) pgx.Tx {
		tx, err := a.pool.Begin(bg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(bg, `SELECT 1 FROM velocity WHERE key = $1 FOR UPDATE`, k); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	calls := func(ks ...[]byte) []*call {
		var cs []*call
		for _, k := range ks {
			cs = append(cs, &call{key: k, sql: releaseSQL, args: []any{k, int64(0)}, done: make(chan error, 1)})
		}
		return cs
	}
	x, y := lock(k1), lock(k2)
	ca, cb := calls(k1, k2), calls(k2, k1)
	fin := make(chan struct{}, 2)
	go func() { a.together.send(ca); fin <- struct{}{} }() // waits for k1 (x)
	go func() { b.together.send(cb); fin <- struct{}{} }() // waits for k2 (y)
	// waiting reports whether n statements wait for a row lock.
	waiting := func(n int) func() bool {
		return func() bool {
			var got int
			err := a.pool.QueryRow(bg, `SELECT count(*) FROM pg_locks WHERE NOT granted`).Scan(&got)
			return err == nil && got >= n
		}
	}
	within(t, 5*time.Second, "both batches waiting", waiting(2))
	x.Rollback(bg) // a's batch runs on
	within(t, 5*time.Second, "a batch waiting again", waiting(1))
	start := time.Now()
	y.Rollback(bg) // b locks k2, waits for k1: held by a
	<-fin
	<-fin
	for i, c := range append(ca, cb...) {
		if err := <-c.done; err != nil {
			t.Errorf("call %d: %v", i, err)
		}
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("two replicas' batches took %v once unblocked: a deadlock broken by deadlock_timeout", d)
	}
}

// An import sends its queued writes (sessions, codes, histories,
// devices) in batches of importBatch, not all at its commit.
func TestImportSendsInBatches(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	imp, err := db.Import(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer imp.Rollback()
	now := time.Now()
	for i := range 20000 {
		if err := imp.Add(&store.Session{ID: fmt.Sprint("s", i), UserID: "u", ProjectID: "p", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if p := imp.(*importer).tx.pending; p != nil && p.Len() > 1000 {
		t.Errorf("%d writes held in memory, unsent", p.Len())
	}
}
