package store_test

import (
	"errors"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestSessionLive: SessionLive answers as SessionExists in a View, and
// once a session is known (answered from memory on both backends) every
// way a session row is deleted makes the next call answer false as soon
// as the deleting Update or Batch has returned; a deletion rolled back
// deletes nothing.
func TestSessionLive(t *testing.T) {
	t.Parallel()
	errRollback := errors.New("roll back")
	cases := []struct {
		name   string
		delete func(db store.DB) error
		gone   bool
	}{
		{"DeleteSession", func(db store.DB) error {
			return db.Update(ctx, func(tx store.Tx) error {
				s, err := tx.Session("s1")
				if err != nil {
					return err
				}
				return tx.DeleteSession(s)
			})
		}, true},
		{"DeleteSession in a batch", func(db store.DB) error {
			return db.Batch(ctx, func(tx store.Tx) error {
				s, err := tx.Session("s1")
				if err != nil {
					return err
				}
				return tx.DeleteSession(s)
			})
		}, true},
		{"DeleteUserSessions", func(db store.DB) error {
			return db.Update(ctx, func(tx store.Tx) error { return tx.DeleteUserSessions("u1") })
		}, true},
		{"DeleteUser", func(db store.DB) error {
			return db.Update(ctx, func(tx store.Tx) error {
				u, err := tx.User("u1")
				if err != nil {
					return err
				}
				return tx.DeleteUser(u)
			})
		}, true},
		{"DeleteProject", func(db store.DB) error {
			return db.Update(ctx, func(tx store.Tx) error { _, err := tx.DeleteProject("p"); return err })
		}, true},
		{"SweepExpired", func(db store.DB) error {
			return db.Batch(ctx, func(tx store.Tx) error {
				_, err := tx.SweepExpired(store.ExpiringSessions, t0.Add(2*time.Hour), 100)
				return err
			})
		}, true},
		{"a deletion rolled back", func(db store.DB) error {
			err := db.Update(ctx, func(tx store.Tx) error {
				if err := tx.DeleteUserSessions("u1"); err != nil {
					return err
				}
				return errRollback
			})
			if errors.Is(err, errRollback) {
				return nil
			}
			return err
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := storetest.Open(t)
			mustTx(t, db, func(tx store.Tx) error {
				if err := tx.PutProject(&store.Project{ID: "p", Name: "p", CreatedAt: t0}); err != nil {
					return err
				}
				if err := tx.PutUser(&store.User{ID: "u1", ProjectID: "p", Email: "u1@example.com", CreatedAt: t0}); err != nil {
					return err
				}
				for _, id := range []string{"s1", "s2"} {
					if err := tx.PutSession(&store.Session{ID: id, UserID: "u1", ProjectID: "p", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
						return err
					}
				}
				return nil
			})
			for range 2 { // the second from memory
				if live, err := db.SessionLive(ctx, "s1"); err != nil || !live {
					t.Fatalf("SessionLive(s1) = %v, %v before the deletion", live, err)
				}
			}
			if err := c.delete(db); err != nil {
				t.Fatal(err)
			}
			live, err := db.SessionLive(ctx, "s1")
			if err != nil || live == c.gone {
				t.Fatalf("SessionLive(s1) = %v, %v after %s, want %v", live, err, c.name, !c.gone)
			}
			var exists bool
			db.View(ctx, func(tx store.Tx) (err error) { exists, err = tx.SessionExists("s1"); return err })
			if exists != live {
				t.Fatalf("SessionLive %v, SessionExists %v", live, exists)
			}
		})
	}
	t.Run("unknown and closed", func(t *testing.T) {
		db := storetest.Open(t)
		for _, id := range []string{"nope", "", "a\x00b"} {
			if live, err := db.SessionLive(ctx, id); err != nil || live {
				t.Fatalf("SessionLive(%q) = %v, %v", id, live, err)
			}
		}
		mustTx(t, db, func(tx store.Tx) error {
			return tx.PutSession(&store.Session{ID: "s", UserID: "u", ProjectID: "p", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)})
		})
		if live, err := db.SessionLive(ctx, "s"); err != nil || !live {
			t.Fatalf("SessionLive(s) = %v, %v", live, err)
		}
		db.Close()
		for _, id := range []string{"s", "nope"} {
			if _, err := db.SessionLive(ctx, id); !errors.Is(err, store.ErrClosed) {
				t.Fatalf("SessionLive(%s) after Close: %v, want ErrClosed", id, err)
			}
		}
	})
}
