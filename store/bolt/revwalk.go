package bolt

import (
	"bytes"
	"container/heap"

	"go.etcd.io/bbolt"
)

// revWalk walks several key ranges of one bucket together, newest first.
// Every key of a range is the range's prefix followed by a 16-byte
// EventPos; the walk yields keys in descending position order across the
// ranges (a k-way merge), starting below a bound. Each range costs one
// seek to start and one cursor step per key it yields. Keys and values
// are valid only as long as the transaction.
type revWalk []*revRange

type revRange struct {
	c      *bbolt.Cursor
	prefix []byte
	k, v   []byte // the range's current key and value; k nil when done
}

// newRevWalk starts a walk over the ranges of b named by prefixes, at the
// newest key below before (a 16-byte position; nil: from the newest).
func newRevWalk(b *bbolt.Bucket, prefixes [][]byte, before []byte) *revWalk {
	w := make(revWalk, 0, len(prefixes))
	for _, p := range prefixes {
		r := &revRange{c: b.Cursor(), prefix: p}
		var k, v []byte
		if before != nil {
			k, v = r.c.Seek(append(append(make([]byte, 0, len(p)+16), p...), before...))
		} else if end := prefixEnd(p); end != nil {
			k, v = r.c.Seek(end)
		}
		if k == nil {
			k, v = r.c.Last()
		} else {
			k, v = r.c.Prev()
		}
		if r.set(k, v) {
			w = append(w, r)
		}
	}
	heap.Init(&w)
	return &w
}

// set makes (k, v) the range's current entry, or ends the range when k
// is outside it; it reports whether the range goes on.
func (r *revRange) set(k, v []byte) bool {
	if k == nil || len(k) != len(r.prefix)+16 || !bytes.HasPrefix(k, r.prefix) {
		r.k, r.v = nil, nil
		return false
	}
	r.k, r.v = k, v
	return true
}

// peek returns the newest key not yet yielded, or nil when none is left.
func (w *revWalk) peek() []byte {
	if len(*w) == 0 {
		return nil
	}
	return (*w)[0].k
}

// next yields the newest key not yet yielded and its value; k is nil when
// every range is done.
func (w *revWalk) next() (k, v []byte) {
	if len(*w) == 0 {
		return nil, nil
	}
	r := (*w)[0]
	k, v = r.k, r.v
	if r.set(r.c.Prev()) {
		heap.Fix(w, 0)
	} else {
		heap.Pop(w)
	}
	return k, v
}

// The heap interface: the range with the newest current key on top.
func (w revWalk) Len() int { return len(w) }
func (w revWalk) Less(i, j int) bool {
	a, b := w[i].k, w[j].k
	return bytes.Compare(a[len(a)-16:], b[len(b)-16:]) > 0
}
func (w revWalk) Swap(i, j int) { w[i], w[j] = w[j], w[i] }
func (w *revWalk) Push(x any)   { *w = append(*w, x.(*revRange)) }
func (w *revWalk) Pop() any {
	old := *w
	r := old[len(old)-1]
	*w = old[:len(old)-1]
	return r
}

// prefixEnd returns the first key after every key that starts with p, or
// nil when there is none (p empty or all 0xff).
func prefixEnd(p []byte) []byte {
	end := clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
