package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"
)

// The hot records (users, sessions and their refresh tokens, codes, send
// histories, devices, outbox events and queued mail) are stored in a compact binary encoding:
// a format byte, then the fields in a fixed order, without names. Ids
// that are canonical UUIDs take 16 bytes, times 8 (Unix nanoseconds; 0
// for the zero time), strings and byte strings a uvarint length and their
// bytes. Records written before it are JSON objects (first byte '{'):
// every decoder reads both, and a row is rewritten in the new encoding the
// next time it changes. A field added later goes at the end of its record
// and is read only when present. As JSON the field names made up half of a session
// row.
const recordFormat = 1

// errBadRecord is returned for a stored value that is neither encoding.
var errBadRecord = errors.New("store: malformed record")

// isJSON reports whether a stored value is a JSON object (written before
// the compact encoding).
func isJSON(v []byte) bool { return len(v) > 0 && v[0] == '{' }

// decodeRecord decodes v into the JSON form j when v is JSON, or checks
// its format byte and returns a decoder for the rest; exactly one of
// done and d is set when err is nil.
func decodeRecord(v []byte, j any) (done bool, d *decoder, err error) {
	if isJSON(v) {
		return true, nil, json.Unmarshal(v, j)
	}
	if len(v) == 0 || v[0] != recordFormat {
		return false, nil, errBadRecord
	}
	return false, &decoder{b: v[1:]}, nil
}

// appendTime appends t as 8 bytes of Unix nanoseconds (0 for the zero
// time), a fixed size so that setting a time later does not grow the row.
func appendTime(b []byte, t time.Time) []byte {
	var n int64
	if !t.IsZero() {
		n = t.UnixNano()
	}
	return binary.BigEndian.AppendUint64(b, uint64(n))
}

// appendBlob appends a byte string as a uvarint length and its bytes.
func appendBlob(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// time reads a time written by appendTime, in UTC.
func (d *decoder) time() time.Time {
	v := d.bytes(8)
	if v == nil {
		return time.Time{}
	}
	n := int64(binary.BigEndian.Uint64(v))
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// blob reads a byte string written by appendBlob, copied out of the
// page (a []byte from bbolt lives only as long as its transaction).
func (d *decoder) blob() []byte {
	n, w := binary.Uvarint(d.b)
	if w <= 0 || n > uint64(len(d.b)) {
		d.bad = true
		return nil
	}
	d.b = d.b[w:]
	v := d.bytes(int(n))
	if v == nil {
		return nil
	}
	return append([]byte{}, v...)
}

// uvarint reads an unsigned varint.
func (d *decoder) uvarint() uint64 {
	n, w := binary.Uvarint(d.b)
	if w <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[w:]
	return n
}

// done reports an error when the record was short or malformed. Bytes
// left over are allowed: a field added later goes at the end, and its
// decoder reads it only when present.
func (d *decoder) done() error {
	if d.bad {
		return errBadRecord
	}
	return nil
}
