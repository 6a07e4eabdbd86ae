package auth

import (
	"context"
	"errors"
	"testing"

	"latchkey/store"
)

// TestAttemptRunsAfresh: a transaction the store runs again (group
// commit, a serialization retry) starts from the attempt as it was
// before the first run, so a failure or a user named by an abandoned run
// is not recorded or answered; a rolled-back transaction leaves no trace
// on the attempt, so the reject after it names only what was known
// before.
func TestAttemptRunsAfresh(t *testing.T) {
	t.Parallel()
	s, p, _ := newPasskeyService(t)
	a := s.attempt(ctx, p.ID, "email_otp", "verify", Meta{IP: "203.0.113.7"})
	a.email = "a@example.com"
	errAgain := errors.New("run again")
	runs := 0
	twice := func(ctx context.Context, fn func(store.Tx) error) error {
		if err := s.db.Update(ctx, func(tx store.Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			return errAgain // the first run is abandoned
		}); !errors.Is(err, errAgain) {
			return err
		}
		return s.db.Update(ctx, fn)
	}
	err := a.run(twice, func(tx store.Tx) error {
		runs++
		if a.userID != "" || a.failure != nil {
			t.Fatalf("run %d starts with user %q, failure %v", runs, a.userID, a.failure)
		}
		if runs == 1 {
			a.userID = "u1"
			return a.fail(tx, ErrCodeExpired)
		}
		return a.fail(tx, ErrInvalidCode)
	})
	if got := a.result(err); runs != 2 || got != ErrInvalidCode {
		t.Fatalf("runs=%d result=%v, want 2 runs and the second run's failure", runs, got)
	}
	evs := storedEvents(t, s)
	if len(evs) != 1 || evs[0].FailureCode != CatInvalidCode || evs[0].UserID != "" || evs[0].Email != "a@example.com" {
		t.Fatalf("events %+v, want the second run's failure only", evs)
	}

	conflict := ErrExternalIDConflict
	err = a.update(func(tx store.Tx) error {
		a.userID = "u2"
		if err := a.ok(tx); err != nil {
			return err
		}
		return conflict // rolled back, success event included
	})
	if err != conflict || a.userID != "" || a.failure != ErrInvalidCode {
		t.Fatalf("after a rollback: err=%v user=%q failure=%v, want the attempt as before", err, a.userID, a.failure)
	}
	if got := a.reject(err); got != conflict {
		t.Fatalf("reject returned %v", got)
	}
	evs = storedEvents(t, s)
	if len(evs) != 2 || evs[0].Success || evs[0].FailureCode != CatUserExists || evs[0].UserID != "" { // newest first
		t.Fatalf("events %+v, want the rejected conflict without a user", evs)
	}
}

// TestAttemptResult: a store failure is INTERNAL_ERROR; an auth error
// returned by the transaction is answered as it is.
func TestAttemptResult(t *testing.T) {
	t.Parallel()
	s, p, _ := newPasskeyService(t)
	a := s.attempt(ctx, p.ID, "totp", "verify", Meta{})
	if got := a.result(errors.New("disk full")); !errors.Is(got, ErrInternal) {
		t.Fatalf("result(store error)=%v, want INTERNAL_ERROR", got)
	}
	if got := a.result(ErrInvalidSession); got != ErrInvalidSession {
		t.Fatalf("result(ErrInvalidSession)=%v", got)
	}
	if got := a.result(nil); got != nil {
		t.Fatalf("result(nil) without a failure=%v", got)
	}
}
