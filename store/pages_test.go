package store_test

import (
	"fmt"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestRecentUserSessions: a user's sessions come newest first, limit of
// them, with whether older ones remain; another user's never show.
func TestRecentUserSessions(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	err := db.Update(ctx, func(tx store.Tx) error {
		for i := range 5 {
			for _, u := range []string{"u1", "u2"} {
				s := &store.Session{ID: fmt.Sprintf("0193-%s-%02d", u, i), UserID: u, ProjectID: "p", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)}
				if err := tx.PutSession(s); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		user  string
		limit int
		want  []string
		more  bool
	}{
		{"u1", 3, []string{"0193-u1-04", "0193-u1-03", "0193-u1-02"}, true},
		{"u1", 5, []string{"0193-u1-04", "0193-u1-03", "0193-u1-02", "0193-u1-01", "0193-u1-00"}, false},
		{"u2", 1, []string{"0193-u2-04"}, true},
		{"u3", 10, nil, false},
	} {
		db.View(ctx, func(tx store.Tx) error {
			got, more, err := tx.RecentUserSessions(c.user, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(c.want) || more != c.more {
				t.Errorf("%s limit %d: got %v more=%v, want %v more=%v", c.user, c.limit, ids, more, c.want, c.more)
			}
			return nil
		})
	}
}

// TestDeliveriesBefore: pages of a webhook's attempts, newest first,
// each starting below the last Seq of the previous one, cover every
// attempt exactly once; another webhook's attempts never show.
func TestDeliveriesBefore(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	err := db.Update(ctx, func(tx store.Tx) error {
		for i := range 7 {
			for _, w := range []string{"w1", "w2"} {
				if err := tx.AddDelivery(&store.Delivery{ID: fmt.Sprint(w, "-", i), WebhookID: w, EventID: "evt", Attempt: 1, Status: "success"}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	var before uint64
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("more pages than attempts")
		}
		var more bool
		db.View(ctx, func(tx store.Tx) error {
			ds, m, err := tx.DeliveriesBefore("w1", before, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				seen = append(seen, d.ID)
				before = d.Seq
			}
			more = m
			return nil
		})
		if !more {
			break
		}
	}
	if got, want := fmt.Sprint(seen), "[w1-6 w1-5 w1-4 w1-3 w1-2 w1-1 w1-0]"; got != want {
		t.Fatalf("pages showed %s, want %s", got, want)
	}
	db.View(ctx, func(tx store.Tx) error {
		if ds, more, err := tx.DeliveriesBefore("w3", 0, 10); err != nil || len(ds) != 0 || more {
			t.Fatalf("unknown webhook: %d attempts, more=%v, err %v", len(ds), more, err)
		}
		return nil
	})
}
