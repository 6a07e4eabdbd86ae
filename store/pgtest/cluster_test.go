package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"latchkey/internal/testkit"
)

// The package's tests start PostgreSQL clusters whatever
// LATCHKEY_TEST_STORE names: they run on the PostgreSQL pass of the test
// command only, as store/postgres's do.
func TestMain(m *testing.M) {
	if !testkit.PostgresPass() {
		fmt.Println("store/pgtest: these tests run on the PostgreSQL pass (LATCHKEY_TEST_STORE=postgres)")
		os.Exit(0)
	}
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

// TestTemplateCopiesRecycled: a copy of the template that a test
// wrote to comes back from the next NewDatabaseFrom empty, its
// sequences restarted; a copy whose schema a test changed is dropped,
// never handed out again.
func TestTemplateCopiesRecycled(t *testing.T) {
	c, err := StartWith(Options{})
	if errors.Is(err, ErrNoPostgres) && os.Getenv("LATCHKEY_REQUIRE_POSTGRES") == "" {
		t.Skip("SKIP: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx := context.Background()
	tmpl, err := c.Template(func(ctx context.Context, u string) error {
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL);
			INSERT INTO schema_migrations VALUES (1, 'one');
			CREATE TABLE rows (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text);
			CREATE TABLE feed (seq bigserial PRIMARY KEY);
			CREATE INDEX rows_v ON rows (v)`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	use := func(u, sql string) (ids []int64) {
		t.Helper()
		conn, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	a, dropA, err := c.NewDatabaseFrom(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	use(a, `INSERT INTO rows (v) VALUES ('x'), ('y') RETURNING id`)
	use(a, `INSERT INTO feed DEFAULT VALUES RETURNING seq`)
	dropA()
	b, dropB, err := c.NewDatabaseFrom(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if b != a {
		t.Fatalf("the second copy is %s, want the recycled %s", b, a)
	}
	if n := use(b, `SELECT count(*) FROM rows`); n[0] != 0 {
		t.Fatalf("a recycled copy holds %d rows, want none", n[0])
	}
	if got := use(b, `INSERT INTO rows (v) VALUES ('z') RETURNING id`); got[0] != 1 {
		t.Fatalf("a recycled copy's identity gave %d, want 1", got[0])
	}
	if got := use(b, `INSERT INTO feed DEFAULT VALUES RETURNING seq`); got[0] != 1 {
		t.Fatalf("a recycled copy's sequence gave %d, want 1", got[0])
	}
	if n := use(b, `SELECT count(*) FROM schema_migrations`); n[0] != 1 {
		t.Fatalf("a recycled copy holds %d migrations, want the template's 1", n[0])
	}
	use(b, `ALTER TABLE rows ADD COLUMN w int`)
	dropB()
	d, dropD, err := c.NewDatabaseFrom(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if d == b {
		t.Fatalf("a copy whose schema changed was handed out again")
	}
	if n := use(c.URL, `SELECT count(*) FROM pg_database WHERE datname = '`+b[strings.LastIndex(b, "/")+1:strings.Index(b, "?")]+`'`); n[0] != 0 {
		t.Fatalf("a copy whose schema changed was not dropped")
	}
	// A copy written to after it was emptied (a late process of its test)
	// is not handed out again.
	dropD()
	use(d, `INSERT INTO rows (v) VALUES ('late') RETURNING id`)
	e, dropE, err := c.NewDatabaseFrom(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	defer dropE()
	if e == d {
		t.Fatal("a copy written to after its cleaning was handed out again")
	}
	if n := use(e, `SELECT count(*) FROM rows`); n[0] != 0 {
		t.Fatalf("a new copy holds %d rows", n[0])
	}
}
