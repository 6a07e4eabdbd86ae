package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// RefreshTokens tests the sessions' refresh tokens (store.RefreshTokens):
// exact round trips, keyed by session and hash; what is not there; a
// token of a session not stored is not stored; and every way a session
// goes takes its tokens along, leaving the other sessions'; a token put
// in the transaction that stores its session (a sign-in's) is stored,
// and one of a session that transaction stored and then deleted is not. (Their own
// sweep is in Expiry's kinds.)
func (s Suite) RefreshTokens(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.refreshRoundTrip},
		{"GoWithTheirSession", s.refreshGoWithSession},
		{"WithTheirNewSession", s.refreshWithNewSession},
	})
}

// refreshRoundTrip: every field comes back exactly (a hash of any bytes,
// times to the nanosecond, a used time at the zero time is not none); a
// hash is a key within its session only; a rewrite replaces the row (and
// its place in the sweep's index); unknown keys, ids that cannot be text
// and a session not stored find nothing, without an error.
func (s Suite) refreshRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	const s1, s2 = "0193a0d5-c3d2-7e80-9000-0000000000e1", "0193a0d5-c3d2-7e80-9000-0000000000e2"
	tokens := []*store.RefreshToken{
		{SessionID: s1, Hash: []byte{0, 1, 0xfe, 0xff, 'h'}, ProjectID: "p-full", CreatedAt: t0,
			UsedAt: ptrTo(t0.Add(time.Minute + time.Nanosecond)), ExpiresAt: t0.Add(30 * 24 * time.Hour)},
		{SessionID: s1, Hash: []byte("live"), ProjectID: "p", CreatedAt: t0.Add(time.Minute), ExpiresAt: t0.Add(7 * 24 * time.Hour)},
		// The same hash under another session is another token.
		{SessionID: s2, Hash: []byte{0, 1, 0xfe, 0xff, 'h'}, ProjectID: "p", CreatedAt: t0, UsedAt: ptrTo(time.Time{}), ExpiresAt: t0.Add(time.Hour)},
	}
	complete(t, tokens[0])
	update(t, db, func(tx store.Tx) error {
		for _, id := range []string{s1, s2} {
			if err := tx.PutSession(&store.Session{ID: id, UserID: "u", ProjectID: "p", IssuedAt: t0, ExpiresAt: t0.Add(365 * 24 * time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	put := func() {
		t.Helper()
		update(t, db, func(tx store.Tx) error {
			for _, r := range tokens {
				if err := tx.PutRefreshToken(r); err != nil {
					return fmt.Errorf("token %s/%q: %w", r.SessionID, r.Hash, err)
				}
			}
			return nil
		})
	}
	read := func() {
		t.Helper()
		view(t, db, func(tx store.Tx) error {
			for _, want := range tokens {
				got, err := tx.RefreshToken(want.SessionID, want.Hash)
				if err != nil {
					return fmt.Errorf("token %s/%q: %w", want.SessionID, want.Hash, err)
				}
				if err := diff(fmt.Sprintf("token %s/%q", want.SessionID, want.Hash), got, want); err != nil {
					return err
				}
			}
			return nil
		})
		if n := expiring(t, db, store.ExpiringRefreshTokens); n != len(tokens) {
			t.Fatalf("%d tokens in the sweep's count, want %d", n, len(tokens))
		}
	}
	put()
	read()
	// Rotated: the live one used, and due later.
	tokens[1].UsedAt = ptrTo(t0.Add(2 * time.Minute))
	tokens[1].ExpiresAt = t0.Add(30 * 24 * time.Hour)
	tokens[2].UsedAt = nil
	put()
	read()
	update(t, db, func(tx store.Tx) error {
		// A session that is not stored keeps no token.
		return tx.PutRefreshToken(&store.RefreshToken{SessionID: "no-such-session", Hash: []byte("h"), ProjectID: "p", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)})
	})
	view(t, db, func(tx store.Tx) error {
		for name, err := range map[string]error{
			"another hash":            wantNotFound(tx.RefreshToken(s1, []byte("other"))),
			"a hash of another":       wantNotFound(tx.RefreshToken(s2, []byte("live"))),
			"no hash":                 wantNotFound(tx.RefreshToken(s1, nil)),
			"an unknown session":      wantNotFound(tx.RefreshToken("nobody", []byte("live"))),
			"a session not stored":    wantNotFound(tx.RefreshToken("no-such-session", []byte("h"))),
			"a prefix of the session": wantNotFound(tx.RefreshToken(s1[:10], []byte("live"))),
		} {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		return nil
	})
	if n := expiring(t, db, store.ExpiringRefreshTokens); n != len(tokens) {
		t.Fatalf("%d tokens after one of no session, want %d", n, len(tokens))
	}
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.RefreshToken(s1, []byte("live"))) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"RefreshToken":    wantNotFound(tx.RefreshToken(bad, []byte("live"))),
			"PutRefreshToken": tx.PutRefreshToken(&store.RefreshToken{SessionID: bad, Hash: []byte("h"), ProjectID: "p", ExpiresAt: t0}),
		}
	})
	check(t, db)
}

// refreshGoWithSession: a session's tokens, used and live, go with it
// in the transaction that ends it, whichever way: DeleteSession,
// DeleteUserSessions, DeleteUser, the sweep of expired sessions (their
// tokens due much later); another session's stay. A session stored
// again under the same id has none of the old ones.
func (s Suite) refreshGoWithSession(t *testing.T) {
	db := s.open(t, store.Options{})
	far := t0.Add(365 * 24 * time.Hour)
	type sess struct{ id, user string }
	all := []sess{{"s-deleted", "u1"}, {"s-swept", "u1"}, {"s-u2a", "u2"}, {"s-u2b", "u2"}, {"s-u3", "u3"}, {"s-kept", "u4"}}
	update(t, db, func(tx store.Tx) error {
		if err := tx.PutUser(&store.User{ID: "u3", ProjectID: "p", Email: "u3@example.com", CreatedAt: t0}); err != nil {
			return err
		}
		for _, s := range all {
			exp := far
			if s.id == "s-swept" {
				exp = t0.Add(time.Hour)
			}
			if err := tx.PutSession(&store.Session{ID: s.id, UserID: s.user, ProjectID: "p", IssuedAt: t0, ExpiresAt: exp}); err != nil {
				return err
			}
			for i, used := range []*time.Time{ptrTo(t0.Add(time.Minute)), nil} {
				r := &store.RefreshToken{SessionID: s.id, Hash: []byte(fmt.Sprint("h", i)), ProjectID: "p", CreatedAt: t0, UsedAt: used, ExpiresAt: far}
				if err := tx.PutRefreshToken(r); err != nil {
					return err
				}
			}
		}
		return nil
	})
	left := func(what string, want ...string) {
		t.Helper()
		view(t, db, func(tx store.Tx) error {
			for _, s := range all {
				kept := false
				for _, w := range want {
					kept = kept || w == s.id
				}
				for _, h := range []string{"h0", "h1"} {
					_, err := tx.RefreshToken(s.id, []byte(h))
					switch {
					case kept && err != nil:
						t.Errorf("after %s: token %s of %s: %v, want it kept", what, h, s.id, err)
					case !kept && !errors.Is(err, store.ErrNotFound):
						t.Errorf("after %s: token %s of %s: %v, want ErrNotFound", what, h, s.id, err)
					}
				}
			}
			return nil
		})
		if n := expiring(t, db, store.ExpiringRefreshTokens); n != 2*len(want) {
			t.Fatalf("after %s: %d tokens in the sweep's count, want %d", what, n, 2*len(want))
		}
		check(t, db)
	}
	left("nothing", "s-deleted", "s-swept", "s-u2a", "s-u2b", "s-u3", "s-kept")
	update(t, db, func(tx store.Tx) error { return tx.DeleteSession(&store.Session{ID: "s-deleted", UserID: "u1"}) })
	left("DeleteSession", "s-swept", "s-u2a", "s-u2b", "s-u3", "s-kept")
	update(t, db, func(tx store.Tx) error { return tx.DeleteUserSessions("u2") })
	left("DeleteUserSessions", "s-swept", "s-u3", "s-kept")
	update(t, db, func(tx store.Tx) error {
		u, err := tx.User("u3")
		if err != nil {
			return err
		}
		return tx.DeleteUser(u)
	})
	left("DeleteUser", "s-swept", "s-kept")
	if got := sweepAll(t, db, store.ExpiringSessions, t0.Add(time.Hour), 1000); len(got) != 1 || got[0] != 1 {
		t.Fatalf("swept %v sessions, want [1]", got)
	}
	left("the sweep of sessions", "s-kept")
	update(t, db, func(tx store.Tx) error {
		return tx.PutSession(&store.Session{ID: "s-deleted", UserID: "u1", ProjectID: "p", IssuedAt: t0, ExpiresAt: far})
	})
	left("the session stored again", "s-kept")
}

// refreshWithNewSession: a sign-in's transaction stores its session and
// then the session's first token; the token is stored, whether its
// session is the last one the transaction stored or not. A session the
// transaction stored and then deleted (DeleteSession, DeleteUserSessions,
// the sweep, DeleteProject, which takes the token put before too) keeps
// no token put after, nor does a session stored by a transaction that
// was rolled back, in the next one.
func (s Suite) refreshWithNewSession(t *testing.T) {
	db := s.open(t, store.Options{})
	far := t0.Add(365 * 24 * time.Hour)
	putSession := func(tx store.Tx, id string, exp time.Time) error {
		return tx.PutSession(&store.Session{ID: id, UserID: "u-" + id, ProjectID: "p", IssuedAt: t0, ExpiresAt: exp})
	}
	putToken := func(tx store.Tx, id string) error {
		return tx.PutRefreshToken(&store.RefreshToken{SessionID: id, Hash: []byte("h"), ProjectID: "p", CreatedAt: t0, ExpiresAt: far})
	}
	update(t, db, func(tx store.Tx) error {
		// The sign-in's order: its session, then its token.
		if err := putSession(tx, "s-login", far); err != nil {
			return err
		}
		if err := putToken(tx, "s-login"); err != nil {
			return err
		}
		// Not the last session stored.
		for _, id := range []string{"s-first", "s-second"} {
			if err := putSession(tx, id, far); err != nil {
				return err
			}
		}
		if err := putToken(tx, "s-first"); err != nil {
			return err
		}
		if err := putToken(tx, "s-second"); err != nil {
			return err
		}
		// Stored, then deleted each way, then a token.
		if err := putSession(tx, "s-deleted", far); err != nil {
			return err
		}
		if err := tx.DeleteSession(&store.Session{ID: "s-deleted", UserID: "u-s-deleted"}); err != nil {
			return err
		}
		if err := putToken(tx, "s-deleted"); err != nil {
			return err
		}
		if err := putSession(tx, "s-user", far); err != nil {
			return err
		}
		if err := tx.DeleteUserSessions("u-s-user"); err != nil {
			return err
		}
		if err := putToken(tx, "s-user"); err != nil {
			return err
		}
		if err := putSession(tx, "s-swept", t0.Add(time.Hour)); err != nil {
			return err
		}
		if n, err := tx.SweepExpired(store.ExpiringSessions, t0.Add(time.Hour), 1000); err != nil || n != 1 {
			return fmt.Errorf("swept %d sessions (%v), want 1", n, err)
		}
		return putToken(tx, "s-swept")
	})
	errRolledBack := errors.New("rolled back")
	if err := db.Update(ctx, func(tx store.Tx) error {
		if err := putSession(tx, "s-rolled-back", far); err != nil {
			return err
		}
		return errRolledBack
	}); !errors.Is(err, errRolledBack) {
		t.Fatalf("rolled back: %v", err)
	}
	update(t, db, func(tx store.Tx) error { return putToken(tx, "s-rolled-back") })
	// A project's deletion takes its users' sessions' tokens along, in
	// the transaction that stored them too.
	update(t, db, func(tx store.Tx) error {
		if err := tx.PutProject(&store.Project{ID: "p-gone", Name: "p-gone", CreatedAt: t0}); err != nil {
			return err
		}
		if err := tx.PutUser(&store.User{ID: "u-s-gone", ProjectID: "p-gone", Email: "gone@example.com", CreatedAt: t0}); err != nil {
			return err
		}
		if err := putSession(tx, "s-gone", far); err != nil {
			return err
		}
		if err := putToken(tx, "s-gone"); err != nil {
			return err
		}
		_, err := tx.DeleteProject("p-gone")
		if err != nil {
			return err
		}
		return putToken(tx, "s-gone")
	})
	view(t, db, func(tx store.Tx) error {
		for _, id := range []string{"s-login", "s-first", "s-second"} {
			if _, err := tx.RefreshToken(id, []byte("h")); err != nil {
				t.Errorf("token of %s: %v, want it stored", id, err)
			}
		}
		for _, id := range []string{"s-deleted", "s-user", "s-swept", "s-rolled-back", "s-gone"} {
			if err := wantNotFound(tx.RefreshToken(id, []byte("h"))); err != nil {
				t.Errorf("token of %s: %v", id, err)
			}
		}
		return nil
	})
	if n := expiring(t, db, store.ExpiringRefreshTokens); n != 3 {
		t.Fatalf("%d tokens in the sweep's count, want 3", n)
	}
	check(t, db)
}
