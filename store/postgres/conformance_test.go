package postgres_test

import (
	"testing"

	"latchkey/store/postgres"
	"latchkey/store/storetest"
)

// TestConformance runs the store contract (package storetest's suites)
// on PostgreSQL, each test on a database of its own.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Suite{New: func(t testing.TB) string { return postgres.NewTestDatabase(t, true) }}.Run(t)
}
