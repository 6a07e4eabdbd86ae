package bolt

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"latchkey/store"
)

// appendFill is the fill percent of buckets whose keys grow at the end
// (of the bucket or of each prefix): pages split nearly full instead of
// half full, which halves their size on disk.
const appendFill = 0.95

// trimPerAdd bounds how many old events one AddAuthEvent deletes to bring
// its project back under the cap (after the cap was lowered, more than
// one may be over); SweepAuthEvents trims the rest.
const trimPerAdd = 4

// How events are laid out. Every event is one row of bucketEvents, keyed by
// its position (time, sequence), plus one key in bucketEventIndex:
//
//	scope 0x00 kind 0x00 position   (empty value)
//
// where scope is the project id ("" for none) and kind is the failure
// category, or "+" for a success. A project's events are the merge of its
// few kinds; one category of every project the merge of one range per
// project; one category of one project a single range. No query scans
// events that do not match. The per-project cap finds a project's oldest
// event as the oldest first key of its kinds.
const successKind = "+"

func outcomeKind(success bool, failureCode string) string {
	switch {
	case success:
		return successKind
	case failureCode == "":
		return "?"
	}
	return failureCode
}

// eventKind is the kind of e's outcome: the counters' and the index's.
func eventKind(e *store.AuthEvent) string { return outcomeKind(e.Success, e.FailureCode) }

func indexPrefix(scope, kind string) []byte { return compound(scope, kind, "") }

// AddAuthEvent records e, with its index entry, its hourly counters (its
// project's and all projects') and its project's event count, in tx. When
// the project is over the cap its oldest events go, a few per call. It
// sets e.Pos.
func (tx txn) AddAuthEvent(e *store.AuthEvent) error {
	kind := eventKind(e)
	if strings.IndexByte(e.ProjectID, 0) >= 0 || strings.IndexByte(kind, 0) >= 0 {
		return store.ErrBadEventField
	}
	events := tx.bucket(bucketEvents)
	seq, err := events.NextSequence()
	if err != nil {
		return err
	}
	e.Pos = store.EventPos{Nanos: e.CreatedAt.UnixNano(), Seq: seq}
	pk := posKey(e.Pos)
	events.FillPercent = appendFill
	if err := events.Put(pk, encodeAuthEvent(e)); err != nil {
		return err
	}
	index := tx.bucket(bucketEventIndex)
	index.FillPercent = appendFill
	if err := index.Put(append(indexPrefix(e.ProjectID, kind), pk...), []byte{}); err != nil {
		return err
	}
	hour := hourOf(e.CreatedAt)
	if err := tx.addCount(countKey(e.ProjectID, hour, kind), 1); err != nil {
		return err
	}
	if err := tx.addCount(countKey(allScope, hour, kind), 1); err != nil {
		return err
	}
	total, err := tx.addTotal(e.ProjectID, 1)
	if err != nil {
		return err
	}
	for i := 0; i < trimPerAdd && total > uint64(tx.maxEvents()); i++ {
		if total, err = tx.deleteOldestEvent(e.ProjectID); err != nil {
			return err
		}
	}
	return nil
}

func (tx txn) maxEvents() int {
	if db := tx.db(); db != nil && db.maxEvents > 0 {
		return db.maxEvents
	}
	return store.DefaultMaxEventsPerProject
}

// kindPrefixes returns the index prefixes of scope's kinds, one seek per
// kind.
func (tx txn) kindPrefixes(scope string) [][]byte {
	var out [][]byte
	base := compound(scope, "")
	c := tx.bucket(bucketEventIndex).Cursor()
	for k, _ := c.Seek(base); k != nil && bytes.HasPrefix(k, base); {
		rest := k[len(base):]
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			break
		}
		p := clone(k[:len(base)+i+1])
		out = append(out, p)
		k, _ = c.Seek(prefixEnd(p))
	}
	return out
}

// indexScopes returns every scope that has indexed events, one seek per
// scope.
func (tx txn) indexScopes() []string {
	var out []string
	c := tx.bucket(bucketEventIndex).Cursor()
	for k, _ := c.First(); k != nil; {
		i := bytes.IndexByte(k, 0)
		if i < 0 {
			break
		}
		out = append(out, string(k[:i]))
		k, _ = c.Seek(prefixEnd(k[:i+1]))
	}
	return out
}

// oldestOverall returns the index key of the oldest event of all when it
// is scope's, and so scope's oldest too (a single project, or the one at
// the cap while the others are quieter): one seek, where finding scope's
// oldest otherwise takes two per outcome kind. Else nil.
func (tx txn) oldestOverall(scope string) []byte {
	k, v := tx.bucket(bucketEvents).Cursor().First()
	if k == nil {
		return nil
	}
	project, kind, err := eventHead(v)
	if err != nil || project != scope {
		return nil
	}
	return append(indexPrefix(scope, kind), k...)
}

// oldestOfScope returns the index key of scope's oldest event, or nil:
// the first key of each of its kinds is that kind's oldest, so one seek
// per kind finds them all.
func (tx txn) oldestOfScope(scope string) []byte {
	var oldest []byte
	base := compound(scope, "")
	c := tx.bucket(bucketEventIndex).Cursor()
	for k, _ := c.Seek(base); k != nil && bytes.HasPrefix(k, base); {
		i := bytes.IndexByte(k[len(base):], 0)
		if i < 0 || len(k) < len(base)+i+1+16 {
			break
		}
		if oldest == nil || bytes.Compare(k[len(k)-16:], oldest[len(oldest)-16:]) < 0 {
			oldest = append(oldest[:0], k...)
		}
		k, _ = c.Seek(prefixEnd(k[:len(base)+i+1]))
	}
	return oldest
}

// deleteOldestEvent deletes scope's oldest event and returns how many the
// scope keeps.
func (tx txn) deleteOldestEvent(scope string) (uint64, error) {
	oldest := tx.oldestOverall(scope)
	if oldest == nil {
		oldest = tx.oldestOfScope(scope)
	}
	if oldest == nil {
		return tx.addTotal(scope, 0)
	}
	if err := tx.bucket(bucketEventIndex).Delete(oldest); err != nil {
		return 0, err
	}
	if err := tx.bucket(bucketEvents).Delete(oldest[len(oldest)-16:]); err != nil {
		return 0, err
	}
	return tx.addTotal(scope, -1)
}

// AuthEvents returns up to f.Limit events matching f, newest first, and
// whether more match after them. It reads only matching events: one index
// range per (project, outcome) it needs, merged.
func (tx txn) AuthEvents(f store.AuthEventFilter) ([]*store.AuthEvent, bool, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	}
	var before []byte
	if !f.Before.IsZero() {
		before = posKey(f.Before)
	}
	events := tx.bucket(bucketEvents)
	var w *revWalk
	indexed := true
	switch {
	case f.ProjectID == "" && f.FailureCode == "":
		w, indexed = newRevWalk(events, [][]byte{nil}, before), false
	case f.ProjectID != "" && f.FailureCode != "":
		w = newRevWalk(tx.bucket(bucketEventIndex), [][]byte{indexPrefix(f.ProjectID, f.FailureCode)}, before)
	case f.ProjectID != "":
		w = newRevWalk(tx.bucket(bucketEventIndex), tx.kindPrefixes(f.ProjectID), before)
	default:
		var prefixes [][]byte
		for _, scope := range tx.indexScopes() {
			prefixes = append(prefixes, indexPrefix(scope, f.FailureCode))
		}
		w = newRevWalk(tx.bucket(bucketEventIndex), prefixes, before)
	}
	out := []*store.AuthEvent{}
	for len(out) < limit {
		k, v := w.next()
		if k == nil {
			break
		}
		pk := k[len(k)-16:]
		if indexed {
			if v = events.Get(pk); v == nil {
				continue // cannot happen: index and rows change together
			}
		}
		e, err := decodeAuthEvent(pk, v)
		if err != nil {
			return nil, false, err
		}
		out = append(out, e)
	}
	return out, w.peek() != nil, nil
}

// SweepAuthEvents deletes up to max events created before cutoff, oldest
// first, with their index entries, and returns how many it deleted; while
// that is max, more may be left for another transaction. It walks only
// the events it deletes.
func (tx txn) SweepAuthEvents(cutoff time.Time, max int) (int, error) {
	events, index := tx.bucket(bucketEvents), tx.bucket(bucketEventIndex)
	end := posKey(store.PosBefore(cutoff))
	removed := map[string]int64{}
	n := 0
	c := events.Cursor()
	for k, v := c.First(); k != nil && n < max && bytes.Compare(k, end) < 0; k, v = c.First() {
		scope, kind, err := eventHead(v)
		if err != nil {
			return n, err
		}
		if err := index.Delete(append(indexPrefix(scope, kind), k...)); err != nil {
			return n, err
		}
		if err := c.Delete(); err != nil {
			return n, err
		}
		removed[scope]--
		n++
	}
	for scope, d := range removed {
		if _, err := tx.addTotal(scope, d); err != nil {
			return n, err
		}
	}
	return n, nil
}

// TrimAuthEvents deletes, oldest first, up to max events of projects that
// hold more than the cap (after the cap was lowered, or from a file that
// predates it) and returns how many it deleted.
func (tx txn) TrimAuthEvents(max int) (int, error) {
	limit := uint64(tx.maxEvents())
	n := 0
	for _, t := range tx.totals() {
		for total := t.n; total > limit && n < max; n++ {
			var err error
			if total, err = tx.deleteOldestEvent(t.scope); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// AuthEventCount returns how many events projectID keeps ("" for the
// events that name no project).
func (tx txn) AuthEventCount(projectID string) (int, error) {
	return int(getU64(tx.bucket(bucketEventCounts).Get(totalKey(projectID)))), nil
}

// checkEvents verifies that every event has exactly its index entry and
// that every scope's kept-event count equals its events (for tests,
// through Check).
func (tx txn) checkEvents() error {
	index := tx.bucket(bucketEventIndex)
	per := map[string]uint64{}
	events := 0
	err := tx.bucket(bucketEvents).ForEach(func(k, v []byte) error {
		scope, kind, err := eventHead(v)
		if err != nil {
			return fmt.Errorf("events: row %x: %w", k, err)
		}
		if index.Get(append(indexPrefix(scope, kind), k...)) == nil {
			return fmt.Errorf("events: row %x of scope %q has no index entry", k, scope)
		}
		per[scope]++
		events++
		return nil
	})
	if err != nil {
		return err
	}
	if n := index.Stats().KeyN; n != events {
		return fmt.Errorf("events: %d index entries for %d events", n, events)
	}
	for scope, c := range per {
		if got, _ := tx.addTotal(scope, 0); got != c {
			return fmt.Errorf("events: scope %q counts %d, holds %d", scope, got, c)
		}
	}
	for _, st := range tx.totals() {
		if per[st.scope] != st.n {
			return fmt.Errorf("events: scope %q counts %d, holds %d", st.scope, st.n, per[st.scope])
		}
	}
	return nil
}
