package testkit

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
)

// EnvStore names the store engine a pass of the test command runs on:
// unset or "bolt" for the first pass (a bbolt data file), "postgres" for
// the second (package store/storetest reads it to open the tests'
// stores).
const EnvStore = "LATCHKEY_TEST_STORE"

// PostgresPass reports whether the tests run on the second pass of the
// test command, the PostgreSQL one (EnvStore is "postgres").
func PostgresPass() bool { return os.Getenv(EnvStore) == "postgres" }

// EngineFree marks a test whose outcome cannot depend on the store
// engine: it runs on the first (bbolt) pass and skips on the PostgreSQL
// pass, saying why, so the test command does not run it twice for
// nothing. why says what the test checks ("lints a file"). Only for a
// test that writes and reads nothing through the store, or whose store
// calls cannot change what it asserts (docs/development.md, "Tests",
// lists the rules); a test that goes through a use case to the store and
// back is not engine-free.
func EngineFree(t testing.TB, why string) {
	t.Helper()
	if PostgresPass() {
		t.Skip(why + ", whatever the store: ran on the bolt pass")
	}
}

// enginePackage is set by MainEngineFree: the package's tests declared
// they open no store.
var enginePackage atomic.Bool

// MainEngineFree runs the tests of a package that opens no store (its
// tests do not import store/storetest), on the first pass only; on the
// PostgreSQL pass it runs none, saying so, and returns 0. A package
// declares it in its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testkit.MainEngineFree(m)) }
//
// store/storetest then fails any test of the package that asks for a
// store (StoreForbidden), so the declaration cannot go stale unseen.
func MainEngineFree(m *testing.M) int {
	if PostgresPass() {
		fmt.Println("engine-free package: its tests open no store and ran on the bolt pass")
		return 0
	}
	enginePackage.Store(true)
	return m.Run()
}

// StoreForbidden reports why a test of this process may not open a
// store: its package declared itself engine-free (MainEngineFree).
// Empty when it may.
func StoreForbidden() string {
	if enginePackage.Load() {
		return "the package's TestMain declares it opens no store (testkit.MainEngineFree): drop that declaration to test with a store"
	}
	return ""
}
