package store

import (
	"bytes"
	"encoding/binary"
	"sort"
	"time"
)

// Hourly counters (bucketEventCounts), written in the transaction of each
// event they count:
//
//	scope 0x00 hour(4) kind   → events of that outcome in that hour
//	scope 0x00 ff ff ff ff    → events the scope keeps (for the cap)
//
// scope is a project id, "" for events without one, or allScope for the
// sum over every project; hour is Unix hours, big-endian; kind as in the
// index. A chart of 24 hours reads at most 24 × (number of kinds) rows.
//
// Suppressed failures (bucketEventSuppressed), added by AddSuppressed:
//
//	scope 0x00 hour(4) method 0x00 action 0x00 kind → failures not stored
const allScope = "*"

// noHour is the hour field of a scope's total: after every real hour.
const noHour = 0xffffffff

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

func (tx *Tx) addCount(k []byte, d int64) error {
	b := tx.bucket(bucketEventCounts)
	b.FillPercent = appendFill
	_, err := addTo(b, k, d)
	return err
}

// addTotal adds d to how many events scope keeps and returns the result.
func (tx *Tx) addTotal(scope string, d int64) (uint64, error) {
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
func (tx *Tx) totals() []scopeTotal {
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

// HourCount is how many events of one outcome happened in one hour.
type HourCount struct {
	Hour        time.Time
	Success     bool
	FailureCode string
	N           int64
}

// HourlyCounts returns the hourly counters of projectID ("" for the sum
// over all projects) for the hours from from to to, both included, oldest
// first. Failure counters include suppressed failures (AddSuppressed).
func (tx *Tx) HourlyCounts(projectID string, from, to time.Time) ([]HourCount, error) {
	scope := projectID
	if scope == "" {
		scope = allScope
	}
	var out []HourCount
	start, end := scopeHour(scope, hourOf(from)), scopeHour(scope, hourOf(to)+1)
	c := tx.bucket(bucketEventCounts).Cursor()
	for k, v := c.Seek(start); k != nil && bytes.Compare(k, end) < 0; k, v = c.Next() {
		hc := HourCount{Hour: hourTime(binary.BigEndian.Uint32(k[len(scope)+1:])), N: int64(getU64(v))}
		kind := string(k[len(scope)+5:])
		if kind == successKind {
			hc.Success = true
		} else {
			hc.FailureCode = kind
		}
		out = append(out, hc)
	}
	return out, nil
}

// SuppressedCount is how many failures of one kind in one hour were
// counted but not stored as events. ProjectID is empty for failures that
// name no project.
type SuppressedCount struct {
	Hour        time.Time
	ProjectID   string
	Method      string
	Action      string
	FailureCode string
	N           int64
}

func suppressedKey(c *SuppressedCount) []byte {
	k := scopeHour(c.ProjectID, hourOf(c.Hour))
	return append(k, compound(c.Method, c.Action, c.FailureCode)...)
}

// AddSuppressed adds c.N to its suppressed counter, and to the hourly
// failure counters of its project and of all projects (so a chart of
// failures counts them).
func (tx *Tx) AddSuppressed(c SuppressedCount) error {
	if c.N <= 0 {
		return nil
	}
	for _, s := range []string{c.ProjectID, c.Method, c.Action, c.FailureCode} {
		if bytes.IndexByte([]byte(s), 0) >= 0 {
			return ErrBadEventField
		}
	}
	b := tx.bucket(bucketEventSuppressed)
	b.FillPercent = appendFill
	if _, err := addTo(b, suppressedKey(&c), c.N); err != nil {
		return err
	}
	kind := outcomeKind(false, c.FailureCode)
	hour := hourOf(c.Hour)
	if err := tx.addCount(countKey(c.ProjectID, hour, kind), c.N); err != nil {
		return err
	}
	return tx.addCount(countKey(allScope, hour, kind), c.N)
}

// SuppressedCounts returns suppressed counters for the hours from from to
// to, both included, newest hour first: projectID's, or with projectID
// empty every project's and those of no project; only failureCode's when
// it is set. It reads at most limit counters.
func (tx *Tx) SuppressedCounts(projectID, failureCode string, from, to time.Time, limit int) ([]SuppressedCount, error) {
	b := tx.bucket(bucketEventSuppressed)
	var scopes []string
	if projectID != "" {
		scopes = []string{projectID}
	} else {
		c := b.Cursor()
		for k, _ := c.First(); k != nil; {
			i := bytes.IndexByte(k, 0)
			if i < 0 {
				break
			}
			scopes = append(scopes, string(k[:i]))
			k, _ = c.Seek(prefixEnd(k[:i+1]))
		}
	}
	var out []SuppressedCount
	read := 0
	c := b.Cursor()
	for _, scope := range scopes {
		start, end := scopeHour(scope, hourOf(from)), scopeHour(scope, hourOf(to)+1)
		for k, v := c.Seek(start); k != nil && bytes.Compare(k, end) < 0 && read < limit; k, v = c.Next() {
			read++
			parts := bytes.Split(k[len(scope)+5:], []byte{0})
			if len(parts) != 3 || (failureCode != "" && string(parts[2]) != failureCode) {
				continue
			}
			out = append(out, SuppressedCount{Hour: hourTime(binary.BigEndian.Uint32(k[len(scope)+1:])), ProjectID: scope,
				Method: string(parts[0]), Action: string(parts[1]), FailureCode: string(parts[2]), N: int64(getU64(v))})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Hour.After(out[j].Hour) })
	return out, nil
}

// SweepEventCounts deletes up to max hourly and suppressed counters of
// hours before cutoff, and returns how many it deleted. Per scope it
// seeks to the scope's oldest hour and walks only what it deletes.
func (tx *Tx) SweepEventCounts(cutoff time.Time, max int) (int, error) {
	n := 0
	for _, name := range [][]byte{bucketEventCounts, bucketEventSuppressed} {
		c := tx.bucket(name).Cursor()
		for k, _ := c.First(); k != nil && n < max; {
			i := bytes.IndexByte(k, 0)
			if i < 0 || len(k) < i+5 {
				break
			}
			end := scopeHour(string(k[:i]), hourOf(cutoff))
			for ; k != nil && n < max && bytes.HasPrefix(k, end[:i+1]) && bytes.Compare(k, end) < 0; k, _ = c.Seek(end[:i+1]) {
				if err := c.Delete(); err != nil {
					return n, err
				}
				n++
			}
			k, _ = c.Seek(prefixEnd(end[:i+1]))
		}
	}
	return n, nil
}
