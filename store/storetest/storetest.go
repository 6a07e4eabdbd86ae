// Package storetest gives tests a store on the backend they are asked to
// run on, holds the store contract as tests (Suite: one suite per
// aggregate of store.Tx, which every engine's package runs on its own
// stores), holds records of every kind a move carries with the
// comparison of what a store exports with them (Fixture, Records,
// SameRecords), for the tests of latchkey copy and of backups on every
// backend, and fills stores with many rows for benchmarks (Load).
//
// The environment variable LATCHKEY_TEST_STORE picks the backend: "bolt"
// (the default) is a data file in the test's temporary directory,
// reopened and checked (store.File.Check) when the test ends; "postgres"
// is a fresh database on the throwaway cluster of package pgtest,
// dropped when the test ends. Without PostgreSQL server binaries the
// postgres tests are skipped, unless LATCHKEY_REQUIRE_POSTGRES is set.
//
// A package whose tests open stores declares
//
//	func TestMain(m *testing.M) { os.Exit(storetest.RunMain(m)) }
//
// so that the cluster, when one was started, stops with the tests.
package storetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/store"
	_ "latchkey/store/bolt" // its "bolt" driver: the data files
	"latchkey/store/pgtest"
	"latchkey/store/postgres" // and its "postgres" driver
)

// EnvStore names the backend the tests run on.
const EnvStore = testkit.EnvStore

// EnvRequirePostgres, when set, makes a missing PostgreSQL a failure
// rather than a skip (CI).
const EnvRequirePostgres = "LATCHKEY_REQUIRE_POSTGRES"

// The backends.
const (
	Bolt     = "bolt"
	Postgres = "postgres"
)

// Backend returns the backend EnvStore names: Bolt (the default) or
// Postgres. Another value fails the test.
func Backend(t testing.TB) string {
	t.Helper()
	switch b := os.Getenv(EnvStore); b {
	case "", Bolt:
		return Bolt
	case Postgres:
		return Postgres
	default:
		t.Fatalf("%s=%q: want %q or %q", EnvStore, b, Bolt, Postgres)
		return ""
	}
}

// BoltOnly skips t on the postgres pass: it tests what only a bbolt data
// file does, or opens one whatever EnvStore says, and the bolt pass (the
// default backend) ran it already; running it twice would only cost
// time.
func BoltOnly(t testing.TB) {
	t.Helper()
	if Backend(t) == Postgres {
		t.Skip("uses a bbolt data file whatever " + EnvStore + " says: ran on the bolt pass")
	}
}

// Open returns a new, empty store on the backend EnvStore names, closed
// when the test ends (see New for what else happens then).
func Open(t testing.TB) store.DB {
	t.Helper()
	return OpenWith(t, store.Options{})
}

// OpenWith is Open with options.
func OpenWith(t testing.TB, opt store.Options) store.DB {
	t.Helper()
	dsn := New(t)
	db, _, err := store.Open(context.Background(), dsn, opt)
	if err != nil {
		t.Fatalf("open %s store: %v", Backend(t), err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// New returns where a new, empty store is, without opening it: the path
// of a data file in t.TempDir() (not created yet), or the URL of a new
// database. Tests that close and reopen their store (a restart) open it
// with store.Open. When the test ends, a data file is reopened and
// checked (its store must be closed by then: register its Close after
// calling New), a database dropped.
func New(t testing.TB) string {
	t.Helper()
	forbidden(t)
	if Backend(t) == Postgres {
		return newDatabase(t)
	}
	return NewFile(t)
}

// NewFile returns the path of a new bbolt data file in t.TempDir() (not
// created yet), whatever EnvStore says; when the test ends the file is
// reopened and checked (CheckFile). Its store must be closed by then:
// register its Close after calling NewFile.
func NewFile(t testing.TB) string {
	t.Helper()
	forbidden(t)
	path := filepath.Join(t.TempDir(), "latchkey.db")
	t.Cleanup(func() { CheckFile(t, path) })
	return path
}

// CheckFile reopens the data file at path, when there is one, and fails
// the test unless its pages and expiry indexes are consistent.
func CheckFile(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return
	}
	db, _, err := store.Open(context.Background(), path, store.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Errorf("reopen %s to check it: %v", path, err)
		return
	}
	defer db.Close()
	if err := db.(store.File).Check(); err != nil {
		t.Errorf("data file inconsistent after the test: %v", err)
	}
}

// forbidden fails t when its package declared it opens no store
// (testkit.MainEngineFree): that package's tests skip the PostgreSQL
// pass, so a store opened there would be tested on one engine only.
func forbidden(t testing.TB) {
	t.Helper()
	if why := testkit.StoreForbidden(); why != "" {
		t.Fatal(why)
	}
}

// NewEmpty is New for a test of what a first start finds: on PostgreSQL
// an empty database, without latchkey's schema (New's has the schema
// already); on bbolt the same as New.
func NewEmpty(t testing.TB) string {
	t.Helper()
	if Backend(t) == Postgres {
		return newDatabaseFrom(t, false)
	}
	return New(t)
}

// newDatabase creates a database with latchkey's schema on the shared
// cluster, dropped when the test ends, and returns its URL.
func newDatabase(t testing.TB) string {
	t.Helper()
	return newDatabaseFrom(t, true)
}

// newDatabaseFrom creates a database on the shared cluster, a copy of
// the migrated template when migrated, else empty; dropped when the test
// ends.
func newDatabaseFrom(t testing.TB, migrated bool) string {
	t.Helper()
	c, err := pgtest.Shared()
	if errors.Is(err, pgtest.ErrNoPostgres) && os.Getenv(EnvRequirePostgres) == "" {
		t.Skip("SKIP: " + err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tmpl := ""
	if migrated {
		if tmpl, err = c.Template(migrate); err != nil {
			t.Fatal(err)
		}
	}
	url, drop, err := c.NewDatabaseFrom(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	return url
}

// migrate brings the database at url to latchkey's whole schema: the
// template (pgtest.Cluster.Template) every test's database copies, so a
// test's database costs a copy, not every migration. A copy has the full
// schema and no rows, as a database that a first store.Open migrated
// (store.Open then reports it not created: tests of a first start use
// NewEmpty).
func migrate(ctx context.Context, url string) error {
	_, _, err := postgres.Migrate(ctx, url, nil)
	return err
}

// RunMain runs a package's tests (m.Run) and then stops the shared
// PostgreSQL cluster if they started one; it returns m.Run's exit code.
func RunMain(m *testing.M) int {
	code := m.Run()
	pgtest.StopShared()
	return code
}
