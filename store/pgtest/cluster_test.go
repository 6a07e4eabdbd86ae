package pgtest

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// TestCluster starts the shared cluster, creates two databases, writes
// to one, and drops both.
func TestCluster(t *testing.T) {
	c, err := Shared()
	if errors.Is(err, ErrNoPostgres) && os.Getenv("LATCHKEY_REQUIRE_POSTGRES") == "" {
		t.Skip("SKIP: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, dropA, err := c.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dropA()
	b, dropB, err := c.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dropB()
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	conn, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if _, err := conn.Exec(ctx, "CREATE TABLE x (n int)"); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "INSERT INTO x VALUES (41) RETURNING n + 1").Scan(&n); err != nil || n != 42 {
		t.Fatalf("got %d, %v; want 42", n, err)
	}
}
