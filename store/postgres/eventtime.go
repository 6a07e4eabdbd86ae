package postgres

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// Times of the webhook, outbox, mail and event tables are Unix
// nanoseconds in bigint columns (see migrations/0004_events.sql): NULL
// for the zero time, except in the queues' next-attempt columns, which
// are part of a key or a due query and hold attemptZero for it. (An
// expiry column is written with dueNanos, expiry.go.)

// attemptZero is what a next-attempt column holds for the zero time: the
// earliest instant, so a job or message without a time is due at once,
// and reads back as the zero time.
const attemptZero = math.MinInt64

// nanosOf returns t in Unix nanoseconds, held within int64's range
// (UnixNano is undefined outside 1678-2262).
func nanosOf(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64+1)):
		return math.MinInt64 + 1
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// nullNanos is the value of a nullable time column: nil for the zero
// time.
func nullNanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	n := nanosOf(t)
	return &n
}

// nullNanosPtr is the value of a column of an optional time: nil for
// nil, attemptZero for a pointer to the zero time (nanosOf never
// returns it).
func nullNanosPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	n := attemptNanos(*t)
	return &n
}

// timePtrOf reads a column written by nullNanosPtr.
func timePtrOf(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := attemptTime(*n)
	return &t
}

// timeOfNull reads a nullable time column, in UTC.
func timeOfNull(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// attemptNanos is the value of a next-attempt column: attemptZero for
// the zero time.
func attemptNanos(t time.Time) int64 {
	if t.IsZero() {
		return attemptZero
	}
	return nanosOf(t)
}

// attemptTime reads a next-attempt column, in UTC.
func attemptTime(n int64) time.Time {
	if n == attemptZero {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// seqArg converts a sequence number for a bigint column. Sequences never
// pass int64's range; a larger value is an error.
func seqArg(seq uint64) (int64, error) {
	if seq > math.MaxInt64 {
		return 0, fmt.Errorf("postgres: sequence number %d out of range", seq)
	}
	return int64(seq), nil
}

// storable reports whether every s can be a text value: PostgreSQL's
// text holds neither NUL bytes nor invalid UTF-8. A lookup by a key that
// is not storable finds nothing without asking the database (bbolt
// answers not found for it too).
func storable(s ...string) bool {
	for _, v := range s {
		if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
			return false
		}
	}
	return true
}

// nonNil returns b, or an empty slice for nil (NOT NULL bytea columns).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
