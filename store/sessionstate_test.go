package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// sessionStateFixture stores project p, user u1 and its sessions s1 and
// s2 (s1 proven by an email code at t0), and returns the store.
func sessionStateFixture(t *testing.T) store.DB {
	t.Helper()
	db := storetest.Open(t)
	mustTx(t, db, func(tx store.Tx) error {
		if err := tx.PutProject(&store.Project{ID: "p", Name: "p", CreatedAt: t0}); err != nil {
			return err
		}
		if err := tx.PutUser(&store.User{ID: "u1", ProjectID: "p", Email: "u1@example.com", CreatedAt: t0}); err != nil {
			return err
		}
		for _, id := range []string{"s1", "s2"} {
			if err := tx.PutSession(&store.Session{ID: id, UserID: "u1", ProjectID: "p", Method: "email_otp",
				IssuedAt: t0, ExpiresAt: t0.Add(time.Hour), Proofs: []store.Proof{{Method: "otp", At: t0}}}); err != nil {
				return err
			}
		}
		return nil
	})
	return db
}

// sessionState returns SessionState(id), failing the test on an error
// other than ErrNotFound (reported as found false).
func sessionState(t *testing.T, db store.DB, id string) (store.SessionState, bool) {
	t.Helper()
	p, err := db.SessionState(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.SessionState{}, false
	} else if err != nil {
		t.Fatalf("SessionState(%s): %v", id, err)
	}
	return *p, true
}

// wantState checks what SessionState(id) answers against what a View
// reads (SessionEnrolled) and against want.
func wantState(t *testing.T, db store.DB, id string, want store.SessionState, found bool) {
	t.Helper()
	st, ok := sessionState(t, db, id)
	var sess *store.Session
	var en store.Enrolled
	err := db.View(ctx, func(tx store.Tx) (err error) { sess, en, err = tx.SessionEnrolled(id); return err })
	if ok != found || (err == nil) != found {
		t.Fatalf("SessionState(%s) found %v, SessionEnrolled %v, want found %v", id, ok, err, found)
	}
	if !found {
		return
	}
	same := func(a, b store.SessionState) bool {
		return a.UserID == b.UserID && a.TOTP == b.TOTP && a.SMS == b.SMS && slices.EqualFunc(a.Proofs, b.Proofs,
			func(p, q store.Proof) bool { return p.Method == q.Method && p.At.Equal(q.At) }) &&
			a.Email == b.Email && a.Name == b.Name && slices.Equal(a.Groups, b.Groups)
	}
	read := store.SessionState{UserID: sess.UserID, Proofs: sess.Proofs, TOTP: en.TOTP, SMS: en.SMS}
	if err := db.View(ctx, func(tx store.Tx) error {
		u, err := tx.User(sess.UserID)
		if err == nil {
			read.Email, read.Name, read.Groups = u.Email, u.FirstName, u.Groups
		}
		return err
	}); err != nil {
		t.Fatalf("User(%s): %v", sess.UserID, err)
	}
	if !same(st, read) || !same(st, want) {
		t.Fatalf("SessionState(%s) = %+v, a View reads %+v, want %+v", id, st, read, want)
	}
}

// TestSessionStateDeleted: SessionState answers as SessionEnrolled in a
// View, and once a session is known (answered from memory on both
// backends) every way a session row is deleted makes the next call
// answer ErrNotFound as soon as the deleting Update or Batch has
// returned; a deletion rolled back deletes nothing.
func TestSessionStateDeleted(t *testing.T) {
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
	signedIn := store.SessionState{UserID: "u1", Proofs: []store.Proof{{Method: "otp", At: t0}}, Email: "u1@example.com"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := sessionStateFixture(t)
			for range 2 { // the second from memory
				wantState(t, db, "s1", signedIn, true)
			}
			if err := c.delete(db); err != nil {
				t.Fatal(err)
			}
			wantState(t, db, "s1", signedIn, !c.gone)
		})
	}
	t.Run("unknown and closed", func(t *testing.T) {
		db := storetest.Open(t)
		for _, id := range []string{"nope", "", "a\x00b"} {
			if st, err := db.SessionState(ctx, id); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("SessionState(%q) = %+v, %v, want ErrNotFound", id, st, err)
			}
		}
		mustTx(t, db, func(tx store.Tx) error {
			return tx.PutSession(&store.Session{ID: "s", UserID: "u", ProjectID: "p", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)})
		})
		if st, err := db.SessionState(ctx, "s"); err != nil || st.UserID != "u" {
			t.Fatalf("SessionState(s) = %+v, %v", st, err)
		}
		db.Close()
		for _, id := range []string{"s", "nope"} {
			if _, err := db.SessionState(ctx, id); !errors.Is(err, store.ErrClosed) {
				t.Fatalf("SessionState(%s) after Close: %v, want ErrClosed", id, err)
			}
		}
	})
}

// TestSessionStateChanged: a session known to SessionState (answered
// from memory) shows each change of what it answers as soon as the
// changing Update or Batch has returned: a step-up's proof (PutSession
// of the existing session), a factor enrolled, a pending one, one
// enrolled again with a new code step, the other factor, a factor no
// longer enrolled, the user's address, name or groups. The other
// session of the user shows the user's factors and identity too. A change rolled back changes nothing.
func TestSessionStateChanged(t *testing.T) {
	db := sessionStateFixture(t)
	otp := store.Proof{Method: "otp", At: t0}
	want := store.SessionState{UserID: "u1", Proofs: []store.Proof{otp}, Email: "u1@example.com"}
	check := func(what string) {
		t.Helper()
		t.Run(what, func(t *testing.T) {
			for range 2 { // the second from memory
				wantState(t, db, "s1", want, true)
			}
			wantState(t, db, "s2", store.SessionState{UserID: "u1", Proofs: []store.Proof{otp}, TOTP: want.TOTP, SMS: want.SMS,
				Email: want.Email, Name: want.Name, Groups: want.Groups}, true)
		})
	}
	check("signed in")

	stepUp := func(method string, at time.Time) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			s, err := tx.Session("s1")
			if err != nil {
				return err
			}
			s.Proofs = append(s.Proofs, store.Proof{Method: method, At: at})
			return tx.PutSession(s)
		}
	}
	factor := func(kind, status string, step int64) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			return tx.PutFactor(&store.Factor{UserID: "u1", ProjectID: "p", Kind: kind, Status: status,
				LastStep: step, CreatedAt: t0})
		}
	}

	mustTx(t, db, stepUp("passkey", t0.Add(time.Minute)))
	want.Proofs = append(want.Proofs, store.Proof{Method: "passkey", At: t0.Add(time.Minute)})
	check("a step-up in an Update")

	if err := db.Batch(ctx, stepUp("totp", t0.Add(2*time.Minute))); err != nil {
		t.Fatal(err)
	}
	want.Proofs = append(want.Proofs, store.Proof{Method: "totp", At: t0.Add(2 * time.Minute)})
	check("a step-up in a Batch")

	mustTx(t, db, factor("totp", "pending", 0))
	check("TOTP pending")
	mustTx(t, db, factor("totp", "enrolled", 1))
	want.TOTP = true
	check("TOTP enrolled")
	if err := db.Batch(ctx, factor("totp", "enrolled", 2)); err != nil { // a later code
		t.Fatal(err)
	}
	check("TOTP's next code")
	if err := db.Batch(ctx, factor("sms", "enrolled", 0)); err != nil {
		t.Fatal(err)
	}
	want.SMS = true
	check("SMS enrolled in a Batch")
	mustTx(t, db, factor("totp", "pending", 0)) // a store change the service does not make, but may
	want.TOTP = false
	check("TOTP no longer enrolled")

	user := func(email, name string, groups ...string) func(tx store.Tx) error {
		return func(tx store.Tx) error {
			u, err := tx.User("u1")
			if err != nil {
				return err
			}
			u.Email, u.FirstName, u.Groups = email, name, groups
			return tx.PutUser(u)
		}
	}
	mustTx(t, db, user("u1@example.com", "Ada", "ops", "staff"))
	want.Name, want.Groups = "Ada", []string{"ops", "staff"}
	check("the user's name and groups changed")
	if err := db.Batch(ctx, user("ada@example.com", "Ada", "staff")); err != nil {
		t.Fatal(err)
	}
	want.Email, want.Groups = "ada@example.com", []string{"staff"}
	check("the user's address and groups changed in a Batch")

	errRollback := errors.New("roll back")
	err := db.Update(ctx, func(tx store.Tx) error {
		if err := stepUp("sms", t0.Add(3*time.Minute))(tx); err != nil {
			return err
		}
		if err := factor("totp", "enrolled", 3)(tx); err != nil {
			return err
		}
		if err := user("eve@example.com", "Eve", "admin")(tx); err != nil {
			return err
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatal(err)
	}
	check("changes rolled back")

	mustTx(t, db, func(tx store.Tx) error {
		u, err := tx.User("u1")
		if err != nil {
			return err
		}
		return tx.DeleteUser(u)
	})
	wantState(t, db, "s1", want, false)
}
