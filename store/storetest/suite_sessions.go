package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// Sessions tests the users' sessions (store.Sessions): exact round
// trips with their proofs, a user's sessions in order and by page,
// TouchSession, deletions, and what a session's user has enrolled.
func (s Suite) Sessions(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.sessionsRoundTrip},
		{"OfAUser", s.sessionsOfAUser},
		{"Touch", s.sessionsTouch},
		{"Enrolled", s.sessionsEnrolled},
	})
}

// sessionsRoundTrip: every field comes back exactly, bytes a header
// brought that are not text (a user agent cut inside a UTF-8 sequence,
// an address with a NUL) too; proofs keep their order, methods of any
// name, times to the nanosecond, a proof before the sign-in and one at
// the zero time; none reads as none; a rewrite replaces them.
func (s Suite) sessionsRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	exp := t0.Add(365 * 24 * time.Hour)
	sessions := []*store.Session{
		{ID: "0193a0d5-c3d2-7e80-9000-0000000000d1", UserID: "u-full", ProjectID: "p-full", Method: "passkey", IssuedAt: t0, ExpiresAt: exp,
			LastSeenAt: t0.Add(time.Hour), IP: "2001:db8::1", UserAgent: "curl/8.5.0 é",
			Proofs: []store.Proof{{Method: "passkey", At: t0}, {Method: "totp", At: t0.Add(time.Minute + time.Nanosecond)},
				{Method: "oauth:é", At: t0.Add(-time.Hour)}, {Method: "backup_code", At: time.Time{}}, {Method: "mfa", At: t0}}},
		{ID: "0193a0d5-c3d2-7e80-9000-0000000000d2", UserID: "u", ProjectID: "p", Method: "email_otp", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{ID: "s-bytes", UserID: "u-full", ProjectID: "p-full", IP: "1.2.3.4\x00x", UserAgent: "Mozilla \xe2\x82"},
		{ID: "s-zero"},
	}
	complete(t, sessions[0])
	put := func() {
		t.Helper()
		update(t, db, func(tx store.Tx) error {
			for _, s := range sessions {
				if err := tx.PutSession(s); err != nil {
					return fmt.Errorf("session %s: %w", s.ID, err)
				}
			}
			return nil
		})
	}
	read := func() {
		t.Helper()
		view(t, db, func(tx store.Tx) error {
			for _, want := range sessions {
				got, err := tx.Session(want.ID)
				if err != nil {
					return fmt.Errorf("session %s: %w", want.ID, err)
				}
				if err := diff("session "+want.ID, got, want); err != nil {
					return err
				}
			}
			return nil
		})
	}
	put()
	read()
	sessions[0].Proofs[1].At = t0.Add(2 * time.Minute)
	sessions[0].Proofs = sessions[0].Proofs[:3]
	sessions[1].Proofs = []store.Proof{{Method: "passkey", At: t0, Synced: true}, {Method: "sms", At: t0.Add(time.Second)}}
	put()
	read()
}

// sessionsOfAUser: a user's sessions in id order, newest first by page
// with whether older ones remain, deleted one by one or all, never
// another user's; an unknown user has none (nil ids, empty rows); ids
// that cannot be text find nothing without an error.
func (s Suite) sessionsOfAUser(t *testing.T) {
	db := s.open(t, store.Options{})
	update(t, db, func(tx store.Tx) error {
		for i := range 5 {
			for _, u := range []string{"u1", "u2"} {
				// Written newest first: the order is the ids'.
				s := &store.Session{ID: fmt.Sprintf("0193-%s-%02d", u, 4-i), UserID: u, ProjectID: "p", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)}
				if err := tx.PutSession(s); err != nil {
					return err
				}
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		ids, err := tx.UserSessions("u1")
		if err != nil || fmt.Sprint(ids) != "[0193-u1-00 0193-u1-01 0193-u1-02 0193-u1-03 0193-u1-04]" {
			return fmt.Errorf("UserSessions = %v, %v", ids, err)
		}
		rows, err := tx.UserSessionRows("u2")
		var rowIDs []string
		for _, s := range rows {
			rowIDs = append(rowIDs, s.ID)
		}
		if err != nil || fmt.Sprint(rowIDs) != "[0193-u2-00 0193-u2-01 0193-u2-02 0193-u2-03 0193-u2-04]" || rows[0].UserID != "u2" || !rows[0].ExpiresAt.Equal(t0.Add(time.Hour)) {
			return fmt.Errorf("UserSessionRows = %v, %v", rowIDs, err)
		}
		if ids, err := tx.UserSessions("nobody"); ids != nil || err != nil {
			return fmt.Errorf("UserSessions(nobody) = %#v, %v; want nil", ids, err)
		}
		if rows, err := tx.UserSessionRows("nobody"); rows == nil || len(rows) != 0 || err != nil {
			return fmt.Errorf("UserSessionRows(nobody) = %#v, %v; want empty, not nil", rows, err)
		}
		for _, c := range []struct {
			user  string
			limit int
			want  string
			more  bool
		}{
			{"u1", 3, "[0193-u1-04 0193-u1-03 0193-u1-02]", true},
			{"u1", 5, "[0193-u1-04 0193-u1-03 0193-u1-02 0193-u1-01 0193-u1-00]", false},
			{"u2", 1, "[0193-u2-04]", true},
			{"u1", 0, "[]", true},
			{"u3", 10, "[]", false},
		} {
			got, more, err := tx.RecentUserSessions(c.user, c.limit)
			ids := []string{}
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			if got == nil || err != nil || fmt.Sprint(ids) != c.want || more != c.more {
				return fmt.Errorf("RecentUserSessions(%s, %d) = %v more=%v, %v; want %s more=%v (never nil)", c.user, c.limit, ids, more, err, c.want, c.more)
			}
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		if err := tx.DeleteSession(&store.Session{ID: "0193-u1-00", UserID: "u1"}); err != nil {
			return err
		}
		if err := tx.DeleteSession(&store.Session{ID: "0193-u1-00", UserID: "u1"}); err != nil {
			return fmt.Errorf("deleting a deleted session: %w", err)
		}
		if err := tx.TouchSession("0193-u1-00", t0.Add(time.Hour), 0); err != nil {
			return err
		}
		if ok, err := tx.SessionExists("0193-u1-00"); ok || err != nil {
			return fmt.Errorf("a deleted session exists after a touch: %v, %v", ok, err)
		}
		if _, err := tx.Session("0193-u1-00"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("a deleted session: %v, want ErrNotFound", err)
		}
		if err := tx.DeleteUserSessions("u2"); err != nil {
			return err
		}
		return tx.DeleteUserSessions("nobody")
	})
	view(t, db, func(tx store.Tx) error {
		if ids, _ := tx.UserSessions("u1"); len(ids) != 4 {
			return fmt.Errorf("u1 has %v", ids)
		}
		if ids, _ := tx.UserSessions("u2"); len(ids) != 0 {
			return fmt.Errorf("u2 has %v after DeleteUserSessions", ids)
		}
		if ok, _ := tx.SessionExists("0193-u2-03"); ok {
			return errors.New("a session of u2 exists after DeleteUserSessions")
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.Session("0193-u1-01")) }, func(tx store.Tx, bad string) map[string]error {
		_, _, enrolledErr := tx.SessionEnrolled(bad)
		exists, existsErr := tx.SessionExists(bad)
		if exists && existsErr == nil {
			existsErr = errors.New("exists")
		}
		return map[string]error{
			"Session":            wantNotFound(tx.Session(bad)),
			"SessionEnrolled":    wantNotFound(0, enrolledErr),
			"SessionExists":      existsErr,
			"TouchSession":       tx.TouchSession(bad, t0, 0),
			"DeleteSession":      tx.DeleteSession(&store.Session{ID: bad, UserID: bad}),
			"DeleteUserSessions": tx.DeleteUserSessions(bad),
			"UserSessions":       wantNone(tx.UserSessions(bad)),
			"UserSessionRows":    wantNone(tx.UserSessionRows(bad)),
			"RecentUserSessions": wantNone(page(tx.RecentUserSessions(bad, 3))),
		}
	})
	check(t, db)
}

// sessionsTouch: a session never touched is not written for a use
// within grace of its sign-in; later uses are, and never move back; the
// rest of the row stays as it was.
func (s Suite) sessionsTouch(t *testing.T) {
	db := s.open(t, store.Options{})
	orig := &store.Session{ID: "s", UserID: "u", ProjectID: "p", Method: "email_otp", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour),
		IP: "192.0.2.1", UserAgent: "ua", Proofs: []store.Proof{{Method: "otp", At: t0}}}
	update(t, db, func(tx store.Tx) error { return tx.PutSession(orig) })
	read := func() *store.Session {
		t.Helper()
		var s *store.Session
		view(t, db, func(tx store.Tx) (err error) { s, err = tx.Session("s"); return })
		return s
	}
	for _, c := range []struct {
		at, want time.Duration // want -1: never written
	}{{30 * time.Second, -1}, {time.Minute - time.Nanosecond, -1}, {time.Minute, time.Minute}, {70 * time.Second, 70 * time.Second}, {65 * time.Second, 70 * time.Second}} {
		update(t, db, func(tx store.Tx) error { return tx.TouchSession("s", t0.Add(c.at), time.Minute) })
		want := *orig
		if c.want >= 0 {
			want.LastSeenAt = t0.Add(c.want)
		}
		same(t, fmt.Sprintf("after a use at +%v", c.at), read(), &want)
	}
}

// sessionsEnrolled: SessionEnrolled answers the session with what its
// user has enrolled (a pending factor is not enrolled; a passkey counts
// in the session's project only), and ErrNotFound without the session;
// ReadEnrolled gives the same once the transaction committed, changes
// made earlier in the transaction included.
func (s Suite) sessionsEnrolled(t *testing.T) {
	db := s.open(t, store.Options{})
	type user struct {
		id      string
		factors map[string]string // kind -> status
		passkey string            // the project of its passkey, if any
		want    store.Enrolled
	}
	users := []user{
		{"u-none", nil, "", store.Enrolled{}},
		{"u-totp", map[string]string{"totp": "enrolled"}, "", store.Enrolled{TOTP: true}},
		{"u-pending", map[string]string{"totp": "pending", "sms": "pending"}, "", store.Enrolled{}},
		{"u-sms", map[string]string{"sms": "enrolled"}, "", store.Enrolled{SMS: true}},
		{"u-passkey", nil, "p", store.Enrolled{Passkey: true}},
		{"u-elsewhere", nil, "q", store.Enrolled{}},
		{"u-all", map[string]string{"totp": "enrolled", "sms": "enrolled"}, "p", store.Enrolled{TOTP: true, SMS: true, Passkey: true}},
	}
	got := make([]store.Enrolled, len(users))
	update(t, db, func(tx store.Tx) error {
		for i, u := range users {
			for kind, status := range u.factors {
				if err := tx.PutFactor(&store.Factor{UserID: u.id, ProjectID: "p", Kind: kind, Status: status, CreatedAt: t0}); err != nil {
					return err
				}
			}
			if u.passkey != "" {
				if err := tx.PutPasskey(&store.Passkey{ID: "cred-" + u.id, UserID: u.id, ProjectID: u.passkey, CreatedAt: t0}); err != nil {
					return err
				}
			}
			if err := tx.PutSession(&store.Session{ID: "s-" + u.id, UserID: u.id, ProjectID: "p", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)}); err != nil {
				return err
			}
			if err := tx.ReadEnrolled("p", u.id, &got[i]); err != nil {
				return err
			}
		}
		return nil
	})
	for i, u := range users {
		if got[i] != u.want {
			t.Errorf("ReadEnrolled(%s) = %+v, want %+v", u.id, got[i], u.want)
		}
	}
	view(t, db, func(tx store.Tx) error {
		for _, u := range users {
			s, en, err := tx.SessionEnrolled("s-" + u.id)
			if err != nil {
				return err
			}
			if s.ID != "s-"+u.id || s.UserID != u.id || en != u.want {
				t.Errorf("SessionEnrolled(s-%s) = %s of %s, %+v; want %+v", u.id, s.ID, s.UserID, en, u.want)
			}
		}
		if _, _, err := tx.SessionEnrolled("s-nobody"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SessionEnrolled of no session: %v, want ErrNotFound", err)
		}
		return nil
	})
}
