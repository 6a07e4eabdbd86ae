package postgres

import (
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Times are stored as bigint Unix nanoseconds, NULL for the zero time
// (timestamptz keeps only microseconds). A time read back is in UTC.
// Times outside what int64 nanoseconds count (before 1678, after 2262)
// saturate to the smallest or largest bigint, keeping their order.

// The range of times a bigint of nanoseconds holds.
var (
	firstNano = time.Unix(0, math.MinInt64)
	lastNano  = time.Unix(0, math.MaxInt64)
)

// nanos returns t as the value of a bigint column: its Unix nanoseconds,
// nil (NULL) for the zero time.
func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return unixNano(t)
}

// unixNano returns t's Unix nanoseconds, saturated to the int64 range.
func unixNano(t time.Time) int64 {
	switch {
	case t.Before(firstNano):
		return math.MinInt64
	case t.After(lastNano):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// nanosPtr returns *t as the value of a bigint column, NULL for a nil
// pointer (and for a pointer to the zero time, which reads back as nil).
func nanosPtr(t *time.Time) any {
	if t == nil {
		return nil
	}
	return nanos(*t)
}

// timeOf returns the time a bigint column holds; NULL (nil) is the zero
// time.
func timeOf(n *int64) time.Time {
	if n == nil {
		return time.Time{}
	}
	return time.Unix(0, *n).UTC()
}

// nsTime scans a bigint column of Unix nanoseconds into *t (NULL: the
// zero time).
type nsTime struct{ t *time.Time }

// ScanInt64 implements pgtype.Int64Scanner.
func (s nsTime) ScanInt64(v pgtype.Int8) error {
	if !v.Valid {
		*s.t = time.Time{}
		return nil
	}
	*s.t = timeOf(&v.Int64)
	return nil
}

// ns returns the scan target of a time column stored in *t.
func ns(t *time.Time) nsTime { return nsTime{t} }

// nsTimePtr scans a bigint column of Unix nanoseconds into *p (NULL:
// nil).
type nsTimePtr struct{ p **time.Time }

// ScanInt64 implements pgtype.Int64Scanner.
func (s nsTimePtr) ScanInt64(v pgtype.Int8) error {
	if !v.Valid {
		*s.p = nil
		return nil
	}
	t := timeOf(&v.Int64)
	*s.p = &t
	return nil
}

// nsPtr returns the scan target of an optional time column stored in
// *p.
func nsPtr(p **time.Time) nsTimePtr { return nsTimePtr{p} }

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
		out[i] = timeOf(n)
	}
	return out
}
