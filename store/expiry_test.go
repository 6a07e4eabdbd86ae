package store_test

// Expiring rows and their sweep, on every backend.

import (
	"fmt"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// mustTx runs fn in a write transaction and fails t on its error.
func mustTx(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.Update(ctx, fn); err != nil {
		t.Fatal(err)
	}
}

// sweepAll sweeps kind at now in transactions of at most max rows and
// returns the sizes of the transactions that deleted something.
func sweepAll(t *testing.T, db store.DB, kind store.Expiring, now time.Time, max int) []int {
	t.Helper()
	var sizes []int
	for {
		var n int
		mustTx(t, db, func(tx store.Tx) (err error) { n, err = tx.SweepExpired(kind, now, max); return })
		if n == 0 {
			return sizes
		}
		sizes = append(sizes, n)
	}
}

// expiring returns how many rows of kind are stored.
func expiring(t *testing.T, db store.DB, kind store.Expiring) int {
	t.Helper()
	var n int
	if err := db.View(ctx, func(tx store.Tx) (err error) { n, err = tx.ExpiringCount(kind); return err }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestExpiryKinds: every expiring kind is swept at its due time, not a
// nanosecond before, through its index (ExpiryDue agrees), and a row
// rewritten with a later expiry moves in the index.
func TestExpiryKinds(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	cases := []struct {
		kind store.Expiring
		due  time.Time
		put  func(tx store.Tx, at time.Time) error // stores the row, due at at
		live func(tx store.Tx) bool
	}{
		{store.ExpiringSessions, t0.Add(time.Hour), func(tx store.Tx, at time.Time) error {
			return tx.PutSession(&store.Session{ID: "s1", UserID: "u1", ProjectID: "p", IssuedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { return must(tx.SessionExists("s1")) && len(must(tx.UserSessions("u1"))) == 1 }},
		{store.ExpiringCodes, t0.Add(10 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutCode(&store.Code{Kind: "otp", ProjectID: "p", Subject: "a@example.com", Hash: []byte{1}, CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.Code("otp", "p", "a@example.com"); return err == nil }},
		{store.ExpiringCodes, t0.Add(2 * time.Hour), func(tx store.Tx, at time.Time) error {
			// A send history: due store.ThrottleIdle after its newest send.
			return tx.PutThrottle("otp", "p", "b@example.com", &store.Throttle{Sends: []time.Time{t0, at.Add(-store.ThrottleIdle)}})
		}, func(tx store.Tx) bool { th, _ := tx.Throttle("otp", "p", "b@example.com"); return len(th.Sends) == 2 }},
		{store.ExpiringCodes, t0.Add(25 * time.Hour), func(tx store.Tx, at time.Time) error {
			// A failure history kept past its newest entry.
			return tx.PutThrottle("email_fail", "p", "c@example.com", &store.Throttle{Sends: []time.Time{t0}, KeepUntil: at.Add(-store.ThrottleIdle)})
		}, func(tx store.Tx) bool {
			th, _ := tx.Throttle("email_fail", "p", "c@example.com")
			return len(th.Sends) == 1
		}},
		{store.ExpiringMagicLinks, t0.Add(15 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutMagicLink(&store.MagicLink{Hash: []byte("h1"), ProjectID: "p", Email: "a@example.com", CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.MagicLink([]byte("h1")); return err == nil }},
		{store.ExpiringChallenges, t0.Add(5 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutChallenge(&store.Challenge{ID: "c1", ProjectID: "p", Kind: "login", Session: []byte(`{}`), ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.Challenge("c1"); return err == nil }},
		{store.ExpiringGrants, t0.Add(5 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutGrant(&store.Grant{Hash: []byte("g1"), ProjectID: "p", ExternalUserID: "x", CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.Grant([]byte("g1")); return err == nil }},
		{store.ExpiringDevices, t0.Add(store.DeviceLifetime + 3*day), func(tx store.Tx, at time.Time) error {
			// Last used three days after it was created.
			return tx.PutDevice(&store.Device{Key: []byte("dev1"), Hash: []byte{1}, UserID: "u1", ProjectID: "p", CreatedAt: t0, LastUsedAt: at.Add(-store.DeviceLifetime)})
		}, func(tx store.Tx) bool { _, err := tx.Device([]byte("dev1")); return err == nil }},
		{store.ExpiringDeliveries, t0.Add(store.DeliveryLifetime), func(tx store.Tx, at time.Time) error {
			return tx.AddDelivery(&store.Delivery{ID: "d1", WebhookID: "w1", EventID: "evt_1", Attempt: 1, Status: "succeeded", CreatedAt: at.Add(-store.DeliveryLifetime)})
		}, func(tx store.Tx) bool { ds, _ := tx.Deliveries("w1", 10); return len(ds) == 1 }},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.kind, "/", c.due.Sub(t0)), func(t *testing.T) {
			db := storetest.Open(t)
			// First due a day earlier, then rewritten: the index follows.
			mustTx(t, db, func(tx store.Tx) error { return c.put(tx, c.due.Add(-day)) })
			if c.kind != store.ExpiringDeliveries { // a delivery record is never rewritten
				mustTx(t, db, func(tx store.Tx) error { return c.put(tx, c.due) })
			} else {
				sweepAll(t, db, c.kind, c.due.Add(-day), 1000)
				mustTx(t, db, func(tx store.Tx) error { return c.put(tx, c.due) })
			}
			if n := expiring(t, db, c.kind); n != 1 {
				t.Fatalf("%d rows, want 1", n)
			}
			before := c.due.Add(-time.Nanosecond)
			db.View(ctx, func(tx store.Tx) error {
				if must(tx.ExpiryDue(c.kind, before)) || !must(tx.ExpiryDue(c.kind, c.due)) {
					t.Fatalf("ExpiryDue(before)=%v, ExpiryDue(due)=%v", must(tx.ExpiryDue(c.kind, before)), must(tx.ExpiryDue(c.kind, c.due)))
				}
				return nil
			})
			if got := sweepAll(t, db, c.kind, before, 1000); len(got) != 0 {
				t.Fatalf("swept %v a nanosecond early", got)
			}
			db.View(ctx, func(tx store.Tx) error {
				if !c.live(tx) {
					t.Fatal("row gone before its time")
				}
				return nil
			})
			if got := sweepAll(t, db, c.kind, c.due, 1000); len(got) != 1 || got[0] != 1 {
				t.Fatalf("swept %v at its time, want [1]", got)
			}
			db.View(ctx, func(tx store.Tx) error {
				if c.live(tx) {
					t.Fatal("row still there after the sweep")
				}
				return nil
			})
			if n := expiring(t, db, c.kind); n != 0 {
				t.Fatalf("%d rows left", n)
			}
		})
	}
}

// TestSweepExpiredBounded: 2,500 due sessions go in transactions of at
// most 1,000, oldest first; the sessions not yet due stay, with their
// users' index entries.
func TestSweepExpiredBounded(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	mustTx(t, db, func(tx store.Tx) error {
		for i := range 3000 {
			s := &store.Session{ID: fmt.Sprintf("s%05d", i), UserID: fmt.Sprint("u", i%7), ProjectID: "p", IssuedAt: t0,
				ExpiresAt: t0.Add(time.Duration(i) * time.Second)}
			if err := tx.PutSession(s); err != nil {
				return err
			}
		}
		return nil
	})
	now := t0.Add(2499 * time.Second)
	var first int
	mustTx(t, db, func(tx store.Tx) (err error) { first, err = tx.SweepExpired(store.ExpiringSessions, now, 1000); return })
	db.View(ctx, func(tx store.Tx) error {
		if first != 1000 || must(tx.SessionExists("s00999")) || !must(tx.SessionExists("s01000")) {
			t.Fatalf("first transaction deleted %d, not the oldest 1,000", first)
		}
		return nil
	})
	if got := sweepAll(t, db, store.ExpiringSessions, now, 1000); fmt.Sprint(got) != "[1000 500]" {
		t.Fatalf("transactions deleted %v, want [1000 500]", got)
	}
	if n := expiring(t, db, store.ExpiringSessions); n != 500 {
		t.Fatalf("%d sessions left, want 500", n)
	}
	db.View(ctx, func(tx store.Tx) error {
		n := 0
		for u := range 7 {
			n += len(must(tx.UserSessions(fmt.Sprint("u", u))))
		}
		if n != 500 {
			t.Fatalf("%d sessions under their users, want 500", n)
		}
		return nil
	})
}

// TestTouchSessionGrace: a session never touched is not written for a
// use within grace of its sign-in; later uses are, and never move back.
func TestTouchSessionGrace(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	mustTx(t, db, func(tx store.Tx) error {
		return tx.PutSession(&store.Session{ID: "s", UserID: "u", ProjectID: "p", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)})
	})
	seen := func() time.Time {
		var s *store.Session
		db.View(ctx, func(tx store.Tx) (err error) { s, err = tx.Session("s"); return })
		return s.LastSeenAt
	}
	for _, c := range []struct {
		at   time.Duration
		want time.Duration // -1: never written
	}{{30 * time.Second, -1}, {time.Minute, time.Minute}, {70 * time.Second, 70 * time.Second}, {65 * time.Second, 70 * time.Second}} {
		mustTx(t, db, func(tx store.Tx) error { return tx.TouchSession("s", t0.Add(c.at), time.Minute) })
		want := time.Time{}
		if c.want >= 0 {
			want = t0.Add(c.want)
		}
		if got := seen(); !got.Equal(want) {
			t.Fatalf("after a use at +%v: LastSeenAt %v, want %v", c.at, got, want)
		}
	}
}
