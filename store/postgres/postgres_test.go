package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
	"latchkey/store/postgres"
)

// newDatabase returns the URL of a new database with the whole schema,
// dropped at cleanup.
func newDatabase(t *testing.T) string { return postgres.NewTestDatabase(t, true) }

// emptyDatabase returns the URL of a new empty database, dropped at
// cleanup: what a first start finds.
func emptyDatabase(t *testing.T) string { return postgres.NewTestDatabase(t, false) }

// The tests of this package are about PostgreSQL alone (its columns,
// plans, round trips, replicas); the store's contract, which holds on
// every engine, is package storetest's suites (TestConformance).

// t0 has nanoseconds, which timestamptz would lose.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)

// openStore opens a store on a new database and returns it with the
// database's URL; it is closed at cleanup.
func openStore(t *testing.T, opt store.Options) (store.DB, string) {
	t.Helper()
	url := newDatabase(t)
	db, _, err := store.Open(context.Background(), url, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, url
}

// update runs fn in a write transaction and fails t on its error.
func update(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// view runs fn in a read transaction and fails t on its error.
func view(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

func TestOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := emptyDatabase(t)
	db, created, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !created {
		t.Error("created = false on an empty database")
	}
	if err := db.Update(ctx, func(tx store.Tx) error { return tx.SetAdminTokenHash([]byte("h")) }); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db, created, err = store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if created {
		t.Error("created = true on the second open")
	}
	var h []byte
	if err := db.View(ctx, func(tx store.Tx) (err error) { h, err = tx.AdminTokenHash(); return err }); err != nil {
		t.Fatal(err)
	}
	if string(h) != "h" {
		t.Errorf("admin token hash = %q after reopening", h)
	}
}

// TestOpenUpToDateTakesNoLock: opening a database whose schema is up to
// date reads the schema's version and writes nothing: the schema lock's
// row keeps the transaction id of its last locker (xmax), which the first
// open, which migrated, set.
func TestOpenUpToDateTakesNoLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := emptyDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	locker := func() string {
		t.Helper()
		var xmax string
		if err := conn.QueryRow(ctx, `SELECT xmax::text FROM latchkey_lock`).Scan(&xmax); err != nil {
			t.Fatal(err)
		}
		return xmax
	}
	var before string
	for i := range 3 {
		db, _, err := store.Open(ctx, url, store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if i == 0 {
			if before = locker(); before == "0" {
				t.Fatal("the migrating open took no lock")
			}
		} else if got := locker(); got != before {
			t.Fatalf("open %d locked the schema again (xmax %s -> %s): it wrote to an up-to-date database", i+1, before, got)
		}
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := newDatabase(t)
	db, _, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	next := postgres.SchemaVersion() + 1
	if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, 'future')`, next); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	_, _, err = store.Open(ctx, url, store.Options{})
	if err == nil {
		t.Fatal("opened a database with a newer schema")
	}
	for _, want := range []string{"version", "newer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	_, _, err := store.Open(context.Background(), "postgres://latchkey@127.0.0.1:1/latchkey?connect_timeout=2", store.Options{})
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
}

func TestBackupNotSupported(t *testing.T) {
	t.Parallel()
	db, _, err := store.Open(context.Background(), newDatabase(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Backup(context.Background(), nil, nil); !errors.Is(err, store.ErrNotSupported) {
		t.Fatalf("Backup: %v, want ErrNotSupported", err)
	}
}
