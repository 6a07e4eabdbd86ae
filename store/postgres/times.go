package postgres

import (
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Times are stored as bigint Unix nanoseconds (timestamptz keeps only
// microseconds), NULL for the zero time; a time read back is in UTC.
// Times outside what int64 nanoseconds count (before 1678, after 2262)
// saturate, keeping their order. Two values are kept apart from every
// time: math.MinInt64, which an optional time's column (timePtrArg) and
// a queue's next-attempt column (attemptNanos) hold for the zero time,
// and, in expiry columns, what dueNanos writes (expiry.go).

// unixNano returns t's Unix nanoseconds, saturated to
// [math.MinInt64+1, math.MaxInt64] (UnixNano is undefined outside).
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64+1)):
		return math.MinInt64 + 1
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// timeArg is t as a bigint argument: its Unix nanoseconds, NULL for the
// zero time.
func timeArg(t time.Time) pgtype.Int8 {
	if t.IsZero() {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: unixNano(t), Valid: true}
}

// timeDest scans a bigint column written with timeArg into *t: NULL is
// the zero time, anything else a time in UTC.
func timeDest(t *time.Time) pgtype.Int64Scanner { return (*timeCol)(t) }

// timeCol is a time.Time scanned from Unix nanoseconds.
type timeCol time.Time

// ScanInt64 implements pgtype.Int64Scanner.
func (c *timeCol) ScanInt64(v pgtype.Int8) error {
	if !v.Valid {
		*c = timeCol{}
		return nil
	}
	*c = timeCol(time.Unix(0, v.Int64).UTC())
	return nil
}

// timeOfNull reads a nullable time column scanned into *int64.
func timeOfNull(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// zeroPtr is the value of an optional time (*time.Time) that points to
// the zero time, which NULL (nil) cannot stand for.
const zeroPtr = math.MinInt64

// timePtrArg is an optional time as a bigint argument: NULL for nil,
// zeroPtr for a pointer to the zero time, else its Unix nanoseconds.
func timePtrArg(t *time.Time) pgtype.Int8 {
	switch {
	case t == nil:
		return pgtype.Int8{}
	case t.IsZero():
		return pgtype.Int8{Int64: zeroPtr, Valid: true}
	}
	return pgtype.Int8{Int64: unixNano(*t), Valid: true}
}

// timePtrDest scans a bigint column written with timePtrArg into *t.
func timePtrDest(t **time.Time) pgtype.Int64Scanner { return timePtrCol{t} }

// timePtrCol is an optional time scanned from Unix nanoseconds.
type timePtrCol struct{ t **time.Time }

// ScanInt64 implements pgtype.Int64Scanner.
func (c timePtrCol) ScanInt64(v pgtype.Int8) error {
	switch {
	case !v.Valid:
		*c.t = nil
	case v.Int64 == zeroPtr:
		*c.t = &time.Time{}
	default:
		t := time.Unix(0, v.Int64).UTC()
		*c.t = &t
	}
	return nil
}

// timePtrOf reads a column written with timePtrArg, scanned into *int64.
func timePtrOf(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := attemptTime(*n)
	return &t
}

// attemptZero is what a queue's next-attempt column (part of a key or a
// due query, so never NULL) holds for the zero time: the earliest
// instant, so a job or message without a time is due at once, and reads
// back as the zero time.
const attemptZero = zeroPtr

// attemptNanos is the value of a next-attempt column: attemptZero for
// the zero time.
func attemptNanos(t time.Time) int64 {
	if t.IsZero() {
		return attemptZero
	}
	return unixNano(t)
}

// attemptTime reads a next-attempt column, in UTC.
func attemptTime(n int64) time.Time {
	if n == attemptZero {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// nanosSlice returns ts as the value of a bigint[] column (NULL elements
// for zero times); nil stays NULL.
func nanosSlice(ts []time.Time) []*int64 {
	if ts == nil {
		return nil
	}
	out := make([]*int64, len(ts))
	for i, t := range ts {
		if !t.IsZero() {
			n := unixNano(t)
			out[i] = &n
		}
	}
	return out
}

// timesOf returns the times a bigint[] column holds; NULL stays nil.
func timesOf(ns []*int64) []time.Time {
	if ns == nil {
		return nil
	}
	out := make([]time.Time, len(ns))
	for i, n := range ns {
		out[i] = timeOfNull(n)
	}
	return out
}
