package postgres

import (
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// TestTogether: statements of concurrent callers go in one batch, each
// caller gets its own answer, and a statement that fails leaves the
// others' answers (and writes) as they would be alone.
func TestTogether(t *testing.T) {
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
			if err := db.one(bg, `SELECT $1::int + 1`, []any{i}, func(row pgx.Row) error { return row.Scan(&v) }); err != nil || v != i+1 {
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
	if err := db.one(bg, `SELECT 1`, nil, nil); err != store.ErrClosed {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}
