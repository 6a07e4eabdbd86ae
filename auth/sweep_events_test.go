package auth

import (
	"testing"
	"time"

	"latchkey/store"
)

// TestSweepEvents: the minute sweep deletes events and counters older than
// the retention in transactions of at most sweepRows rows (2,500 old
// events: eleven transactions), keeps the younger ones, and writes the
// suppressed counts; with nothing to delete it writes no transaction.
func TestSweepEvents(t *testing.T) {
	t.Parallel()
	s, p, now := newPasskeyService(t)
	start := *now
	err := s.db.Update(ctx, func(tx store.Tx) error {
		for i := range 2500 {
			e := &store.AuthEvent{ProjectID: p.ID, Method: "email_otp", Action: "send", Success: true, CreatedAt: start.Add(time.Duration(i) * time.Millisecond)}
			if err := tx.AddAuthEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	*now = start.Add(EventRetention - time.Hour)
	s.attempt(ctx, p.ID, "magic_link", "verify", Meta{IP: "203.0.113.1"}).reject(ErrInvalidToken) // young, stored
	for range 20 {
		s.attempt(ctx, "", "magic_link", "verify", Meta{IP: "203.0.113.1"}).reject(ErrInvalidToken) // 10 suppressed
	}
	*now = start.Add(EventRetention + time.Hour)
	wrote := commits(t, s)
	if err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	// One for the suppressed counts, eleven for 2,500 events (ten full,
	// then one that finds none left), one for the old counters; nothing
	// else expired.
	if n, ok := wrote(); ok && n != 1+(2500/sweepRows+1)+1 {
		t.Fatalf("the sweep wrote %d transactions, want %d", n, 1+(2500/sweepRows+1)+1)
	}
	evs := storedEvents(t, s)
	if len(evs) != 11 {
		t.Fatalf("%d events left, want the 11 young ones", len(evs))
	}
	page, _ := s.Events(ctx, EventQuery{})
	if n := suppressedTotal(page.Suppressed); n != 10 {
		t.Fatalf("suppressed %d after the flush, want 10", n)
	}
	s.db.View(ctx, func(tx store.Tx) error {
		if n, err := tx.AuthEventCount(p.ID); err != nil || n != 1 {
			t.Fatalf("project keeps %d events by its count, want 1", n)
		}
		if hc, _ := tx.HourlyCounts(p.ID, start.Add(-time.Hour), start.Add(time.Hour)); len(hc) != 0 {
			t.Fatalf("old counters kept: %v", hc)
		}
		return nil
	})
	wrote = commits(t, s)
	if err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n, ok := wrote(); ok && n != 0 {
		t.Fatalf("an idle sweep wrote %d transactions, want none", n)
	}
}
