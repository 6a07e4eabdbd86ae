package store

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"time"
)

// EventPos is an authentication event's place in time order: its
// creation time in Unix nanoseconds, then a sequence number that keeps
// events of the same instant apart. Pages of events are cut at positions.
type EventPos struct {
	Nanos int64
	Seq   uint64
}

// IsZero reports whether p is the zero position (no position).
func (p EventPos) IsZero() bool { return p == EventPos{} }

// String returns p as 32 hexadecimal digits, the form ParseEventPos reads.
func (p EventPos) String() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], uint64(p.Nanos))
	binary.BigEndian.PutUint64(b[8:], p.Seq)
	return hex.EncodeToString(b[:])
}

// ErrBadPos is returned by ParseEventPos for a string that is not a
// position.
var ErrBadPos = errors.New("not an event position")

// ParseEventPos reads a position written by EventPos.String.
func ParseEventPos(s string) (EventPos, error) {
	if len(s) != 32 {
		return EventPos{}, ErrBadPos
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return EventPos{}, ErrBadPos
	}
	return EventPos{Nanos: int64(binary.BigEndian.Uint64(b)), Seq: binary.BigEndian.Uint64(b[8:])}, nil
}

// PosBefore is the position just before every event created at t or
// later: events older than t sort before it.
func PosBefore(t time.Time) EventPos { return EventPos{Nanos: t.UnixNano()} }
