package store_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestSessionProofsRoundTrip: a session's proofs come back exactly on
// either backend (order, methods of the one-byte table and others,
// times to the nanosecond, a proof before the sign-in and at the zero
// time), none as none, and a rewrite replaces them.
func TestSessionProofsRoundTrip(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	sessions := []*store.Session{
		{ID: "0193a0d5-c3d2-7e80-9000-0000000000d1", UserID: "u", ProjectID: "p", Method: "email_otp", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour),
			Proofs: []store.Proof{{Method: "otp", At: t0}, {Method: "totp", At: t0.Add(time.Minute + time.Nanosecond)},
				{Method: "oauth:github", At: t0.Add(-time.Hour)}, {Method: "backup_code", At: time.Time{}}}},
		{ID: "0193a0d5-c3d2-7e80-9000-0000000000d2", UserID: "u", ProjectID: "p", Method: "passkey", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)},
	}
	put := func() {
		t.Helper()
		if err := db.Update(ctx, func(tx store.Tx) error {
			for _, s := range sessions {
				if err := tx.PutSession(s); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	check := func() {
		t.Helper()
		db.View(ctx, func(tx store.Tx) error {
			for _, want := range sessions {
				got, err := tx.Session(want.ID)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Proofs, want.Proofs) {
					t.Fatalf("%s: proofs %v, want %v", want.ID, got.Proofs, want.Proofs)
				}
			}
			return nil
		})
	}
	put()
	check()
	sessions[0].Proofs[1].At = t0.Add(2 * time.Minute)
	sessions[1].Proofs = []store.Proof{{Method: "passkey", At: t0}, {Method: "sms", At: t0.Add(time.Second)}}
	put()
	check()
}

// TestSessionEnrolled: SessionEnrolled answers the session with what its
// user has enrolled (a pending factor is not enrolled; a passkey counts
// in the session's project only), and ErrNotFound without the session;
// ReadEnrolled gives the same once the transaction committed, changes
// made earlier in the transaction included.
func TestSessionEnrolled(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
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
	err := db.Update(ctx, func(tx store.Tx) error {
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
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range users {
		if got[i] != u.want {
			t.Errorf("ReadEnrolled(%s) = %+v, want %+v", u.id, got[i], u.want)
		}
	}
	db.View(ctx, func(tx store.Tx) error {
		for _, u := range users {
			s, en, err := tx.SessionEnrolled("s-" + u.id)
			if err != nil {
				t.Fatal(err)
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
