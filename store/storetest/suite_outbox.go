package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"latchkey/store"
)

// Outbox tests the event outbox (store.Outbox): events come back in
// sequence with every field, their data byte for byte, and go once
// deleted.
func (s Suite) Outbox(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.outboxRoundTrip}})
}

// outboxRoundTrip: sequence numbers grow; events come back in Seq order
// with every field, data byte for byte (not as a JSON column would keep
// it), pages after a Seq; deleted ones go, deleting twice is no error.
func (s Suite) outboxRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	evs := []*store.Event{
		{ID: "evt_1", ProjectID: "p", Type: "user.login", CreatedAt: t0, Data: json.RawMessage(`{"b": 1,  "a":2}`)},
		{ID: "evt_2", Type: "user.created", Data: json.RawMessage{}},
		{ID: "evt_3", ProjectID: "p", Type: "x"},
	}
	view(t, db, func(tx store.Tx) error {
		if yes, err := tx.HasEvents(); yes || err != nil {
			return fmt.Errorf("HasEvents on an empty outbox: %v, %v", yes, err)
		}
		if got, err := tx.EventsAfter(0, 10); len(got) != 0 || err != nil {
			return fmt.Errorf("EventsAfter on an empty outbox: %v, %v", got, err)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		for _, e := range evs {
			if err := tx.AppendEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
	complete(t, evs[0])
	if evs[0].Seq == 0 || evs[1].Seq <= evs[0].Seq || evs[2].Seq <= evs[1].Seq {
		t.Fatalf("seqs %d %d %d", evs[0].Seq, evs[1].Seq, evs[2].Seq)
	}
	view(t, db, func(tx store.Tx) error {
		if yes, err := tx.HasEvents(); !yes || err != nil {
			return fmt.Errorf("HasEvents: %v, %v", yes, err)
		}
		got, err := tx.EventsAfter(0, 10)
		if err != nil {
			return err
		}
		if err := diff("events", got, evs); err != nil {
			return err
		}
		if got, _ := tx.EventsAfter(evs[0].Seq, 1); len(got) != 1 || got[0].ID != "evt_2" {
			return fmt.Errorf("EventsAfter(first, 1) = %v", got)
		}
		if got, _ := tx.EventsAfter(evs[2].Seq, 10); len(got) != 0 {
			return fmt.Errorf("EventsAfter(last) = %v", got)
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		if err := tx.DeleteEvent(evs[1].Seq); err != nil {
			return err
		}
		if err := tx.DeleteEvent(evs[1].Seq); err != nil {
			return fmt.Errorf("deleting a deleted event: %w", err)
		}
		got, err := tx.EventsAfter(0, 10)
		if err == nil && (len(got) != 2 || got[0].ID != "evt_1" || got[1].ID != "evt_3") {
			err = fmt.Errorf("after deleting evt_2: %v", got)
		}
		return err
	})
	update(t, db, func(tx store.Tx) error {
		for _, e := range evs {
			if err := tx.DeleteEvent(e.Seq); err != nil {
				return err
			}
		}
		if yes, _ := tx.HasEvents(); yes {
			return errors.New("events left after deleting them all")
		}
		return nil
	})
	// Sequence numbers are not reused (set by the commit at the latest).
	e := &store.Event{ID: "evt_4", Type: "x"}
	update(t, db, func(tx store.Tx) error { return tx.AppendEvent(e) })
	if e.Seq <= evs[2].Seq {
		t.Fatalf("a new event took Seq %d after %d", e.Seq, evs[2].Seq)
	}
}
