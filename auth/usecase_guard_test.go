package auth_test

import (
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/passkeytest"
	"latchkey/store"
)

// The ways around recent authentication that an outside review found,
// each closed: removing the factor that guards the account, a pending
// TOTP enrolment planted before the account had a factor, backup codes
// made before it, ceremonies started before it, and guessing the
// enrolled phone's codes without end.

// passkeyCount returns how many passkeys userID has.
func (ts *testService) passkeyCount(userID string) int {
	ts.t.Helper()
	pks, err := ts.Passkeys(ctx, ts.project.ID, userID)
	ok(ts.t, err)
	return len(pks)
}

// passkeySignIn signs acc in with its passkey and returns the session.
func (ts *testService) passkeySignIn(addr string, authn *passkeytest.Authenticator) *auth.Principal {
	ts.t.Helper()
	cer, err := ts.BeginPasskeyLogin(ctx, ts.project, addr, ts.meta)
	ok(ts.t, err)
	assertion, _, err := authn.Get(cer.Options)
	ok(ts.t, err)
	l, err := ts.FinishPasskeyLogin(ctx, ts.project, cer.ChallengeID, assertion, ts.meta)
	ok(ts.t, err)
	return ts.principal(l)
}

// TestRemovingAPasskeyNeedsStepUp: on a passkey-only account, a fresh
// email-code session (the mailbox alone) may not remove the passkey: it
// would leave the account without a factor, where that same session
// would then pass every check. 403 STEP_UP_REQUIRED comes before the
// credential is looked up (an unknown one is 403 too, not 404), is
// recorded, and removes nothing; the account stays guarded. A session
// that signed in with the passkey may remove it (and an unknown one is
// 404 there). The app's own call (DeletePasskey, with an API key) has
// no session to check.
func TestRemovingAPasskeyNeedsStepUp(t *testing.T) {
	ts := newTestService(t)
	const addr = "pk@example.com"
	_, owner := ts.signIn(addr)
	authn, spare := passkeytest.New(passkeyOrigin), passkeytest.New(passkeyOrigin)
	ok(t, ts.addPasskey(owner, authn))
	ok(t, ts.addPasskey(owner, spare))
	ts.clock.Advance(time.Hour)

	_, att := ts.signIn(addr) // the mailbox only
	pks, err := ts.Passkeys(ctx, ts.project.ID, att.UserID)
	ok(t, err)
	for _, id := range []string{pks[0].CredentialID, "no-such-credential"} {
		err := ts.DeleteSessionPasskey(ctx, att, id, ts.meta)
		wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
		wantEvent(t, ts.lastEvent(), "passkey", "remove", auth.CatRiskBlocked, true)
	}
	if n := ts.passkeyCount(att.UserID); n != 2 {
		t.Fatalf("%d passkeys after refused removals, want 2", n)
	}
	_, err = ts.UpdateUser(ctx, att, auth.UserPatch{Email: ptr("evil@example.net")}, ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	if got := ts.outbox("passkey.removed"); len(got) != 0 {
		t.Fatalf("passkey.removed sent for a refused removal: %v", got)
	}

	// A passkey sign-in proves the factor: that session may remove one.
	pr := ts.passkeySignIn(addr, spare)
	err = ts.DeleteSessionPasskey(ctx, pr, "no-such-credential", ts.meta)
	wantErr(t, err, auth.ErrPasskeyNotFound, "")
	ok(t, ts.DeleteSessionPasskey(ctx, pr, pks[0].CredentialID, ts.meta))
	wantEvent(t, ts.lastEvent(), "passkey", "remove", "", true)
	if n := ts.passkeyCount(att.UserID); n != 1 {
		t.Fatalf("%d passkeys, want 1", n)
	}
	// The app's call, with its key.
	ok(t, ts.DeletePasskey(ctx, ts.project.ID, att.UserID, pks[1].CredentialID, ts.meta))
	if n := ts.passkeyCount(att.UserID); n != 0 {
		t.Fatalf("%d passkeys, want none", n)
	}
}

// TestPendingTOTPPlantedBeforeAFactor performs the planted-TOTP attack:
// a mailbox-only session enrolls TOTP while the account has no factor
// and keeps the secret; the owner later adds a passkey; a month later a
// fresh email-code session confirms the old enrolment, which was a
// proof of TOTP and opened every check. Now the passkey dropped the
// pending enrolment (and it would have expired anyway): 404
// TOTP_NOT_ENROLLED, and the account's checks hold.
func TestPendingTOTPPlantedBeforeAFactor(t *testing.T) {
	ts := newTestService(t)
	const addr = "plant@example.com"
	_, att := ts.signIn(addr)
	planted, err := ts.EnrollTOTP(ctx, att, ts.meta)
	ok(t, err)
	ts.clock.Advance(time.Minute)
	_, owner := ts.signIn(addr)
	ok(t, ts.addPasskey(owner, passkeytest.New(passkeyOrigin)))

	for _, later := range []time.Duration{time.Minute, 30 * 24 * time.Hour} {
		ts.clock.Advance(later)
		_, att2 := ts.signIn(addr)
		err = ts.VerifyTOTP(ctx, att2, totpCode(t, planted.Secret, ts.clock.Now()), ts.meta)
		wantErr(t, err, auth.ErrTOTPNotEnrolled, auth.CatUserNotFound)
		_, err = ts.GenerateBackupCodes(ctx, att2, ts.meta)
		wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
		_, err = ts.UpdateUser(ctx, att2, auth.UserPatch{Email: ptr("evil2@example.net")}, ts.meta)
		wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	}
}

// TestPendingTOTPLifetime: a pending enrolment can be confirmed for
// TOTPPendingLifetime after it was made; then it is gone (the operator
// no longer sees it; 404 TOTP_NOT_ENROLLED, category expired, the row
// deleted: the next try finds no enrolment at all), and enrolling again
// starts a new one.
func TestPendingTOTPLifetime(t *testing.T) {
	ts := newTestService(t)
	_, pr := ts.signIn("life@example.com")
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	if d, err := ts.AdminUserDetail(ctx, pr.UserID, 1); err != nil || d.TOTP == nil || d.TOTP.Status != "pending" {
		t.Fatalf("the operator sees TOTP %+v (err %v), want pending", d.TOTP, err)
	}
	ts.clock.Advance(auth.TOTPPendingLifetime)
	if d, err := ts.AdminUserDetail(ctx, pr.UserID, 1); err != nil || d.TOTP != nil {
		t.Fatalf("the operator sees an expired enrolment: %+v (err %v)", d.TOTP, err)
	}
	err = ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta)
	wantErr(t, err, auth.ErrTOTPNotEnrolled, auth.CatExpired)
	wantEvent(t, ts.lastEvent(), "totp", "verify", auth.CatExpired, true)
	err = ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta)
	wantErr(t, err, auth.ErrTOTPNotEnrolled, auth.CatUserNotFound)

	_, pr = ts.signIn("life@example.com")
	en, err = ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	ts.clock.Advance(auth.TOTPPendingLifetime - time.Second)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	if got := ts.outbox("totp.enrolled"); len(got) != 1 {
		t.Fatalf("%d totp.enrolled events, want 1", len(got))
	}
}

// TestPendingTOTPCheckedAtVerify: confirming a pending enrolment adds a
// way in, so the verifying session needs recent authentication as of
// the enrolment, by the account's factors as they are at the verify. On
// a passkey account a fresh email-code session may not confirm one
// that a passkey session made (403 STEP_UP_REQUIRED, no try counted,
// the enrolment kept); on an account without factors, a session whose
// sign-in was more than 10 minutes before the enrolment may not either;
// the session that enrolled may.
func TestPendingTOTPCheckedAtVerify(t *testing.T) {
	ts := newTestService(t)
	// A passkey account.
	const addr = "verify@example.com"
	_, owner := ts.signIn(addr)
	authn := passkeytest.New(passkeyOrigin)
	ok(t, ts.addPasskey(owner, authn))
	ts.clock.Advance(time.Hour)
	pk := ts.passkeySignIn(addr, authn)
	en, err := ts.EnrollTOTP(ctx, pk, ts.meta)
	ok(t, err)
	_, mail := ts.signIn(addr)
	err = ts.VerifyTOTP(ctx, mail, totpCode(t, en.Secret, ts.clock.Now()), ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	wantEvent(t, ts.lastEvent(), "totp", "verify", auth.CatRiskBlocked, true)
	ok(t, ts.VerifyTOTP(ctx, pk, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))

	// An account without factors.
	const plain = "verify-plain@example.com"
	_, old := ts.signIn(plain)
	ts.clock.Advance(auth.StepUpWindow)
	_, fresh := ts.signIn(plain)
	en, err = ts.EnrollTOTP(ctx, fresh, ts.meta)
	ok(t, err)
	err = ts.VerifyTOTP(ctx, old, totpCode(t, en.Secret, ts.clock.Now()), ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	// The enrolling session, 9 minutes later (its sign-in is 9 minutes
	// and a few seconds old: what counts is the enrolment's time).
	ts.clock.Advance(9 * time.Minute)
	ok(t, ts.VerifyTOTP(ctx, fresh, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
}

// TestFactorChangeDropsPendingTOTP: a phone enrolled, a passkey added or
// a passkey removed while a TOTP enrolment is pending drops it (404
// TOTP_NOT_ENROLLED at the verify); an enrolled TOTP stays.
func TestFactorChangeDropsPendingTOTP(t *testing.T) {
	ts := newTestService(t)
	changes := []struct {
		name   string
		change func(pr *auth.Principal, n int)
	}{
		{"phone enrolled", func(pr *auth.Principal, n int) {
			phone := "+1555777000" + string(rune('0'+n))
			ok(t, ts.SendSMSCode(ctx, pr, phone, ts.meta))
			ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode(phone), ts.meta))
		}},
		{"passkey added", func(pr *auth.Principal, _ int) {
			ok(t, ts.addPasskey(pr, passkeytest.New(passkeyOrigin)))
		}},
		{"passkey removed", func(pr *auth.Principal, _ int) {
			pks, err := ts.Passkeys(ctx, ts.project.ID, pr.UserID)
			ok(t, err)
			ok(t, ts.DeleteSessionPasskey(ctx, pr, pks[0].CredentialID, ts.meta))
		}},
	}
	for n, c := range changes {
		_, pr := ts.signIn("drop" + string(rune('0'+n)) + "@example.com")
		if c.name == "passkey removed" {
			ok(t, ts.addPasskey(pr, passkeytest.New(passkeyOrigin)))
		}
		en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
		ok(t, err)
		c.change(pr, n)
		err = ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta)
		wantErr(t, err, auth.ErrTOTPNotEnrolled, auth.CatUserNotFound)
	}

	// Enrolled, it stays.
	_, pr := ts.signIn("keep@example.com")
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	ok(t, ts.addPasskey(pr, passkeytest.New(passkeyOrigin)))
	ts.clock.Advance(30 * time.Second)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
}

// TestFirstFactorEndsOldBackupCodes: backup codes made while the account
// had no factor stop working when it gets its first one (TOTP, a phone
// or a passkey): a mailbox-only session could have made them, and a
// backup-code sign-in counts as the factors' recovery. A batch made
// afterwards works; a second factor leaves the batch alone.
func TestFirstFactorEndsOldBackupCodes(t *testing.T) {
	ts := newTestService(t)
	first := []struct {
		name   string
		enroll func(pr *auth.Principal)
	}{
		{"totp", func(pr *auth.Principal) {
			en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
			ok(t, err)
			ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
		}},
		{"sms", func(pr *auth.Principal) {
			ok(t, ts.SendSMSCode(ctx, pr, "+15557770101", ts.meta))
			ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode("+15557770101"), ts.meta))
		}},
		{"passkey", func(pr *auth.Principal) {
			ok(t, ts.addPasskey(pr, passkeytest.New(passkeyOrigin)))
		}},
	}
	backup := func(addr, code string) error {
		_, err := ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(addr), Code: code}, ts.meta)
		return err
	}
	for _, f := range first {
		addr := "first-" + f.name + "@example.com"
		_, pr := ts.signIn(addr)
		old, err := ts.GenerateBackupCodes(ctx, pr, ts.meta)
		ok(t, err)
		f.enroll(pr)
		wantErr(t, backup(addr, old[0]), auth.ErrInvalidCode, auth.CatInvalidCode)
		codes, err := ts.GenerateBackupCodes(ctx, pr, ts.meta) // the enrolment proved the factor
		ok(t, err)
		ok(t, backup(addr, codes[0]))
	}

	// A second factor: the batch stays.
	acc := ts.setUpAccount("second@example.com", factors{totp: true}, 7)
	l, err := ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(acc.addr), Code: acc.backup[0]}, ts.meta)
	ok(t, err)
	ok(t, ts.addPasskey(ts.principal(l), passkeytest.New(passkeyOrigin)))
	ok(t, backup(acc.addr, acc.backup[1]))
}

// TestCeremoniesCheckedAgainAtFinish performs the start-before-the-guard
// attack: a mailbox-only session starts adding a passkey, texts a code
// to its own phone and asks for a new address while the account has no
// factor; the owner enrolls TOTP a minute later; the session then
// finishes all three. Now each finish checks again, against the
// account's factors as they are: 403 STEP_UP_REQUIRED, nothing added or
// moved, the SMS and address codes kept (an owner could step up and
// finish). The owner's session, which proved TOTP, cannot finish them
// either: a challenge or code belongs to the session that started it.
func TestCeremoniesCheckedAgainAtFinish(t *testing.T) {
	ts := newTestService(t)
	const addr = "race@example.com"
	_, att := ts.signIn(addr)
	attAuthn := passkeytest.New(passkeyOrigin)
	cer, err := ts.BeginPasskeyRegistration(ctx, ts.project, att, "", ts.meta)
	ok(t, err)
	const attPhone = "+15550009999"
	ok(t, ts.SendSMSCode(ctx, att, attPhone, ts.meta))
	smsc := ts.smsCode(attPhone)
	_, err = ts.UpdateUser(ctx, att, auth.UserPatch{Email: ptr("evil3@example.net")}, ts.meta)
	ok(t, err)
	mailc := ts.lastMail("evil3@example.net", "email_change").Content.Code

	ts.clock.Advance(time.Minute)
	_, owner := ts.signIn(addr)
	en, err := ts.EnrollTOTP(ctx, owner, ts.meta)
	ok(t, err)
	ok(t, ts.VerifyTOTP(ctx, owner, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	ts.clock.Advance(time.Minute)

	cred, _, err := attAuthn.Create(cer.Options)
	ok(t, err)
	// Another session's challenge: not the owner's to finish.
	_, err = ts.FinishPasskeyRegistration(ctx, ts.project, owner, cer.ChallengeID, cred, ts.meta)
	wantErr(t, err, auth.ErrChallengeExpired, auth.CatExpired)
	_, err = ts.FinishPasskeyRegistration(ctx, ts.project, att, cer.ChallengeID, cred, ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	wantEvent(t, ts.lastEvent(), "passkey", "register", auth.CatRiskBlocked, true)
	if n := ts.passkeyCount(att.UserID); n != 0 {
		t.Fatalf("%d passkeys, want none", n)
	}

	err = ts.VerifySMSCode(ctx, att, smsc, ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	wantEvent(t, ts.lastEvent(), "sms", "verify", auth.CatRiskBlocked, true)
	// The owner may text a new phone, but not with this session's code.
	err = ts.VerifySMSCode(ctx, owner, smsc, ts.meta)
	wantErr(t, err, auth.ErrVerificationFailed, auth.CatInvalidCode)
	if got := ts.outbox("sms.enrolled"); len(got) != 0 {
		t.Fatalf("a phone was enrolled: %v", got)
	}

	_, err = ts.VerifyAddress(ctx, att, mailc, ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	wantEvent(t, ts.lastEvent(), "email_change", "verify", auth.CatRiskBlocked, true)
	_, err = ts.VerifyAddress(ctx, owner, mailc, ts.meta)
	wantErr(t, err, auth.ErrInvalidCode, auth.CatInvalidCode)
	if u := ts.user(addr); u == nil {
		t.Fatal("the address was changed")
	}

	// The session that started them may finish once it proved TOTP
	// (a proof since the start counts).
	ok(t, ts.VerifyTOTP(ctx, att, totpCode(t, en.Secret, ts.clock.Now().Add(30*time.Second)), ts.meta))
	ok(t, ts.VerifySMSCode(ctx, att, smsc, ts.meta))
	u, err := ts.VerifyAddress(ctx, att, mailc, ts.meta)
	ok(t, err)
	if u.Email != "evil3@example.net" {
		t.Fatalf("address %s after the confirmed change", u.Email)
	}
}

// TestCeremonyFinishUsesStartTime: on an account without factors,
// ceremonies started 9 minutes after the sign-in finish 12 minutes
// after it: each finish checks the session's proofs as of the
// ceremony's start (or made since), so what passed at the start passes
// at the finish unless the account got a factor meanwhile that the
// session has not proven. Here the session's own phone, enrolled by the
// first finish, is such a factor, proven by that finish.
func TestCeremonyFinishUsesStartTime(t *testing.T) {
	ts := newTestService(t)
	_, pr := ts.signIn("slow@example.com")
	ts.clock.Advance(9 * time.Minute)
	cer, err := ts.BeginPasskeyRegistration(ctx, ts.project, pr, "", ts.meta)
	ok(t, err)
	ok(t, ts.SendSMSCode(ctx, pr, "+15557770202", ts.meta))
	_, err = ts.UpdateUser(ctx, pr, auth.UserPatch{Email: ptr("slow2@example.com")}, ts.meta)
	ok(t, err)
	mailc := ts.lastMail("slow2@example.com", "email_change").Content.Code
	ts.clock.Advance(3 * time.Minute)
	ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode("+15557770202"), ts.meta))
	// Now the account has a phone, proven by this session just now.
	cred, _, err := passkeytest.New(passkeyOrigin).Create(cer.Options)
	ok(t, err)
	_, err = ts.FinishPasskeyRegistration(ctx, ts.project, pr, cer.ChallengeID, cred, ts.meta)
	ok(t, err)
	_, err = ts.VerifyAddress(ctx, pr, mailc, ts.meta)
	ok(t, err)
}

// enrolledSMS returns userID's SMS factor.
func (ts *testService) enrolledSMS(userID string) *store.Factor {
	ts.t.Helper()
	var f *store.Factor
	err := ts.db.View(ctx, func(tx store.Tx) error {
		var err error
		f, err = tx.Factor(userID, "sms")
		return err
	})
	ok(ts.t, err)
	return f
}

// TestSMSFailureCap: the enrolled phone's wrong codes count as TOTP's
// do, over all its codes: each run of 10 consecutive failures locks
// every try (the right code too, counting nothing) for TOTP's run
// lockout, and 100 lock SMS until a backup-code sign-in or ResetSMS; a
// right code resets the count. Wrong codes of another phone count
// only against their own code.
func TestSMSFailureCap(t *testing.T) {
	ts := newTestService(t)
	acc := ts.setUpAccount("smscap@example.com", factors{sms: true}, 11)
	_, pr := ts.signIn(acc.addr)
	uid := pr.UserID
	// fail sends a code to the enrolled phone and answers it wrong
	// until its five tries are used (or n failures are made); it
	// returns the code.
	fail := func(n int) string {
		t.Helper()
		ts.clock.Advance(auth.SMSSendInterval)
		ok(t, ts.SendSMSCode(ctx, pr, "", ts.meta))
		code := ts.smsCode(acc.phone)
		wrong := "000000"
		if code == wrong {
			wrong = "111111"
		}
		for i := 0; i < n; i++ {
			wantErr(t, ts.VerifySMSCode(ctx, pr, wrong, ts.meta), auth.ErrVerificationFailed, auth.CatInvalidCode)
		}
		return code
	}
	fail(auth.SMSMaxAttempts)
	code := fail(auth.SMSMaxFailures - auth.SMSMaxAttempts - 1)
	ok(t, ts.VerifySMSCode(ctx, pr, code, ts.meta)) // 9 failures, then a success
	if f := ts.enrolledSMS(uid); f.Failures != 0 {
		t.Fatalf("failures %d after a right code", f.Failures)
	}

	for run := 1; run <= auth.SMSFailureCap/auth.SMSMaxFailures; run++ {
		fail(auth.SMSMaxAttempts)
		code := fail(auth.SMSMaxAttempts)
		f := ts.enrolledSMS(uid)
		if f.Failures != run*auth.SMSMaxFailures {
			t.Fatalf("run %d: failures %d", run, f.Failures)
		}
		err := ts.VerifySMSCode(ctx, pr, code, ts.meta) // right, but locked
		wantErr(t, err, auth.ErrVerificationFailed, auth.CatRateLimited)
		if run == 1 && !f.LockedUntil.Equal(ts.clock.Now().Add(auth.TOTPLockout)) {
			t.Fatalf("first run locked until %v, want %v from now", f.LockedUntil, auth.TOTPLockout)
		}
		if ts.enrolledSMS(uid).Failures != f.Failures {
			t.Fatal("a try while locked counted")
		}
		ts.clock.Advance(auth.TOTPMaxLockout)
	}
	ts.clock.Advance(365 * 24 * time.Hour)
	code = fail(0)
	err := ts.VerifySMSCode(ctx, pr, code, ts.meta)
	if e := wantErr(t, err, auth.ErrVerificationFailed, auth.CatRateLimited); e.Message != "Too many failed attempts. Sign in with a backup code to use SMS again." {
		t.Fatalf("capped message %q", e.Message)
	}

	// A backup-code sign-in lifts it.
	_, err = ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(acc.addr), Code: acc.backup[0]}, ts.meta)
	ok(t, err)
	ok(t, ts.VerifySMSCode(ctx, pr, code, ts.meta))

	// So does the operator's reset, recorded; it says what is missing.
	for range auth.SMSMaxFailures / auth.SMSMaxAttempts {
		fail(auth.SMSMaxAttempts)
	}
	if f := ts.enrolledSMS(uid); f.Failures != auth.SMSMaxFailures || f.LockedUntil.IsZero() {
		t.Fatalf("not locked: %+v", f)
	}
	ok(t, ts.ResetSMS(ctx, uid, ts.meta))
	wantEvent(t, ts.lastEvent(), "sms", "reset", "", true)
	if f := ts.enrolledSMS(uid); f.Failures != 0 || !f.LockedUntil.IsZero() || f.Phone != acc.phone {
		t.Fatalf("after the reset: %+v", f)
	}
	ok(t, ts.VerifySMSCode(ctx, pr, fail(0), ts.meta))
	wantErr(t, ts.ResetSMS(ctx, "no-such-user", ts.meta), auth.ErrUserNotFound, "")
	_, other := ts.signIn("nosms@example.com")
	wantErr(t, ts.ResetSMS(ctx, other.UserID, ts.meta), auth.ErrSMSNotEnrolled, "")

	// Another phone's wrong codes are that code's own.
	l, err := ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(acc.addr), Code: acc.backup[1]}, ts.meta)
	ok(t, err)
	rec := ts.principal(l)
	ts.clock.Advance(auth.SMSSendInterval)
	ok(t, ts.SendSMSCode(ctx, rec, "+15557770303", ts.meta))
	wrong := "000000"
	if ts.smsCode("+15557770303") == wrong {
		wrong = "111111"
	}
	for range auth.SMSMaxAttempts {
		wantErr(t, ts.VerifySMSCode(ctx, rec, wrong, ts.meta), auth.ErrVerificationFailed, auth.CatInvalidCode)
	}
	if f := ts.enrolledSMS(uid); f.Failures != 0 {
		t.Fatalf("another phone's failures counted on the factor: %d", f.Failures)
	}
}
