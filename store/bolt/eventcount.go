package bolt

import (
	"bytes"
	"encoding/binary"
	"strings"
	"time"

	"latchkey/store"
)

// Hourly counters (bucketEventCounts), written in the transaction of each
// event they count:
//
//	scope 0x00 hour(4) kind   → events of that outcome in that hour
//	scope 0x00 ff ff ff ff    → events the scope keeps (for the cap)
//
// scope is a project id, "" for events without one, or allScope for the
// sum over every project; hour is Unix hours, big-endian; kind as in the
// index, or suppressedKind for the failures of the hour that were counted
// but not stored (also counted in their category). A chart of 24 hours
// reads at most 24 × (number of kinds) rows.
//
// Suppressed failures (bucketEventSuppressed), added by AddSuppressed, hour
// first so that a window of hours over every project is one range, newest
// first:
//
//	hour(4) scope 0x00 method 0x00 action 0x00 kind → failures not stored
const allScope = "*"

// noHour is the hour field of a scope's total: after every real hour.
const noHour = 0xffffffff

// suppressedKind is the counter kind of an hour's suppressed failures.
const suppressedKind = "~"

func hourOf(t time.Time) uint32 { return uint32(t.Unix() / 3600) }

func hourTime(h uint32) time.Time { return time.Unix(int64(h)*3600, 0).UTC() }

func scopeHour(scope string, hour uint32) []byte {
	k := make([]byte, 0, len(scope)+5)
	k = append(k, scope...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint32(k, hour)
}

func countKey(scope string, hour uint32, kind string) []byte {
	return append(scopeHour(scope, hour), kind...)
}

func totalKey(scope string) []byte { return scopeHour(scope, noHour) }

func getU64(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// addTo adds d to the counter at k of b (never below zero) and returns
// the new value; a counter that reaches zero is deleted.
func addTo(b interface {
	Get([]byte) []byte
	Put([]byte, []byte) error
	Delete([]byte) error
}, k []byte, d int64) (uint64, error) {
	n := int64(getU64(b.Get(k))) + d
	if n <= 0 {
		return 0, b.Delete(k)
	}
	return uint64(n), b.Put(k, u64(uint64(n)))
}

func (tx txn) addCount(k []byte, d int64) error {
	b := tx.bucket(bucketEventCounts)
	b.FillPercent = appendFill
	_, err := addTo(b, k, d)
	return err
}

// addTotal adds d to how many events scope keeps and returns the result.
func (tx txn) addTotal(scope string, d int64) (uint64, error) {
	b := tx.bucket(bucketEventCounts)
	if d == 0 {
		return getU64(b.Get(totalKey(scope))), nil
	}
	b.FillPercent = appendFill
	return addTo(b, totalKey(scope), d)
}

type scopeTotal struct {
	scope string
	n     uint64
}

// totals returns every scope's kept-event count, one seek per scope.
func (tx txn) totals() []scopeTotal {
	var out []scopeTotal
	b := tx.bucket(bucketEventCounts)
	c := b.Cursor()
	for k, _ := c.First(); k != nil; {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			break
		}
		scope := string(k[:i])
		if n := getU64(b.Get(totalKey(scope))); n > 0 {
			out = append(out, scopeTotal{scope, n})
		}
		k, _ = c.Seek(prefixEnd(k[:i+1]))
	}
	return out
}

// HourlyCounts returns the hourly counters of projectID ("" for the sum
// over all projects) for the hours from from to to, both included, oldest
// first. Failure counters include suppressed failures (AddSuppressed).
func (tx txn) HourlyCounts(projectID string, from, to time.Time) ([]store.HourCount, error) {
	scope := projectID
	if scope == "" {
		scope = allScope
	}
	var out []store.HourCount
	start, end := scopeHour(scope, hourOf(from)), scopeHour(scope, hourOf(to)+1)
	c := tx.bucket(bucketEventCounts).Cursor()
	for k, v := c.Seek(start); k != nil && bytes.Compare(k, end) < 0; k, v = c.Next() {
		hc := store.HourCount{Hour: hourTime(binary.BigEndian.Uint32(k[len(scope)+1:])), N: int64(getU64(v))}
		switch kind := string(k[len(scope)+5:]); kind {
		case successKind:
			hc.Success = true
		case suppressedKind:
			hc.Suppressed = true
		default:
			hc.FailureCode = kind
		}
		out = append(out, hc)
	}
	return out, nil
}

func suppressedKey(c *store.SuppressedCount) []byte {
	k := binary.BigEndian.AppendUint32(nil, hourOf(c.Hour))
	return append(k, compound(c.ProjectID, c.Method, c.Action, c.FailureCode)...)
}

// AddSuppressed adds c.N to its suppressed counter, and to the hourly
// counters of its project and of all projects: its failure category's
// (so a chart of failures counts it) and the hour's suppressed total.
func (tx txn) AddSuppressed(c store.SuppressedCount) error {
	if c.N <= 0 {
		return nil
	}
	for _, s := range []string{c.ProjectID, c.Method, c.Action, c.FailureCode} {
		if strings.IndexByte(s, 0) >= 0 {
			return store.ErrBadEventField
		}
	}
	b := tx.bucket(bucketEventSuppressed)
	b.FillPercent = appendFill
	if _, err := addTo(b, suppressedKey(&c), c.N); err != nil {
		return err
	}
	hour := hourOf(c.Hour)
	for _, scope := range []string{c.ProjectID, allScope} {
		for _, kind := range []string{outcomeKind(false, c.FailureCode), suppressedKind} {
			if err := tx.addCount(countKey(scope, hour, kind), c.N); err != nil {
				return err
			}
		}
	}
	return nil
}

// SuppressedCounts returns suppressed counters for the hours from from to
// to, both included, newest hour first: projectID's, or with projectID
// empty every project's and those of no project; only failureCode's when
// it is set. It reads at most limit counters, so a long busy window keeps
// its newest hours. Every project: one range; one project: one seek per
// hour of the window.
func (tx txn) SuppressedCounts(projectID, failureCode string, from, to time.Time, limit int) ([]store.SuppressedCount, error) {
	c := tx.bucket(bucketEventSuppressed).Cursor()
	lo, hi := hourOf(from), hourOf(to)
	var out []store.SuppressedCount
	read := 0
	add := func(k, v []byte) {
		read++
		parts := bytes.Split(k[4:], []byte{0})
		if len(parts) != 4 || (failureCode != "" && string(parts[3]) != failureCode) {
			return
		}
		out = append(out, store.SuppressedCount{Hour: hourTime(binary.BigEndian.Uint32(k)), ProjectID: string(parts[0]),
			Method: string(parts[1]), Action: string(parts[2]), FailureCode: string(parts[3]), N: int64(getU64(v))})
	}
	if projectID == "" {
		end := binary.BigEndian.AppendUint32(nil, hi+1)
		k, v := c.Seek(end)
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && read < limit && len(k) > 4 && binary.BigEndian.Uint32(k) >= lo; k, v = c.Prev() {
			add(k, v)
		}
		return out, nil
	}
	for h := hi; h >= lo && read < limit; h-- {
		p := append(binary.BigEndian.AppendUint32(nil, h), compound(projectID, "")...)
		for k, v := c.Seek(p); k != nil && read < limit && bytes.HasPrefix(k, p); k, v = c.Next() {
			add(k, v)
		}
		if h == 0 {
			break
		}
	}
	return out, nil
}

// SweepEventCounts deletes up to max hourly and suppressed counters of
// hours before cutoff, and returns how many it deleted. It walks only what
// it deletes: the suppressed counters from the oldest hour, the hourly ones
// from each scope's oldest hour.
func (tx txn) SweepEventCounts(cutoff time.Time, max int) (int, error) {
	n := 0
	end := binary.BigEndian.AppendUint32(nil, hourOf(cutoff))
	sc := tx.bucket(bucketEventSuppressed).Cursor()
	for k, _ := sc.First(); k != nil && n < max && bytes.Compare(k, end) < 0; k, _ = sc.First() {
		if err := sc.Delete(); err != nil {
			return n, err
		}
		n++
	}
	c := tx.bucket(bucketEventCounts).Cursor()
	for k, _ := c.First(); k != nil && n < max; {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			break
		}
		scope := clone(k[:i+1])
		end := scopeHour(string(k[:i]), hourOf(cutoff))
		for ; k != nil && n < max && bytes.HasPrefix(k, scope) && bytes.Compare(k, end) < 0; k, _ = c.Seek(scope) {
			if err := c.Delete(); err != nil {
				return n, err
			}
			n++
		}
		k, _ = c.Seek(prefixEnd(end[:i+1]))
	}
	return n, nil
}

// EventSweepDue reports which of SweepAuthEvents, SweepEventCounts and
// TrimAuthEvents would delete anything, with a few seeks (one per scope):
// the sweep checks it in a read transaction so that an idle sweep writes
// nothing.
func (tx txn) EventSweepDue(cutoff time.Time) (events, counters, overCap bool, err error) {
	if k, _ := tx.bucket(bucketEvents).Cursor().First(); k != nil && bytes.Compare(k, posKey(store.PosBefore(cutoff))) < 0 {
		events = true
	}
	if k, _ := tx.bucket(bucketEventSuppressed).Cursor().First(); k != nil && len(k) >= 4 && binary.BigEndian.Uint32(k) < hourOf(cutoff) {
		counters = true
	}
	c := tx.bucket(bucketEventCounts).Cursor()
	for k, _ := c.First(); k != nil && !counters; {
		i := bytes.IndexByte(k, 0)
		if i < 0 || len(k) < i+5 {
			break
		}
		counters = binary.BigEndian.Uint32(k[i+1:]) < hourOf(cutoff)
		k, _ = c.Seek(prefixEnd(k[:i+1]))
	}
	limit := uint64(tx.maxEvents())
	for _, t := range tx.totals() {
		overCap = overCap || t.n > limit
	}
	return events, counters, overCap, nil
}
