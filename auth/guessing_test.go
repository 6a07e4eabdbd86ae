package auth

import (
	"bytes"
	"latchkey/internal/testkit"
	"testing"
	"time"

	"latchkey/store"
)

// TestTOTPLockoutDurations: each run of 10 consecutive failures locks
// twice as long as the run before, from 15 minutes up to 24 hours; other
// failure counts start no lockout.
func TestTOTPLockoutDurations(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "computes lockout durations")
	for _, c := range []struct {
		failures int
		want     time.Duration
	}{
		{0, 0}, {1, 0}, {9, 0}, {11, 0},
		{10, 15 * time.Minute}, {20, 30 * time.Minute}, {30, time.Hour}, {40, 2 * time.Hour},
		{50, 4 * time.Hour}, {60, 8 * time.Hour}, {70, 16 * time.Hour}, {80, 24 * time.Hour}, {90, 24 * time.Hour},
	} {
		if got := totpLockout(c.failures); got != c.want {
			t.Errorf("totpLockout(%d)=%v, want %v", c.failures, got, c.want)
		}
	}
}

// TestTOTPEscalationAndCap drives VerifyTOTP without HTTP: the failure
// count survives a lockout, each run locks longer, the 100th consecutive
// failure locks until clearTOTPFailures (a backup-code login) or
// ResetTOTP, and tries while locked count nothing.
func TestTOTPEscalationAndCap(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	secret := bytes.Repeat([]byte{3}, 20)
	f.putEnrolled(secret) // the runs take longer than a pending one lives
	wrong := func() string {
		for _, c := range []string{"000000", "111111", "222222", "333333"} {
			if c != f.code(secret, -1) && c != f.code(secret, 0) && c != f.code(secret, 1) {
				return c
			}
		}
		t.Fatal("no wrong code")
		return ""
	}
	for run := 1; run <= TOTPFailureCap/TOTPMaxFailures; run++ {
		for i := 0; i < TOTPMaxFailures; i++ {
			wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, wrong(), Meta{}), "VERIFICATION_FAILED", CatInvalidCode)
		}
		fa := f.factor()
		if fa.Failures != run*TOTPMaxFailures {
			t.Fatalf("run %d: failures=%d", run, fa.Failures)
		}
		if run < TOTPFailureCap/TOTPMaxFailures && !fa.LockedUntil.Equal(f.now.Add(totpLockout(fa.Failures))) {
			t.Fatalf("run %d: locked until %v, want %v later", run, fa.LockedUntil, totpLockout(fa.Failures))
		}
		wantErr(t, f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, 0), Meta{}), "VERIFICATION_FAILED", CatRateLimited)
		if got := f.factor().Failures; got != run*TOTPMaxFailures {
			t.Fatalf("a try while locked counted: %d", got)
		}
		f.now = f.now.Add(TOTPMaxLockout)
	}
	f.now = f.now.Add(365 * 24 * time.Hour)
	err := f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, 0), Meta{})
	wantErr(t, err, "VERIFICATION_FAILED", CatRateLimited)
	if err.(*Error).Message != errTOTPCapped.Message {
		t.Fatalf("message %q, want the capped text", err.(*Error).Message)
	}

	if err := f.db.Update(ctx, func(tx store.Tx) error { return clearTOTPFailures(tx, f.u.ID) }); err != nil {
		t.Fatal(err)
	}
	if fa := f.factor(); fa.Failures != 0 || !fa.LockedUntil.IsZero() || fa.Secret == nil {
		t.Fatalf("after clearing: %+v", fa)
	}
	if err := f.svc.VerifyTOTP(ctx, f.pr, f.code(secret, 0), Meta{}); err != nil {
		t.Fatalf("after clearing: %v", err)
	}

	// ResetTOTP does the same for the operator, and says what is missing.
	f.now = f.now.Add(time.Minute)
	for i := 0; i < TOTPMaxFailures; i++ {
		f.svc.VerifyTOTP(ctx, f.pr, wrong(), Meta{})
	}
	if err := f.svc.ResetTOTP(ctx, f.u.ID, Meta{}); err != nil {
		t.Fatal(err)
	}
	if fa := f.factor(); fa.Failures != 0 || !fa.LockedUntil.IsZero() || fa.Status != factorEnrolled {
		t.Fatalf("after reset: %+v", fa)
	}
	if c := f.categories("reset"); c[""] != 1 {
		t.Fatalf("reset events %v", c)
	}
	wantErr(t, f.svc.ResetTOTP(ctx, "no-such-user", Meta{}), "USER_NOT_FOUND", CatUserNotFound)
	other, _ := f.signIn(f.project(), "other@example.com")
	wantErr(t, f.svc.ResetTOTP(ctx, other.ID, Meta{}), "TOTP_NOT_ENROLLED", CatUserNotFound)
}

// TestAddressGuessLog: the failed-guess history keeps the rolling 24
// hours only, locks at 50, and keeps its row from the hourly sweep for
// the whole window.
func TestAddressGuessLog(t *testing.T) {
	t.Parallel()
	f := newTOTPFixture(t)
	start := f.now
	fail := func(n int) {
		t.Helper()
		err := f.db.Update(ctx, func(tx store.Tx) error {
			for i := 0; i < n; i++ {
				g, err := addressGuesses(tx, "p", "a@example.com", f.now)
				if err != nil {
					return err
				}
				if err := g.fail(tx, "p", "a@example.com", f.now); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	locked := func() bool {
		t.Helper()
		var l bool
		f.db.View(ctx, func(tx store.Tx) error {
			g, err := addressGuesses(tx, "p", "a@example.com", f.now)
			if err != nil {
				t.Fatal(err)
			}
			l = g.locked()
			return nil
		})
		return l
	}
	fail(AddressFailLimit - 1)
	if locked() {
		t.Fatal("locked at 49 failures")
	}
	f.now = start.Add(23 * time.Hour)
	// The sweep keeps the history (its KeepUntil is a day after the
	// newest failure).
	if err := f.db.Update(ctx, func(tx store.Tx) error { _, err := tx.SweepExpired(store.ExpiringCodes, f.now, 1000); return err }); err != nil {
		t.Fatal(err)
	}
	fail(1)
	if !locked() {
		t.Fatal("not locked at 50 failures in 24 hours")
	}
	f.now = start.Add(AddressFailWindow)
	if locked() {
		t.Fatal("still locked once 49 of the failures are 24 hours old")
	}
}

// project returns the fixture user's project.
func (f *totpFixture) project() *store.Project {
	f.t.Helper()
	p, err := f.svc.Project(ctx, f.u.ProjectID)
	if err != nil {
		f.t.Fatal(err)
	}
	return p
}
