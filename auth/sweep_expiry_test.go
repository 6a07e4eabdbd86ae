package auth

import (
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// TestSweepExpiredBounded: the minute sweep deletes expired rows of every
// kind through their expiry indexes in transactions of at most sweepRows
// rows, kinds sharing a transaction while it has room (2,500 expired
// sessions, a code, a send history and a link: eleven transactions),
// keeps what is not yet due, and with nothing due writes nothing.
func TestSweepExpiredBounded(t *testing.T) {
	t.Parallel()
	s, p, now := newPasskeyService(t)
	start := *now
	err := s.db.Update(ctx, func(tx store.Tx) error {
		for i := range 2600 {
			ttl := time.Minute
			if i >= 2500 {
				ttl = 48 * time.Hour // still live at the sweep
			}
			sess := &store.Session{ID: fmt.Sprintf("s%05d", i), UserID: fmt.Sprint("u", i%10), ProjectID: p.ID, IssuedAt: start, ExpiresAt: start.Add(ttl)}
			if err := tx.PutSession(sess); err != nil {
				return err
			}
		}
		if err := tx.PutCode(&store.Code{Kind: codeKindOTP, ProjectID: p.ID, Subject: "a@example.com", CreatedAt: start, ExpiresAt: start.Add(OTPLifetime)}); err != nil {
			return err
		}
		if err := tx.PutThrottle(codeKindOTP, p.ID, "a@example.com", &store.Throttle{Sends: []time.Time{start}}); err != nil {
			return err
		}
		return tx.PutMagicLink(&store.MagicLink{Hash: []byte("h"), ProjectID: p.ID, Email: "a@example.com", CreatedAt: start, ExpiresAt: start.Add(15 * time.Minute)})
	})
	if err != nil {
		t.Fatal(err)
	}
	*now = start.Add(2 * time.Hour)
	wrote := commits(t, s)
	if err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	// 2,503 rows: 11 transactions of at most 250 (the last one takes
	// the code, the history and the link along).
	if n, ok := wrote(); ok && n != (2500+3+sweepRows-1)/sweepRows {
		t.Fatalf("the sweep wrote %d transactions, want %d", n, (2500+3+sweepRows-1)/sweepRows)
	}
	s.db.View(ctx, func(tx store.Tx) error {
		if n, _ := tx.ExpiringCount(store.ExpiringSessions); n != 100 {
			t.Fatalf("%d sessions left, want the 100 live ones", n)
		}
		codes, _ := tx.ExpiringCount(store.ExpiringCodes)
		links, _ := tx.ExpiringCount(store.ExpiringMagicLinks)
		if n := codes + links; n != 0 {
			t.Fatalf("%d codes, histories and links left", n)
		}
		return nil
	})
	wrote = commits(t, s)
	if err := s.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n, ok := wrote(); ok && n != 0 {
		t.Fatalf("an idle sweep wrote %d transactions", n)
	}
}
