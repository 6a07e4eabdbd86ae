package postgres

import (
	"math"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"
)

// Column encodings shared by the tables: times as bigint Unix
// nanoseconds (NULL for the zero time), and the check that a string can
// be a text value at all.

// timeArg is t as a bigint argument: its Unix nanoseconds, NULL for the
// zero time.
func timeArg(t time.Time) pgtype.Int8 {
	if t.IsZero() {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: satNanos(t), Valid: true}
}

// satNanos returns t's Unix nanoseconds, saturated to what a bigint holds
// (times before 1678 or after 2262 keep their order, not their value).
func satNanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64+1)):
		return math.MinInt64 + 1 // math.MinInt64 is zeroPtr
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
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
	return pgtype.Int8{Int64: satNanos(*t), Valid: true}
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

// validText reports whether s can be a text value: PostgreSQL's text
// holds valid UTF-8 without NUL bytes, and refuses anything else with an
// error that aborts the transaction. A lookup by a key that is not valid
// text finds nothing without asking.
func validText(s string) bool { return badTextAt(s) < 0 }

// badTextAt returns the index of the first byte of s that keeps it from
// being a text value (a NUL, or the start of an invalid UTF-8 sequence),
// or -1.
func badTextAt(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c == 0 {
			return i
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// textAfterPrefix returns the least text value greater than every string
// that starts with p (a valid text value), and false when there is none
// (p is all U+10FFFF): the exclusive upper bound of a prefix search.
// UTF-8 keeps code point order in byte order and no encoding is a prefix
// of another, so raising p's last code point bounds the range.
func textAfterPrefix(p string) (string, bool) {
	for p != "" {
		r, n := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-n]
		if r < utf8.MaxRune {
			r++
			if r == 0xD800 { // surrogates are not UTF-8
				r = 0xE000
			}
			return p + string(r), true
		}
	}
	return "", false
}

// scanAll runs a query and scans each row into a new T through the
// destinations dest returns; nil when no row matches.
func scanAll[T any](tx *txn, sql string, args []any, dest func(*T) []any) ([]*T, error) {
	rows, err := tx.query(sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v := new(T)
		if err := rows.Scan(dest(v)...); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, tx.note(unavailable(rows.Err()))
}
