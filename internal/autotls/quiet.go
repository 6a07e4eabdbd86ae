package autotls

import (
	"log/slog"
	"sync"
	"time"
)

// quietLog logs one kind of failure at most once a minute, with how many
// were left out since the last line: a CA that is down, or a stream of
// bad handshakes, would otherwise fill the log.
type quietLog struct {
	log *slog.Logger
	now func() time.Time
	msg string

	mu         sync.Mutex
	last       time.Time // of the last line; zero: none yet
	suppressed int
}

// quietEvery is the least time between two lines of one quietLog.
const quietEvery = time.Minute

// warn logs msg with args unless a line went out less than a minute ago;
// then it only counts the failure. It reports whether it logged.
func (q *quietLog) warn(args ...any) bool {
	q.mu.Lock()
	now := q.now()
	if !q.last.IsZero() && now.Sub(q.last) < quietEvery {
		q.suppressed++
		q.mu.Unlock()
		return false
	}
	n := q.suppressed
	q.last, q.suppressed = now, 0
	q.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	q.log.Warn(q.msg, args...)
	return true
}
