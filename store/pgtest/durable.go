package pgtest

import (
	"errors"
	"os"
	"testing"
)

// Durable starts a cluster of tb's own with PostgreSQL's durability
// settings on (fsync, synchronous commit, full-page writes) and 128 MB of
// shared buffers, reached through its Unix socket, as benchmarks measure
// it, stopped when tb ends. LATCHKEY_BENCH_TCP=1 reaches it through
// loopback TCP instead. Without PostgreSQL tb is skipped.
func Durable(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := StartWith(Options{Durable: true, SharedBuffers: "128MB", Socket: os.Getenv("LATCHKEY_BENCH_TCP") == ""})
	if errors.Is(err, ErrNoPostgres) {
		tb.Skip(err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Stop() })
	return c
}
