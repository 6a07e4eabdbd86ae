package bolt_test

import (
	"testing"

	"latchkey/store/storetest"
)

// TestConformance runs the store contract (package storetest's suites)
// on bbolt data files, whatever LATCHKEY_TEST_STORE says: it runs on the
// bolt pass, and store/postgres runs the same suites on the postgres
// pass.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Suite{New: storetest.NewFile}.Run(t)
}
