package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"latchkey/store/pgtest"
)

// The package's tests run on the PostgreSQL pass of the test command
// (LATCHKEY_TEST_STORE=postgres) only: they test this engine whatever the
// other packages run on, so running them on the bbolt pass too would only
// run them twice.
func TestMain(m *testing.M) {
	if os.Getenv("LATCHKEY_TEST_STORE") != "postgres" {
		fmt.Println("store/postgres: these tests run on the PostgreSQL pass (LATCHKEY_TEST_STORE=postgres)")
		os.Exit(0)
	}
	code := m.Run()
	pgtest.StopShared()
	os.Exit(code)
}

// NewTestDatabase returns the URL of a new database on the shared cluster,
// dropped at cleanup: with the whole schema (a copy of a database
// migrated once per test process) when migrated, else empty. Without
// PostgreSQL the test is skipped, unless LATCHKEY_REQUIRE_POSTGRES is
// set (CI), where it fails. For this package's tests, internal and
// external.
func NewTestDatabase(t testing.TB, migrated bool) string {
	t.Helper()
	c, err := pgtest.Shared()
	if err != nil {
		if os.Getenv("LATCHKEY_REQUIRE_POSTGRES") == "" && errors.Is(err, pgtest.ErrNoPostgres) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	from := ""
	if migrated {
		if from, err = testTemplate(c); err != nil {
			t.Fatal(err)
		}
	}
	u, drop, err := c.NewDatabaseFrom(context.Background(), from)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return u
}

var template struct {
	mu      sync.Mutex
	cluster *pgtest.Cluster
	url     string
}

// testTemplate returns the URL of c's migrated template database.
func testTemplate(c *pgtest.Cluster) (string, error) {
	template.mu.Lock()
	defer template.mu.Unlock()
	if template.cluster == c {
		return template.url, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, _, err := c.NewDatabase(ctx) // dropped with the cluster
	if err != nil {
		return "", err
	}
	if _, _, err := Migrate(ctx, u, nil); err != nil {
		return "", err
	}
	template.cluster, template.url = c, u
	return u, nil
}
