package auth_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"latchkey/auth"
)

var backupCodeShape = regexp.MustCompile(`^[A-HJKMNP-Z2-9]{5}-[A-HJKMNP-Z2-9]{5}$`)

// TestBackupCodes: a batch is 10 codes of two groups of 5 without
// look-alikes (backup_codes.generated); a code signs in once, whatever
// its case and hyphen, by email or externalUserId; a new batch
// invalidates the whole previous one.
func TestBackupCodes(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "backup@example.com"
	l, pr := ts.signIn(addr)
	codes, err := ts.GenerateBackupCodes(ctx, pr, ts.meta)
	ok(t, err)
	if len(codes) != auth.BackupBatchSize {
		t.Fatalf("%d codes, want %d", len(codes), auth.BackupBatchSize)
	}
	for _, c := range codes {
		if !backupCodeShape.MatchString(c) {
			t.Fatalf("code %q is not XXXXX-XXXXX without look-alikes", c)
		}
	}
	wantEvent(t, ts.lastEvent(), "backup_code", "generate", "", true)
	if got := ts.outbox("backup_codes.generated"); len(got) != 1 || got[0]["user_id"] != l.User.ID {
		t.Fatalf("backup_codes.generated events %v", got)
	}

	verify := func(in auth.BackupInput) (*auth.Login, error) {
		return ts.VerifyBackupCode(ctx, ts.project, in, ts.meta)
	}
	sloppy := strings.ToLower(strings.Replace(codes[0], "-", "", 1))
	got, err := verify(auth.BackupInput{Email: ptr(addr), Code: sloppy})
	ok(t, err)
	if got.User.ID != l.User.ID || got.IsNewUser {
		t.Fatalf("backup login %+v, want user %s", got, l.User.ID)
	}
	ts.principal(got)
	wantEvent(t, ts.lastEvent(), "backup_code", "verify", "", true)
	_, err = verify(auth.BackupInput{Email: ptr(addr), Code: codes[0]})
	wantErr(t, err, auth.ErrInvalidCode, auth.CatAlreadyUsed)

	// By externalUserId too.
	ts.clock.Advance(auth.SendInterval)
	ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	_, err = ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: ts.otpCode(addr), ExternalUserID: ptr("ext-backup")}, ts.meta)
	ok(t, err)
	_, err = verify(auth.BackupInput{ExternalUserID: ptr("ext-backup"), Code: codes[1]})
	ok(t, err)

	fresh, err := ts.GenerateBackupCodes(ctx, pr, ts.meta)
	ok(t, err)
	_, err = verify(auth.BackupInput{Email: ptr(addr), Code: codes[2]})
	wantErr(t, err, auth.ErrInvalidCode, auth.CatInvalidCode)
	_, err = verify(auth.BackupInput{Email: ptr(addr), Code: fresh[2]})
	ok(t, err)
}

// TestBackupCodeLockout: five failures of one identifier within 15
// minutes answer 401 INVALID_CODE, every further try 429
// TOO_MANY_ATTEMPTS with the wait (the right code too), until the oldest
// failure leaves the window. An unknown address answers exactly as a
// known one.
func TestBackupCodeLockout(t *testing.T) {
	t.Parallel()
	for _, known := range []bool{true, false} {
		name := map[bool]string{true: "known address", false: "unknown address"}[known]
		t.Run(name, func(t *testing.T) {
			ts := newTestService(t)
			const addr = "locked@example.com"
			var right string
			if known {
				_, pr := ts.signIn(addr)
				codes, err := ts.GenerateBackupCodes(ctx, pr, ts.meta)
				ok(t, err)
				right = codes[0]
			}
			category := map[bool]string{true: auth.CatInvalidCode, false: auth.CatUserNotFound}[known]
			for range auth.BackupMaxFailures {
				_, err := ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(addr), Code: "AAAAA-AAAAA"}, ts.meta)
				wantErr(t, err, auth.ErrInvalidCode, category)
				ts.clock.Advance(time.Minute)
			}
			try := "AAAAA-AAAAA"
			if known {
				try = right
			}
			_, err := ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(addr), Code: try}, ts.meta)
			e := wantErr(t, err, auth.ErrTooManyAttempts, auth.CatRateLimited)
			if want := auth.BackupFailWindow - 5*time.Minute; e.RetryAfter != want {
				t.Fatalf("retry after %v, want %v", e.RetryAfter, want)
			}
			wantEvent(t, ts.lastEvent(), "backup_code", "verify", auth.CatRateLimited, known)
			ts.clock.Advance(e.RetryAfter)
			_, err = ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(addr), Code: try}, ts.meta)
			if known {
				ok(t, err)
			} else {
				wantErr(t, err, auth.ErrInvalidCode, auth.CatUserNotFound)
			}
		})
	}
}

// TestBackupCodeInput: both or neither identifier, and a malformed code,
// are VALIDATION_ERROR and count no failure.
func TestBackupCodeInput(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	for _, in := range []auth.BackupInput{
		{Code: "AAAAA-AAAAA"},
		{Email: ptr("a@example.com"), ExternalUserID: ptr("x"), Code: "AAAAA-AAAAA"},
		{Email: ptr("a@example.com"), Code: ""},
		{Email: ptr("a@example.com"), Code: "AAAAA AAAAA"},
		{ExternalUserID: ptr(""), Code: "AAAAA-AAAAA"},
	} {
		for range auth.BackupMaxFailures + 1 {
			_, err := ts.VerifyBackupCode(ctx, ts.project, in, ts.meta)
			wantErr(t, err, auth.ErrValidation, auth.CatValidation)
		}
	}
	_, err := ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr("a@example.com"), Code: "AAAAA-AAAAA"}, ts.meta)
	wantErr(t, err, auth.ErrInvalidCode, auth.CatUserNotFound)
}

// totpCode is the authenticator's code for secret at t.
func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCode(secret, at)
	ok(t, err)
	return c
}

// TestTOTPEnrollAndVerify: enrolling gives a secret, its otpauth URL and
// QR image; the first right code enrolls (totp.enrolled), later ones
// are step-ups; a code is accepted once; enrolling again is 409; a user
// without TOTP gets 404 TOTP_NOT_ENROLLED.
func TestTOTPEnrollAndVerify(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	l, pr := ts.signIn("totp@example.com")
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	if en.Secret == "" || !strings.HasPrefix(en.OtpauthURL, "otpauth://totp/") || !strings.HasPrefix(en.QRCodeDataURL, "data:image/png;base64,") {
		t.Fatalf("enrollment %+v", en)
	}
	wantEvent(t, ts.lastEvent(), "totp", "enroll", "", true)
	code := totpCode(t, en.Secret, ts.clock.Now())
	ok(t, ts.VerifyTOTP(ctx, pr, code, ts.meta))
	wantEvent(t, ts.lastEvent(), "totp", "verify", "", true)
	if got := ts.outbox("totp.enrolled"); len(got) != 1 || got[0]["user_id"] != l.User.ID {
		t.Fatalf("totp.enrolled events %v", got)
	}
	wantErr(t, ts.VerifyTOTP(ctx, pr, code, ts.meta), auth.ErrVerificationFailed, auth.CatAlreadyUsed)
	ts.clock.Advance(30 * time.Second)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	if got := ts.outbox("totp.enrolled"); len(got) != 1 {
		t.Fatalf("a step-up emitted totp.enrolled again: %d", len(got))
	}
	_, err = ts.EnrollTOTP(ctx, pr, ts.meta)
	wantErr(t, err, auth.ErrAlreadyEnrolled, auth.CatValidation)

	_, other := ts.signIn("none@example.com")
	wantErr(t, ts.VerifyTOTP(ctx, other, "123456", ts.meta), auth.ErrTOTPNotEnrolled, auth.CatUserNotFound)
	wantErr(t, ts.VerifyTOTP(ctx, other, "", ts.meta), auth.ErrValidation, auth.CatValidation)
}

// TestTOTPLockout: ten wrong codes lock TOTP for 15 minutes (the right
// code too, same 401 VERIFICATION_FAILED, category rate_limited); after
// that the right code works. A backup-code login clears failures short
// of a lockout, and an admin reset clears a lockout.
func TestTOTPLockout(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "lock@example.com"
	_, pr := ts.signIn(addr)
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	wrong := func(n int) {
		t.Helper()
		for range n {
			right := totpCode(t, en.Secret, ts.clock.Now())
			wantErr(t, ts.VerifyTOTP(ctx, pr, wrongCode(right), ts.meta), auth.ErrVerificationFailed, auth.CatInvalidCode)
		}
	}
	now := func() string { ts.clock.Advance(30 * time.Second); return totpCode(t, en.Secret, ts.clock.Now()) }

	wrong(auth.TOTPMaxFailures)
	wantErr(t, ts.VerifyTOTP(ctx, pr, now(), ts.meta), auth.ErrVerificationFailed, auth.CatRateLimited)
	ts.clock.Advance(auth.TOTPLockout)
	ok(t, ts.VerifyTOTP(ctx, pr, now(), ts.meta))

	// Nine failures, a backup-code login, nine more: no lockout.
	codes, err := ts.GenerateBackupCodes(ctx, pr, ts.meta)
	ok(t, err)
	ts.clock.Advance(30 * time.Second)
	wrong(auth.TOTPMaxFailures - 1)
	_, err = ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(addr), Code: codes[0]}, ts.meta)
	ok(t, err)
	wrong(auth.TOTPMaxFailures - 1)
	ok(t, ts.VerifyTOTP(ctx, pr, now(), ts.meta))

	wrong(auth.TOTPMaxFailures)
	u := ts.user(addr)
	ok(t, ts.ResetTOTP(ctx, u.ID, ts.meta))
	wantEvent(t, ts.lastEvent(), "totp", "reset", "", true)
	ok(t, ts.VerifyTOTP(ctx, pr, now(), ts.meta))
	wantErr(t, ts.ResetTOTP(ctx, "no-such-user", ts.meta), auth.ErrUserNotFound, "")
}

// TestSMSEnrollAndStepUp: a texted code enrolls the phone
// (sms.enrolled); later sends without a phone go to it; another phone
// needs a step-up on this session within 10 minutes (403
// STEP_UP_REQUIRED otherwise), and its code replaces the enrolled phone.
func TestSMSEnrollAndStepUp(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	l, pr := ts.signIn("sms@example.com")
	const phone, other = "+15551230001", "+15551230002"
	ctx := t.Context()
	wantErr(t, ts.SendSMSCode(ctx, pr, "", ts.meta), auth.ErrValidation, auth.CatValidation) // none enrolled yet
	ok(t, ts.SendSMSCode(ctx, pr, phone, ts.meta))
	wantEvent(t, ts.lastEvent(), "sms", "send", "", true)
	ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode(phone), ts.meta))
	wantEvent(t, ts.lastEvent(), "sms", "verify", "", true)
	if got := ts.outbox("sms.enrolled"); len(got) != 1 || got[0]["user_id"] != l.User.ID {
		t.Fatalf("sms.enrolled events %v", got)
	}

	ts.clock.Advance(auth.SMSSendInterval)
	ok(t, ts.SendSMSCode(ctx, pr, "", ts.meta))
	ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode(phone), ts.meta)) // the enrolled phone's code: a step-up
	if got := ts.outbox("sms.enrolled"); len(got) != 1 {
		t.Fatalf("the enrolled phone's code emitted sms.enrolled again: %d", len(got))
	}
	ts.clock.Advance(auth.StepUpWindow + time.Second)
	wantErr(t, ts.SendSMSCode(ctx, pr, other, ts.meta), auth.ErrStepUpRequired, auth.CatRiskBlocked)
	if m, _ := ts.sms.last(); m.to == other {
		t.Fatal("a phone without step-up was texted")
	}

	// Nor can that session enroll TOTP, which would be a step-up of its
	// own making; the enrolled phone's code is one.
	_, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	ok(t, ts.SendSMSCode(ctx, pr, "", ts.meta))
	ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode(phone), ts.meta))
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta)) // enrolls it
	ts.clock.Advance(auth.StepUpWindow + time.Second)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta)) // the step-up
	ok(t, ts.SendSMSCode(ctx, pr, other, ts.meta))
	ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode(other), ts.meta))
	if got := ts.outbox("sms.enrolled"); len(got) != 2 {
		t.Fatalf("%d sms.enrolled events, want 2 (the new phone replaces the old)", len(got))
	}
	ts.clock.Advance(auth.SMSSendInterval)
	ok(t, ts.SendSMSCode(ctx, pr, "", ts.meta))
	ts.smsCode(other)
}

// TestSMSFailures: codes that fail (wrong, too many tries, expired, none
// pending: 401 VERIFICATION_FAILED under their categories), a bad
// phone, the send throttle, and a provider that fails (502 SEND_FAILED,
// no code stored, the throttle slot given back) or is missing.
func TestSMSFailures(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	_, pr := ts.signIn("smsfail@example.com")
	ctx := t.Context()
	const phone = "+15551230003"
	wantErr(t, ts.VerifySMSCode(ctx, pr, "123456", ts.meta), auth.ErrVerificationFailed, auth.CatInvalidCode)
	wantErr(t, ts.SendSMSCode(ctx, pr, "5551230003", ts.meta), auth.ErrValidation, auth.CatValidation)

	ok(t, ts.SendSMSCode(ctx, pr, phone, ts.meta))
	code := ts.smsCode(phone)
	for range auth.SMSMaxAttempts {
		wantErr(t, ts.VerifySMSCode(ctx, pr, wrongCode(code), ts.meta), auth.ErrVerificationFailed, auth.CatInvalidCode)
	}
	wantErr(t, ts.VerifySMSCode(ctx, pr, code, ts.meta), auth.ErrVerificationFailed, auth.CatRateLimited)

	ts.clock.Advance(10 * time.Second)
	e := wantErr(t, ts.SendSMSCode(ctx, pr, phone, ts.meta), auth.ErrTooManyRequests, auth.CatRateLimited)
	if e.RetryAfter != 20*time.Second {
		t.Fatalf("retry after %v, want 20s", e.RetryAfter)
	}
	ts.clock.Advance(20 * time.Second)
	ok(t, ts.SendSMSCode(ctx, pr, phone, ts.meta))
	code = ts.smsCode(phone)
	ts.clock.Advance(auth.SMSLifetime)
	wantErr(t, ts.VerifySMSCode(ctx, pr, code, ts.meta), auth.ErrVerificationFailed, auth.CatExpired)

	// The session is more than 10 minutes old now, and the phone is not
	// enrolled yet: texting it needs a fresh sign-in (TestStepUpMatrix).
	_, pr = ts.signIn("smsfail@example.com")
	_, sent := ts.sms.last()
	ts.sms.failing(errors.New("provider down"))
	wantErr(t, ts.SendSMSCode(ctx, pr, phone, ts.meta), auth.ErrSendFailed, auth.CatInternal)
	wantEvent(t, ts.lastEvent(), "sms", "send", auth.CatInternal, true)
	ts.sms.failing(nil)
	ok(t, ts.SendSMSCode(ctx, pr, phone, ts.meta)) // the failed send's slot was given back
	if _, n := ts.sms.last(); n != sent+1 {
		t.Fatalf("%d texts, want %d", n, sent+1)
	}

	none := newTestService(t, func(c *auth.Config) { c.SMS = nil })
	_, pr = none.signIn("nosms@example.com")
	wantErr(t, none.SendSMSCode(ctx, pr, phone, none.meta), auth.ErrSendFailed, auth.CatInternal)
}
