package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// TestPrefetch: a code and a history asked for ahead are read in the
// round trip of the transaction's next statement, and Code and Throttle
// answer exactly what they would have read: the stored row, none, the
// transaction's own writes once it writes them, and copies the caller
// may change.
func TestPrefetch(t *testing.T) {
	t.Parallel()
	tr := openTraced(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	code := &store.Code{Kind: "otp", ProjectID: "p", Subject: "a@example.com", Hash: []byte{1, 2}, Attempts: 2, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	if err := tr.db.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutUser(&store.User{ID: "u", ProjectID: "p", Email: "a@example.com", CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		if err := tx.PutCode(code); err != nil {
			return err
		}
		return tx.PutThrottle("email_fail", "p", "a@example.com", &store.Throttle{Sends: []time.Time{now}, KeepUntil: now.Add(time.Hour)})
	}); err != nil {
		t.Fatal(err)
	}
	read := func(tx store.Tx) (*store.Code, *store.Throttle, *store.Throttle, error) {
		if _, err := tx.UserByEmail("p", "a@example.com"); err != nil {
			return nil, nil, nil, err
		}
		c, err := tx.Code("otp", "p", "a@example.com")
		if err != nil {
			return nil, nil, nil, err
		}
		th, err := tx.Throttle("email_fail", "p", "a@example.com")
		if err != nil {
			return nil, nil, nil, err
		}
		none, err := tx.Throttle("otp", "p", "a@example.com")
		return c, th, none, err
	}
	for _, ahead := range []bool{false, true, true} { // the first run prepares the statements
		before := tr.trips.Load()
		err := tr.db.View(ctx, func(tx store.Tx) error {
			if ahead {
				tx.PrefetchCode("otp", "p", "a@example.com")
				tx.PrefetchThrottle("email_fail", "p", "a@example.com")
				tx.PrefetchThrottle("otp", "p", "a@example.com")
			}
			c, th, none, err := read(tx)
			if err != nil {
				return err
			}
			if c.Attempts != 2 || string(c.Hash) != "\x01\x02" || !c.ExpiresAt.Equal(code.ExpiresAt) || len(th.Sends) != 1 || !th.Sends[0].Equal(now) ||
				!th.KeepUntil.Equal(now.Add(time.Hour)) || none == nil || len(none.Sends) != 0 {
				t.Errorf("ahead=%v: code %+v, history %+v, none %+v", ahead, c, th, none)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		trips := tr.trips.Load() - before
		t.Logf("ahead=%v: %d round trips", ahead, trips)
		if ahead && trips != 2 {
			t.Errorf("prefetched: %d round trips, want 2 (BEGIN with the reads and the user, COMMIT)", trips)
		}
	}
	// Own writes, and changed copies.
	err := tr.db.Update(ctx, func(tx store.Tx) error {
		tx.PrefetchCode("otp", "p", "a@example.com")
		tx.PrefetchThrottle("email_fail", "p", "a@example.com")
		c, th, _, err := read(tx)
		if err != nil {
			return err
		}
		th.Sends[0] = time.Time{} // the caller's copy
		c.Hash[0] = 9
		again, _ := tx.Throttle("email_fail", "p", "a@example.com")
		if !again.Sends[0].Equal(now) {
			t.Errorf("a changed copy changed the next answer: %v", again.Sends)
		}
		if c2, _ := tx.Code("otp", "p", "a@example.com"); c2.Hash[0] != 1 {
			t.Errorf("a changed code changed the next answer: %v", c2.Hash)
		}
		later := now.Add(time.Second)
		if err := tx.PutThrottle("email_fail", "p", "a@example.com", &store.Throttle{Sends: []time.Time{now, later}}); err != nil {
			return err
		}
		if err := tx.DeleteCode(c); err != nil {
			return err
		}
		got, err := tx.Throttle("email_fail", "p", "a@example.com")
		if err != nil || len(got.Sends) != 2 {
			t.Errorf("after its own write: %+v %v", got, err)
		}
		if _, err := tx.Code("otp", "p", "a@example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("after its own delete: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A read asked for and never made is not sent with COMMIT, and a
	// key that cannot be text is read (and refused) as before.
	before := tr.trips.Load()
	if err := tr.db.Update(ctx, func(tx store.Tx) error {
		tx.PrefetchCode("otp", "p\x00", "x")
		tx.PrefetchThrottle("otp", "p", "b@example.com")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := tr.trips.Load() - before; n != 0 {
		t.Errorf("a transaction that only asked ahead: %d round trips, want 0", n)
	}
}

// TestPutUserQueued: a user whose address the transaction read as free
// is written with the commit (no round trip of its own), and two
// transactions that both read the address as free and both create a
// user for it end with one user: the one that loses at the commit runs
// again and finds the other's.
func TestPutUserQueued(t *testing.T) {
	t.Parallel()
	tr := openTraced(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	signUp := func(db store.DB, id string, wait func()) (created bool, err error) {
		err = db.Update(ctx, func(tx store.Tx) error {
			created = false
			if _, err := tx.UserByEmail("p", "new@example.com"); err == nil {
				return nil
			} else if !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err := tx.PutUser(&store.User{ID: id, ProjectID: "p", Email: "new@example.com", CreatedAt: now, UpdatedAt: now}); err != nil {
				return err
			}
			created = true
			if wait != nil {
				wait()
				wait = nil // the rerun does not wait
			}
			return nil
		})
		return created, err
	}
	// Round trips: BEGIN with the read, then the user with COMMIT.
	before := tr.trips.Load()
	if _, err := signUp(tr.db, "u-first", nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("a sign-up's read and write: %d round trips", tr.trips.Load()-before)
	mustUpdate(t, tr.db, func(tx store.Tx) error { return tx.DeleteUser(&store.User{ID: "u-first"}) })
	before = tr.trips.Load()
	if _, err := signUp(tr.db, "u-again", nil); err != nil {
		t.Fatal(err)
	}
	if n := tr.trips.Load() - before; n != 2 {
		t.Errorf("a sign-up's read and write: %d round trips, want 2", n)
	}
	mustUpdate(t, tr.db, func(tx store.Tx) error { return tx.DeleteUser(&store.User{ID: "u-again"}) })

	// Two at once: both read the address as free before either commits
	// (on connections of their own: the traced store has one).
	db := openReplica(t, replicaDatabase(t), store.Options{})
	ready := make(chan struct{}, 2)
	release := make(chan struct{})
	wait := func() { ready <- struct{}{}; <-release }
	type result struct {
		created bool
		err     error
	}
	results := make(chan result, 2)
	for _, id := range []string{"u-a", "u-b"} {
		go func() {
			c, err := signUp(db, id, wait)
			results <- result{c, err}
		}()
	}
	<-ready
	<-ready
	close(release)
	var created int
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatalf("sign-up: %v", r.err)
		}
		if r.created {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d transactions created the user, want 1", created)
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM users WHERE email = 'new@example.com'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("users with the address: %d %v, want 1", n, err)
	}
}

// A conflict of a queued write, carried by a read whose error the
// function takes for "none" (as auth's device check does), still runs the
// transaction again rather than failing its commit.
func TestQueuedConflictUnderIgnoredRead(t *testing.T) {
	t.Parallel()
	db := openReplica(t, replicaDatabase(t), store.Options{})
	now := time.Unix(1_800_000_000, 0).UTC()
	runs := 0
	err := db.Update(bg, func(tx store.Tx) error {
		runs++
		if _, err := tx.UserByEmail("p", "x@example.com"); err == nil {
			return nil // the rerun: the address is taken, nothing to do
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if runs == 1 { // a concurrent sign-up takes the address after this snapshot
			mustUpdate(t, db, func(tx store.Tx) error {
				return tx.PutUser(&store.User{ID: "other", ProjectID: "p", Email: "x@example.com", CreatedAt: now, UpdatedAt: now})
			})
		}
		if err := tx.PutUser(&store.User{ID: "mine", ProjectID: "p", Email: "x@example.com", CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		tx.Device(make([]byte, 16)) // error read as "no device": carries the queued upsert
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v (runs %d), want nil after a rerun", err, runs)
	}
}

// TestPrefetchUsers: an import's chunk reads its users with one
// statement (PrefetchUsers) and writes them with the commit, new ones
// and updated ones keeping their external id alike: two round trips for
// the chunk. Writing a user drops only the answers the write can change:
// the address it takes and any it leaves.
func TestPrefetchUsers(t *testing.T) {
	t.Parallel()
	tr := openTraced(t)
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0).UTC()
	if err := tr.db.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutUser(&store.User{ID: "ua", ProjectID: "p", Email: "a@example.com", ExternalUserID: "x", CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		return tx.PutUser(&store.User{ID: "ub", ProjectID: "p", Email: "b@example.com", CreatedAt: now, UpdatedAt: now})
	}); err != nil {
		t.Fatal(err)
	}
	chunk := func(run int) error {
		emails := []string{"a@example.com", "b@example.com"}
		for i := range 20 {
			emails = append(emails, fmt.Sprintf("new%d-%d@example.com", run, i))
		}
		return tr.db.Update(ctx, func(tx store.Tx) error {
			tx.PrefetchUsers("p", emails)
			for _, e := range emails {
				u, err := tx.UserByEmail("p", e)
				if errors.Is(err, store.ErrNotFound) {
					u = &store.User{ID: "n-" + e, ProjectID: "p", Email: e, CreatedAt: now}
				} else if err != nil {
					return err
				}
				u.FirstName, u.UpdatedAt = fmt.Sprint("run ", run), now
				if err := tx.PutUser(u); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for run := range 3 { // the first run prepares the statements
		before := tr.trips.Load()
		if err := chunk(run); err != nil {
			t.Fatal(err)
		}
		trips := tr.trips.Load() - before
		t.Logf("run %d: %d round trips", run, trips)
		if run > 0 && trips != 2 {
			t.Errorf("run %d: %d round trips for a chunk of 22 users, want 2 (BEGIN with the reads, COMMIT with the writes)", run, trips)
		}
	}
	err := tr.db.Update(ctx, func(tx store.Tx) error {
		tx.PrefetchUsers("p", []string{"a@example.com", "b@example.com", "c@example.com", "new2-0@example.com"})
		a, err := tx.UserByEmail("p", "a@example.com")
		if err != nil || a.ID != "ua" || a.ExternalUserID != "x" || a.FirstName != "run 2" {
			t.Fatalf("a after the chunks: %+v %v", a, err)
		}
		if u, err := tx.UserByEmail("p", "new2-0@example.com"); err != nil || u.ID != "n-new2-0@example.com" || u.FirstName != "run 2" {
			t.Fatalf("a new user of the last chunk: %+v %v", u, err)
		}
		// a leaves its address: the answer for it goes, b's stays.
		a.Email = "a2@example.com"
		if err := tx.PutUser(a); err != nil {
			return err
		}
		if _, err := tx.UserByEmail("p", "a@example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the address a left: %v", err)
		}
		if u, err := tx.UserByEmail("p", "a2@example.com"); err != nil || u.ID != "ua" {
			t.Errorf("a's new address: %+v %v", u, err)
		}
		// b may not take a's external id, nor c b's address.
		b, err := tx.UserByEmail("p", "b@example.com")
		if err != nil || b.ID != "ub" {
			t.Fatalf("b: %+v %v", b, err)
		}
		b.ExternalUserID = "x"
		if err := tx.PutUser(b); !errors.Is(err, store.ErrConflict) {
			t.Errorf("b taking a's external id: %v, want ErrConflict", err)
		}
		if _, err := tx.UserByEmail("p", "c@example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("c: %v", err)
		}
		if err := tx.PutUser(&store.User{ID: "uc", ProjectID: "p", Email: "b@example.com", CreatedAt: now, UpdatedAt: now}); !errors.Is(err, store.ErrConflict) {
			t.Errorf("a new user at b's address: %v, want ErrConflict", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Users asked for ahead, then written or deleted by a statement of
	// its own before any other: the answers are of the table after it.
	err = tr.db.Update(ctx, func(tx store.Tx) error {
		tx.PrefetchUsers("p", []string{"d@example.com"})
		if err := tx.PutUser(&store.User{ID: "ud", ProjectID: "p", Email: "d@example.com", ExternalUserID: "z", CreatedAt: now, UpdatedAt: now}); err != nil {
			return err
		}
		if u, err := tx.UserByEmail("p", "d@example.com"); err != nil || u.ID != "ud" {
			t.Errorf("the user written after its address was asked for: %+v %v", u, err)
		}
		tx.PrefetchUsers("p", []string{"b@example.com"})
		if err := tx.DeleteUser(&store.User{ID: "ub", ProjectID: "p", Email: "b@example.com"}); err != nil {
			return err
		}
		if u, err := tx.UserByEmail("p", "b@example.com"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the user deleted after its address was asked for: %+v %v", u, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.db.View(ctx, func(tx store.Tx) error {
		users, _, err := tx.Users("p", "", "", 1000)
		if err != nil || len(users) != 2+3*20 { // d in, b out
			t.Errorf("%d users, want %d: %v", len(users), 2+3*20, err)
		}
		if _, err := tx.User("ub"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("b after its deletion: %v", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
