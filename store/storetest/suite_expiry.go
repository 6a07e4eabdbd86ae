package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// Expiry tests the sweep of expiring rows (store.Expiry), at injected
// times: every kind is due at its time and not a nanosecond before
// (ExpiryDue agrees), a rewritten row moves, a zero expiry is due at
// once, and a sweep takes at most its maximum, earliest due first.
func (s Suite) Expiry(t *testing.T) {
	parallel(t, []subtest{
		{"Kinds", s.expiryKinds},
		{"Bounded", s.expiryBounded},
	})
}

// sweepAll sweeps kind at now in transactions of at most max rows and
// returns the sizes of the transactions that deleted something.
func sweepAll(t *testing.T, db store.DB, kind store.Expiring, now time.Time, max int) []int {
	t.Helper()
	var sizes []int
	for {
		var n int
		update(t, db, func(tx store.Tx) (err error) { n, err = tx.SweepExpired(kind, now, max); return })
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
	view(t, db, func(tx store.Tx) (err error) { n, err = tx.ExpiringCount(kind); return err })
	return n
}

// expiryKinds: every expiring kind, one after the other on one store
// (each leaves none of its rows): a row due a day earlier, then
// rewritten due at its time, is due then and not a nanosecond before;
// the sweep deletes it then, with what belongs to it. A row whose own
// expiry is the zero time is due at once.
func (s Suite) expiryKinds(t *testing.T) {
	db := s.open(t, store.Options{})
	day := 24 * time.Hour
	cases := []struct {
		kind store.Expiring
		due  time.Time
		put  func(tx store.Tx, at time.Time) error // stores the row, due at at
		live func(tx store.Tx) bool
		// zero: put(tx, time.Time{}) stores the row with the zero time
		// as its expiry.
		zero bool
	}{
		{store.ExpiringSessions, t0.Add(time.Hour), func(tx store.Tx, at time.Time) error {
			return tx.PutSession(&store.Session{ID: "s1", UserID: "u1", ProjectID: "p", IssuedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { return must(tx.SessionExists("s1")) || len(must(tx.UserSessions("u1"))) != 0 }, true},
		{store.ExpiringCodes, t0.Add(10 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutCode(&store.Code{Kind: "otp", ProjectID: "p", Subject: "a@example.com", Hash: []byte{1}, CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.Code("otp", "p", "a@example.com"); return err == nil }, true},
		{store.ExpiringCodes, t0.Add(2 * time.Hour), func(tx store.Tx, at time.Time) error {
			// A send history: due store.ThrottleIdle after its newest send.
			return tx.PutThrottle("otp", "p", "b@example.com", &store.Throttle{Sends: []time.Time{t0, at.Add(-store.ThrottleIdle)}})
		}, func(tx store.Tx) bool { th, _ := tx.Throttle("otp", "p", "b@example.com"); return len(th.Sends) == 2 }, false},
		{store.ExpiringCodes, t0.Add(25 * time.Hour), func(tx store.Tx, at time.Time) error {
			// A failure history kept past its newest entry.
			return tx.PutThrottle("email_fail", "p", "c@example.com", &store.Throttle{Sends: []time.Time{t0}, KeepUntil: at.Add(-store.ThrottleIdle)})
		}, func(tx store.Tx) bool {
			th, _ := tx.Throttle("email_fail", "p", "c@example.com")
			return len(th.Sends) == 1
		}, false},
		{store.ExpiringMagicLinks, t0.Add(15 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutMagicLink(&store.MagicLink{Hash: []byte("h1"), ProjectID: "p", Email: "a@example.com", CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.MagicLink([]byte("h1")); return err == nil }, true},
		{store.ExpiringChallenges, t0.Add(5 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutChallenge(&store.Challenge{ID: "c1", ProjectID: "p", Kind: "login", Session: []byte(`{}`), ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.Challenge("c1"); return err == nil }, true},
		{store.ExpiringOAuthFlows, t0.Add(10 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutOAuthFlow(&store.OAuthFlow{ID: "o1", ProjectID: "p", Kind: store.OAuthFlowState, Payload: []byte(`{}`), ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.OAuthFlow("o1"); return err == nil }, true},
		{store.ExpiringGrants, t0.Add(5 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutGrant(&store.Grant{Hash: []byte("g1"), ProjectID: "p", ExternalUserID: "x", CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.Grant([]byte("g1")); return err == nil }, true},
		{store.ExpiringDevices, t0.Add(store.DeviceLifetime + 3*day), func(tx store.Tx, at time.Time) error {
			// Last used three days after it was created.
			return tx.PutDevice(&store.Device{Key: []byte("dev1"), Hash: []byte{1}, UserID: "u1", ProjectID: "p", CreatedAt: t0, LastUsedAt: at.Add(-store.DeviceLifetime)})
		}, func(tx store.Tx) bool { _, err := tx.Device([]byte("dev1")); return err == nil }, false},
		{store.ExpiringDeliveries, t0.Add(store.DeliveryLifetime), func(tx store.Tx, at time.Time) error {
			return tx.AddDelivery(&store.Delivery{ID: "d1", WebhookID: "w1", EventID: "evt_1", Attempt: 1, Status: "succeeded", CreatedAt: at.Add(-store.DeliveryLifetime)})
		}, func(tx store.Tx) bool { ds, _ := tx.Deliveries("w1", 10); return len(ds) == 1 }, false},
		{store.ExpiringRefreshTokens, t0.Add(7 * day), func(tx store.Tx, at time.Time) error {
			// Its session first (a token needs one), due long after.
			if err := tx.PutSession(&store.Session{ID: "s-rt", UserID: "u-rt", ProjectID: "p", IssuedAt: t0, ExpiresAt: t0.Add(365 * day)}); err != nil {
				return err
			}
			return tx.PutRefreshToken(&store.RefreshToken{SessionID: "s-rt", Hash: []byte("rt1"), ProjectID: "p", CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.RefreshToken("s-rt", []byte("rt1")); return err == nil }, true},
		{store.ExpiringOIDCAuthRequests, t0.Add(30 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutOIDCAuthRequest(&store.OIDCAuthRequest{ProjectID: "p", ID: "ar1", ClientID: "c", CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.OIDCAuthRequest("p", "ar1"); return err == nil }, true},
		{store.ExpiringOIDCGrants, t0.Add(time.Hour), func(tx store.Tx, at time.Time) error {
			return tx.PutOIDCGrant(&store.OIDCGrant{ProjectID: "p", ID: "g1", ClientID: "c", UserID: "u", SessionID: "s", CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.OIDCGrant("p", "g1"); return err == nil }, true},
		{store.ExpiringOIDCRefreshTokens, t0.Add(7 * day), func(tx store.Tx, at time.Time) error {
			return tx.PutOIDCRefreshToken(&store.OIDCRefreshToken{ProjectID: "p", Hash: []byte("ort1"), GrantID: "g1", ClientID: "c", CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.OIDCRefreshToken("p", []byte("ort1")); return err == nil }, true},
		{store.ExpiringOIDCRevokedTokens, t0.Add(time.Hour), func(tx store.Tx, at time.Time) error {
			return tx.PutOIDCRevokedToken(&store.OIDCRevokedToken{ProjectID: "p", JTI: "g1.1.x", ClientID: "c", RevokedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.OIDCRevokedToken("p", "g1.1.x"); return err == nil }, true},
		{store.ExpiringOIDCDeviceAuths, t0.Add(10 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutOIDCDeviceAuth(&store.OIDCDeviceAuth{ProjectID: "p", Hash: []byte("dc1"), UserCode: "BCDF-GHJK", ClientID: "c",
				State: store.DeviceAuthPending, CreatedAt: t0, ExpiresAt: at})
		}, func(tx store.Tx) bool {
			_, err := tx.OIDCDeviceAuthByUserCode("p", "BCDF-GHJK")
			return err == nil
		}, true},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.kind, "/", c.due.Sub(t0)), func(t *testing.T) {
			// First due a day earlier, then rewritten: the index follows.
			update(t, db, func(tx store.Tx) error { return c.put(tx, c.due.Add(-day)) })
			if c.kind == store.ExpiringDeliveries { // a delivery record is never rewritten
				sweepAll(t, db, c.kind, c.due.Add(-day), 1000)
			}
			update(t, db, func(tx store.Tx) error { return c.put(tx, c.due) })
			if n := expiring(t, db, c.kind); n != 1 {
				t.Fatalf("%d rows, want 1", n)
			}
			before := c.due.Add(-time.Nanosecond)
			view(t, db, func(tx store.Tx) error {
				early, err := tx.ExpiryDue(c.kind, before)
				if err != nil {
					return err
				}
				onTime, err := tx.ExpiryDue(c.kind, c.due)
				if err != nil {
					return err
				}
				if early || !onTime {
					return fmt.Errorf("ExpiryDue(before)=%v, ExpiryDue(due)=%v", early, onTime)
				}
				return nil
			})
			if got := sweepAll(t, db, c.kind, before, 1000); len(got) != 0 {
				t.Fatalf("swept %v a nanosecond early", got)
			}
			view(t, db, func(tx store.Tx) error {
				if !c.live(tx) {
					return errors.New("row gone before its time")
				}
				return nil
			})
			if got := sweepAll(t, db, c.kind, c.due, 1000); len(got) != 1 || got[0] != 1 {
				t.Fatalf("swept %v at its time, want [1]", got)
			}
			view(t, db, func(tx store.Tx) error {
				if c.live(tx) {
					return errors.New("row (or what belongs to it) still there after the sweep")
				}
				return nil
			})
			if n := expiring(t, db, c.kind); n != 0 {
				t.Fatalf("%d rows left", n)
			}
			if !c.zero {
				return
			}
			// Due at the zero time: at once, whatever the time.
			update(t, db, func(tx store.Tx) error { return c.put(tx, time.Time{}) })
			if got := sweepAll(t, db, c.kind, t0.Add(-100*365*day), 1000); len(got) != 1 || got[0] != 1 {
				t.Fatalf("swept %v rows due at the zero time, want [1]", got)
			}
		})
	}
	check(t, db)
}

// expiryBounded: 2,500 due sessions go in transactions of at most
// 1,000, earliest due first; the sessions not yet due stay, with their
// users' entries; a sweep of other rows at most max, earliest due first.
func (s Suite) expiryBounded(t *testing.T) {
	db := s.open(t, store.Options{})
	update(t, db, func(tx store.Tx) error {
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
	update(t, db, func(tx store.Tx) (err error) { first, err = tx.SweepExpired(store.ExpiringSessions, now, 1000); return })
	view(t, db, func(tx store.Tx) error {
		if first != 1000 || must(tx.SessionExists("s00999")) || !must(tx.SessionExists("s01000")) {
			return fmt.Errorf("first transaction deleted %d, not the oldest 1,000", first)
		}
		return nil
	})
	if got := sweepAll(t, db, store.ExpiringSessions, now, 1000); fmt.Sprint(got) != "[1000 500]" {
		t.Fatalf("transactions deleted %v, want [1000 500]", got)
	}
	if n := expiring(t, db, store.ExpiringSessions); n != 500 {
		t.Fatalf("%d sessions left, want 500", n)
	}
	view(t, db, func(tx store.Tx) error {
		n := 0
		for u := range 7 {
			n += len(must(tx.UserSessions(fmt.Sprint("u", u))))
		}
		if n != 500 {
			return fmt.Errorf("%d sessions under their users, want 500", n)
		}
		return nil
	})
	// Ids in the opposite order of their expiry: the sweep goes by time.
	update(t, db, func(tx store.Tx) error {
		for i := range 5 {
			if err := tx.PutChallenge(&store.Challenge{ID: fmt.Sprint("c", 5-i), ProjectID: "p", Kind: "login", ExpiresAt: t0.Add(time.Duration(i) * time.Second)}); err != nil {
				return err
			}
		}
		n, err := tx.SweepExpired(store.ExpiringChallenges, t0.Add(time.Hour), 2)
		if err != nil || n != 2 {
			return fmt.Errorf("SweepExpired(max 2)=%d, %v", n, err)
		}
		for _, id := range []string{"c5", "c4"} {
			if _, err := tx.Challenge(id); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("challenge %s, due first, not swept: %v", id, err)
			}
		}
		_, err = tx.Challenge("c3")
		return err
	})
	check(t, db)
}
