package bolt

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"net/netip"
	"time"

	"latchkey/store"
)

// posKey is the 16-byte big-endian key of p: the events bucket's key, and
// the suffix of every index key.
func posKey(p store.EventPos) []byte {
	k := make([]byte, 16)
	binary.BigEndian.PutUint64(k, uint64(p.Nanos))
	binary.BigEndian.PutUint64(k[8:], p.Seq)
	return k
}

// posOf reads the position in the last 16 bytes of k.
func posOf(k []byte) store.EventPos {
	k = k[len(k)-16:]
	return store.EventPos{Nanos: int64(binary.BigEndian.Uint64(k)), Seq: binary.BigEndian.Uint64(k[8:])}
}

// eventFormat is the first byte of an event record in the compact
// encoding. Records written before it are JSON objects (first byte '{');
// both decode.
const eventFormat = 2

// Field tags of the compact encoding for ids and addresses.
const (
	tagEmpty  = 0
	tagString = 1 // uvarint length, bytes
	tagUUID   = 2 // 16 bytes: a canonical lowercase UUID string
	tagIPv4   = 4 // 4 bytes: an address whose canonical form is the string
	tagIPv6   = 6 // 16 bytes
)

// encodeAuthEvent encodes e without its time (the key holds it): a format
// byte, then id, project id and user id (16 bytes when a UUID), email,
// method, action, a success flag, failure code, IP (4 or 16 bytes when in
// canonical form) and user agent, strings as uvarint length and bytes.
// About 100 bytes plus the email and user agent, against about 330 plus
// them as JSON.
func encodeAuthEvent(e *store.AuthEvent) []byte {
	b := make([]byte, 0, 80+len(e.Email)+len(e.Method)+len(e.Action)+len(e.FailureCode)+len(e.UserAgent))
	b = append(b, eventFormat)
	b = appendID(b, e.ID)
	b = appendID(b, e.ProjectID)
	b = appendID(b, e.UserID)
	b = appendString(b, e.Email)
	b = appendString(b, e.Method)
	b = appendString(b, e.Action)
	var flags byte
	if e.Success {
		flags = 1
	}
	b = append(b, flags)
	b = appendString(b, e.FailureCode)
	b = appendIP(b, e.IP)
	return appendString(b, e.UserAgent)
}

// decodeAuthEvent decodes the record v stored at key k (either encoding).
func decodeAuthEvent(k, v []byte) (*store.AuthEvent, error) {
	e := &store.AuthEvent{Pos: posOf(k)}
	if len(v) > 0 && v[0] == '{' {
		if err := json.Unmarshal(v, e); err != nil {
			return nil, err
		}
		return e, nil
	}
	if len(v) == 0 || v[0] != eventFormat {
		return nil, errBadEvent
	}
	d := decoder{b: v[1:]}
	e.ID = d.id()
	e.ProjectID = d.id()
	e.UserID = d.id()
	e.Email = d.string()
	e.Method = d.string()
	e.Action = d.string()
	e.Success = d.byte()&1 == 1
	e.FailureCode = d.string()
	e.IP = d.ip()
	e.UserAgent = d.string()
	if d.bad {
		return nil, errBadEvent
	}
	e.CreatedAt = time.Unix(0, e.Pos.Nanos).UTC()
	return e, nil
}

// eventHead decodes only what the indexes need: the project id and the
// outcome (success, failure code).
func eventHead(v []byte) (projectID, kind string, err error) {
	if len(v) > 0 && v[0] == '{' {
		var e store.AuthEvent
		if err := json.Unmarshal(v, &e); err != nil {
			return "", "", err
		}
		return e.ProjectID, eventKind(&e), nil
	}
	if len(v) == 0 || v[0] != eventFormat {
		return "", "", errBadEvent
	}
	d := decoder{b: v[1:]}
	d.id()
	projectID = d.id()
	d.id()
	d.string()
	d.string()
	d.string()
	success := d.byte()&1 == 1
	failure := d.string()
	if d.bad {
		return "", "", errBadEvent
	}
	return projectID, outcomeKind(success, failure), nil
}

var errBadEvent = errors.New("store: malformed event record")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendID(b []byte, s string) []byte {
	if s == "" {
		return append(b, tagEmpty)
	}
	if u, ok := parseUUID(s); ok {
		return append(append(b, tagUUID), u[:]...)
	}
	return appendString(append(b, tagString), s)
}

func appendIP(b []byte, s string) []byte {
	if s == "" {
		return append(b, tagEmpty)
	}
	if a, err := netip.ParseAddr(s); err == nil && a.String() == s {
		if a.Is4() {
			v := a.As4()
			return append(append(b, tagIPv4), v[:]...)
		}
		if a.Zone() == "" {
			v := a.As16()
			return append(append(b, tagIPv6), v[:]...)
		}
	}
	return appendString(append(b, tagString), s)
}

// parseUUID reads a canonical lowercase UUID (8-4-4-4-12 hex digits),
// the only form that encodes to 16 bytes, so decoding gives back the same
// string.
func parseUUID(s string) (u [16]byte, ok bool) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	j := 0
	for i := 0; i < 36; {
		if s[i] == '-' {
			i++
			continue
		}
		hi, lo := unhex(s[i]), unhex(s[i+1])
		if hi < 0 || lo < 0 {
			return u, false
		}
		u[j] = byte(hi<<4 | lo)
		j++
		i += 2
	}
	return u, true
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

func formatUUID(u []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// decoder reads the compact encoding; a short or malformed record sets
// bad and yields zero values.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes(n int) []byte {
	if n < 0 || len(d.b) < n {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n, w := binary.Uvarint(d.b)
	if w <= 0 || n > uint64(len(d.b)) {
		d.bad = true
		return ""
	}
	d.b = d.b[w:]
	return string(d.bytes(int(n)))
}

func (d *decoder) id() string {
	switch d.byte() {
	case tagEmpty:
		return ""
	case tagUUID:
		if v := d.bytes(16); v != nil {
			return formatUUID(v)
		}
	case tagString:
		return d.string()
	default:
		d.bad = true
	}
	return ""
}

func (d *decoder) ip() string {
	switch d.byte() {
	case tagEmpty:
		return ""
	case tagIPv4:
		if v := d.bytes(4); v != nil {
			return netip.AddrFrom4([4]byte(v)).String()
		}
	case tagIPv6:
		if v := d.bytes(16); v != nil {
			return netip.AddrFrom16([16]byte(v)).String()
		}
	case tagString:
		return d.string()
	default:
		d.bad = true
	}
	return ""
}
