package auth_test

import (
	"testing"
	"time"

	"latchkey/auth"
)

// TestRemoveTOTP: the session user removes their enrolled authenticator
// app with recent authentication (totp.removed, an event totp/remove);
// a stale session of the account is refused (403 STEP_UP_REQUIRED,
// recorded, the app kept) until it proves the app again; without an
// enrolled app (none, already removed, or only pending, which stays)
// it is 404 TOTP_NOT_ENROLLED; another user's session removes nothing
// of this one's.
func TestRemoveTOTP(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	l, pr := ts.signIn("remove-totp@example.com")
	enroll := func(pr *auth.Principal) string {
		t.Helper()
		en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
		ok(t, err)
		ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
		return en.Secret
	}
	secret := enroll(pr)

	// A stale session: refused and recorded; the app stays.
	ts.clock.Advance(auth.StepUpWindow + time.Minute)
	wantErr(t, ts.RemoveTOTP(ctx, pr, ts.meta), auth.ErrStepUpRequired, auth.CatRiskBlocked)
	wantEvent(t, ts.lastEvent(), "totp", "remove", auth.CatRiskBlocked, true)
	if got := ts.outbox("totp.removed"); len(got) != 0 {
		t.Fatalf("a refused removal emitted %v", got)
	}
	// Another user's fresh session has no app to remove, and this one's stays.
	_, stranger := ts.signIn("stranger-totp@example.com")
	wantErr(t, ts.RemoveTOTP(ctx, stranger, ts.meta), auth.ErrTOTPNotEnrolled, auth.CatUserNotFound)
	ov, err := ts.AccountOverview(ctx, pr)
	ok(t, err)
	if !ov.TOTP {
		t.Fatal("the app went with a refused removal")
	}

	// The app's code steps up; then the removal goes through.
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, secret, ts.clock.Now()), ts.meta))
	ok(t, ts.RemoveTOTP(ctx, pr, ts.meta))
	wantEvent(t, ts.lastEvent(), "totp", "remove", "", true)
	if got := ts.outbox("totp.removed"); len(got) != 1 || got[0]["user_id"] != l.User.ID || len(got[0]) != 1 {
		t.Fatalf("totp.removed events %v, want one {user_id}", got)
	}
	if ov, err = ts.AccountOverview(ctx, pr); err != nil || ov.TOTP {
		t.Fatalf("after the removal: TOTP %v, %v", ov != nil && ov.TOTP, err)
	}
	ts.clock.Advance(30 * time.Second)
	wantErr(t, ts.VerifyTOTP(ctx, pr, totpCode(t, secret, ts.clock.Now()), ts.meta), auth.ErrTOTPNotEnrolled, "")
	wantErr(t, ts.RemoveTOTP(ctx, pr, ts.meta), auth.ErrTOTPNotEnrolled, auth.CatUserNotFound)

	// A pending enrolment is not an app to remove: it stays, and its
	// first code enrolls it.
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	wantErr(t, ts.RemoveTOTP(ctx, pr, ts.meta), auth.ErrTOTPNotEnrolled, auth.CatUserNotFound)
	ts.clock.Advance(30 * time.Second)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	if got := ts.outbox("totp.enrolled"); len(got) != 2 {
		t.Fatalf("%d totp.enrolled events, want 2", len(got))
	}
}

// TestAccountStepUpOptionsSMS: an account with a phone enrolled is
// offered the phone's code as step-up (with its last two digits only),
// besides its authenticator app, and no new sign-in.
func TestAccountStepUpOptionsSMS(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	_, pr := ts.signIn("stepup-sms@example.com")
	const phone = "+15551230047"
	ok(t, ts.SendSMSCode(ctx, pr, phone, ts.meta))
	ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode(phone), ts.meta))
	opts, err := ts.AccountStepUpOptions(ctx, pr)
	if err != nil || opts != (auth.AccountStepUp{SMS: true, PhoneEnding: "47"}) {
		t.Fatalf("step-up of an account with a phone: %+v %v", opts, err)
	}
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	opts, err = ts.AccountStepUpOptions(ctx, pr)
	if err != nil || opts != (auth.AccountStepUp{TOTP: true, SMS: true, PhoneEnding: "47"}) {
		t.Fatalf("step-up of an account with a phone and an app: %+v %v", opts, err)
	}
}
