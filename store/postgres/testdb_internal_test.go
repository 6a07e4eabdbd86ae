package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

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
		if from, err = c.Template(migrateTest); err != nil {
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

// migrateTest is Migrate for pgtest.Cluster.Template.
func migrateTest(ctx context.Context, u string) error {
	_, _, err := Migrate(ctx, u, nil)
	return err
}
