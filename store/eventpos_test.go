package store_test

import (
	"testing"

	"latchkey/store"
)

// TestEventPos: a position reads back from its string, which is its
// time and sequence number as 32 hexadecimal digits (the cursor of a
// page of events); anything else is ErrBadPos.
func TestEventPos(t *testing.T) {
	t.Parallel()
	p := store.EventPos{Nanos: t0.UnixNano(), Seq: 42}
	got, err := store.ParseEventPos(p.String())
	if err != nil || got != p {
		t.Fatalf("round trip %v → %q → %v %v", p, p.String(), got, err)
	}
	if s := (store.EventPos{Nanos: 0x0102030405060708, Seq: 0xff}).String(); s != "010203040506070800000000000000ff" {
		t.Errorf("String() = %q", s)
	}
	for _, bad := range []string{"", "zz", p.String()[1:], p.String() + "0", "g" + p.String()[1:]} {
		if _, err := store.ParseEventPos(bad); err != store.ErrBadPos {
			t.Errorf("ParseEventPos(%q) err=%v", bad, err)
		}
	}
}
