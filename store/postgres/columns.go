package postgres

import (
	"fmt"
	"math"
	"unicode/utf8"
)

// Column values shared by the tables (times are in times.go): the check
// that a string can be a text value at all, sequence numbers, and NOT
// NULL bytea.

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

// storable reports whether every s can be a text value (validText). A
// lookup by a key that is not storable finds nothing without asking the
// database (bbolt answers not found for it too).
func storable(s ...string) bool {
	for _, v := range s {
		if !validText(v) {
			return false
		}
	}
	return true
}

// seqArg converts a sequence number for a bigint column. Sequences never
// pass int64's range; a larger value is an error.
func seqArg(seq uint64) (int64, error) {
	if seq > math.MaxInt64 {
		return 0, fmt.Errorf("postgres: sequence number %d out of range", seq)
	}
	return int64(seq), nil
}

// nonNil returns b, or an empty slice for nil (NOT NULL bytea columns).
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
