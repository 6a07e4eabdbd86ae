package bolt

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// WriteFailureLogInterval is how often failing writes are logged: one
// line per interval with their count, not one per failed write.
const WriteFailureLogInterval = time.Minute

// writeHealth follows the outcome of write transactions: whether the
// last one failed, and the log lines about it. Writes that fail and
// succeed by turns (a nearly full disk: a commit that reuses free pages
// succeeds, one that needs new ones fails) still give at most one error
// line per WriteFailureLogInterval and one recovery line after each.
type writeHealth struct {
	failing atomic.Bool // the last write failed and none succeeded since

	mu       sync.Mutex
	lastErr  error
	unlogged int       // failed writes not yet counted in a log line
	loggedAt time.Time // the last error line
	reported bool      // an error line was logged since the last recovery line
	log      *slog.Logger
	now      func() time.Time
}

// failed notes n failed writes with cause err. It logs an error line
// with the count of failed writes since the previous line unless one
// was logged within WriteFailureLogInterval.
func (h *writeHealth) failed(err error, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failing.Store(true)
	h.lastErr = err
	h.unlogged += n
	if now := h.now(); h.loggedAt.IsZero() || now.Sub(h.loggedAt) >= WriteFailureLogInterval {
		h.log.Error("data file writes are failing: requests that write answer 503 SERVICE_UNAVAILABLE, reads still work (is the disk full?)",
			"failed_writes", h.unlogged, "err", err)
		h.loggedAt, h.unlogged, h.reported = now, 0, true
	}
}

// succeeded notes a committed write; after failures it logs that writes
// succeed again (once after each error line). Without failures it costs
// one atomic load.
func (h *writeHealth) succeeded() {
	if !h.failing.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.failing.Load() {
		return
	}
	h.failing.Store(false)
	h.lastErr = nil
	if h.reported {
		h.log.Info("data file writes succeed again", "failed_writes_since_last_line", h.unlogged)
		h.reported, h.unlogged = false, 0
	}
}

// WriteError returns the error of the last write transaction while it
// failed and none has succeeded since, else nil (for readiness probes:
// cheap, never blocks on the writer).
func (db *DB) WriteError() error {
	h := &db.health
	if !h.failing.Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lastErr == nil {
		return nil
	}
	return fmt.Errorf("the last write failed: %w", h.lastErr)
}
