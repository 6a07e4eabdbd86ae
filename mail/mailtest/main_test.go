package mailtest

import (
	"os"
	"testing"

	"latchkey/internal/testkit"
)

// The package's tests open no store: they run on the first pass of the
// test command only (testkit.MainEngineFree).
func TestMain(m *testing.M) { os.Exit(testkit.MainEngineFree(m)) }
