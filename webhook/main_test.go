package webhook_test

import (
	"context"
	"os"
	"testing"

	"latchkey/store/storetest"
)

// The tests run on the store backend LATCHKEY_TEST_STORE names
// (storetest).
func TestMain(m *testing.M) { os.Exit(storetest.RunMain(m)) }

// ctx is the context of the tests' store calls: never cancelled.
var ctx = context.Background()
