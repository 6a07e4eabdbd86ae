package auth_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/auth/passkeytest"
)

// factors are the ways into an account a test sets up besides its
// address (every account also gets a batch of backup codes).
type factors struct{ totp, sms, passkey bool }

func (f factors) String() string {
	var parts []string
	for _, p := range []struct {
		on   bool
		name string
	}{{f.totp, "TOTP"}, {f.sms, "SMS"}, {f.passkey, "passkey"}} {
		if p.on {
			parts = append(parts, p.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

// guarded: an account whose recent authentication must be one of its
// factors (or a backup-code sign-in).
func (f factors) guarded() bool { return f.totp || f.sms || f.passkey }

// stepUpAccount is an account set up for TestStepUpMatrix.
type stepUpAccount struct {
	addr, phone, secret string
	backup              []string
	authn               *passkeytest.Authenticator
	method              string // the project's external method
	methodSecret        string
}

// passkeyOrigin is the test service's origin (its base URL's): the
// relying party of its passkeys.
const passkeyOrigin = "https://auth.example.com"

// setUpAccount signs addr in by email code and gives the account the
// factors f and then a batch of backup codes (each allowed: the setup
// session is fresh, then has proven each factor it enrolls; codes made
// before the first factor would not survive it).
func (ts *testService) setUpAccount(addr string, f factors, n int) *stepUpAccount {
	ts.t.Helper()
	t := ts.t
	acc := &stepUpAccount{addr: addr, phone: fmt.Sprintf("+1555123%04d", n), authn: passkeytest.New(passkeyOrigin)}
	_, pr := ts.signIn(addr)
	defer func() {
		codes, err := ts.GenerateBackupCodes(ctx, pr, ts.meta)
		ok(t, err)
		acc.backup = codes
		ts.clock.Advance(auth.SMSSendInterval + time.Second) // past the SMS and TOTP steps used
	}()
	if f.passkey {
		ok(t, ts.addPasskey(pr, acc.authn))
	}
	if f.totp {
		en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
		ok(t, err)
		acc.secret = en.Secret
		ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t.(*testing.T), en.Secret, ts.clock.Now()), ts.meta))
	}
	if f.sms {
		ok(t, ts.SendSMSCode(ctx, pr, acc.phone, ts.meta))
		ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode(acc.phone), ts.meta))
	}
	return acc
}

// addPasskey registers a passkey of authn for the session pr.
func (ts *testService) addPasskey(pr *auth.Principal, authn *passkeytest.Authenticator) error {
	ts.t.Helper()
	cer, err := ts.BeginPasskeyRegistration(ctx, ts.project, pr, "", ts.meta)
	if err != nil {
		return err
	}
	cred, _, err := authn.Create(cer.Options)
	ok(ts.t, err)
	_, err = ts.FinishPasskeyRegistration(ctx, ts.project, pr, cer.ChallengeID, cred, ts.meta)
	ok(ts.t, err)
	return nil
}

// sessionKind is how a session of TestStepUpMatrix was proven.
type sessionKind struct {
	name string
	// needs is the factor the account must have for this session.
	needs func(factors) bool
	// open makes the session (advancing the clock as it goes).
	open func(ts *testService, acc *stepUpAccount) *auth.Login
	// amr is what the session shows; recent that it counts as recent
	// authentication on a guarded account.
	amr    []string
	recent bool
}

var sessionKinds = []sessionKind{
	{name: "fresh email code", amr: []string{"otp"},
		open: func(ts *testService, acc *stepUpAccount) *auth.Login { l, _ := ts.signIn(acc.addr); return l }},
	{name: "fresh magic link", amr: []string{"link"},
		open: func(ts *testService, acc *stepUpAccount) *auth.Login {
			ok(ts.t, ts.SendMagicLink(ctx, ts.project, acc.addr, "", ts.meta))
			l, err := ts.VerifyMagicLink(ctx, ts.linkToken(acc.addr), "", ts.meta)
			ok(ts.t, err)
			return l
		}},
	{name: "fresh external confirm", amr: []string{"external"},
		open: func(ts *testService, acc *stepUpAccount) *auth.Login {
			raw, sig := signed(ts.t.(*testing.T), acc.methodSecret, ts.confirmation("ext-"+acc.addr, acc.method, acc.addr))
			l, err := ts.ConfirmExternal(ctx, ts.project, raw, sig, ts.meta)
			ok(ts.t, err)
			return l.Login
		}},
	{name: "email code 11 minutes old", amr: []string{"otp"},
		open: func(ts *testService, acc *stepUpAccount) *auth.Login {
			l, _ := ts.signIn(acc.addr)
			ts.clock.Advance(auth.StepUpWindow + time.Minute)
			return l
		}},
	{name: "fresh passkey", amr: []string{"passkey"}, recent: true,
		needs: func(f factors) bool { return f.passkey },
		open: func(ts *testService, acc *stepUpAccount) *auth.Login {
			cer, err := ts.BeginPasskeyLogin(ctx, ts.project, acc.addr, ts.meta)
			ok(ts.t, err)
			assertion, _, err := acc.authn.Get(cer.Options)
			ok(ts.t, err)
			l, err := ts.FinishPasskeyLogin(ctx, ts.project, cer.ChallengeID, assertion, ts.meta)
			ok(ts.t, err)
			return l
		}},
	{name: "TOTP step-up", amr: []string{"otp", "totp"}, recent: true,
		needs: func(f factors) bool { return f.totp },
		open: func(ts *testService, acc *stepUpAccount) *auth.Login {
			l, pr := ts.signIn(acc.addr)
			ok(ts.t, ts.VerifyTOTP(ctx, pr, totpCode(ts.t.(*testing.T), acc.secret, ts.clock.Now()), ts.meta))
			return l
		}},
	{name: "SMS step-up", amr: []string{"otp", "sms"}, recent: true,
		needs: func(f factors) bool { return f.sms },
		open: func(ts *testService, acc *stepUpAccount) *auth.Login {
			l, pr := ts.signIn(acc.addr)
			ok(ts.t, ts.SendSMSCode(ctx, pr, "", ts.meta))
			ok(ts.t, ts.VerifySMSCode(ctx, pr, ts.smsCode(acc.phone), ts.meta))
			return l
		}},
	{name: "backup-code sign-in", amr: []string{"backup_code"}, recent: true,
		open: func(ts *testService, acc *stepUpAccount) *auth.Login {
			l, err := ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(acc.addr), Code: acc.backup[0]}, ts.meta)
			ok(ts.t, err)
			return l
		}},
}

// stepUpAction is an action that needs recent authentication; each
// returns its error. None but the last (delete) changes what guards the
// account or what the session proved, so one session tries them all.
type stepUpAction struct {
	name string
	do   func(ts *testService, acc *stepUpAccount, pr *auth.Principal) error
}

var stepUpActions = []stepUpAction{
	{"generate backup codes", func(ts *testService, _ *stepUpAccount, pr *auth.Principal) error {
		_, err := ts.GenerateBackupCodes(ctx, pr, ts.meta)
		return err
	}},
	{"enroll TOTP", func(ts *testService, _ *stepUpAccount, pr *auth.Principal) error {
		_, err := ts.EnrollTOTP(ctx, pr, ts.meta)
		return err
	}},
	{"text a new phone", func(ts *testService, acc *stepUpAccount, pr *auth.Principal) error {
		return ts.SendSMSCode(ctx, pr, "+1555999"+acc.phone[len(acc.phone)-4:], ts.meta)
	}},
	{"add a passkey", func(ts *testService, _ *stepUpAccount, pr *auth.Principal) error {
		_, err := ts.BeginPasskeyRegistration(ctx, ts.project, pr, "", ts.meta)
		return err
	}},
	{"change the address", func(ts *testService, acc *stepUpAccount, pr *auth.Principal) error {
		_, err := ts.UpdateUser(ctx, pr, auth.UserPatch{Email: ptr("new-" + acc.addr)}, ts.meta)
		return err
	}},
	{"delete the account", func(ts *testService, _ *stepUpAccount, pr *auth.Principal) error {
		return ts.DeleteUser(ctx, pr)
	}},
}

// TestStepUpMatrix: who may do what. For each account (no factor, TOTP,
// SMS, a passkey, TOTP and SMS) and each way its session was proven, the
// session's amr and secondFactorPending, in its login result and read
// back; then each action that adds or moves a way in, allowed or 403
// STEP_UP_REQUIRED. On an account without factors a fresh proof of any
// kind is enough and an old session is not; on a guarded account only a
// proof by one of its own factors, or a backup-code sign-in, within 10
// minutes counts: never an email code, a magic link or an external
// confirm alone. A refusal changes nothing (the address, the account).
func TestStepUpMatrix(t *testing.T) {
	t.Parallel()
	accounts := []factors{{}, {totp: true}, {sms: true}, {passkey: true}, {totp: true, sms: true}}
	for _, f := range accounts {
		// Each kind of account on a service of its own, at once (the
		// sessions of one kind share its clock).
		t.Run(f.String(), func(t *testing.T) {
			t.Parallel()
			testStepUpMatrix(t, f)
		})
	}
}

// testStepUpMatrix is TestStepUpMatrix for the accounts guarded by f.
func testStepUpMatrix(t *testing.T, f factors) {
	ts := newTestService(t)
	m, err := ts.CreateMethod(ctx, ts.project.ID, "bank", "direct")
	ok(t, err)
	n := 0
	for _, kind := range sessionKinds {
		if kind.needs != nil && !kind.needs(f) {
			continue
		}
		n++
		t.Run(kind.name, func(t *testing.T) {
			ts.t = t
			acc := ts.setUpAccount(fmt.Sprintf("matrix%d@example.com", n), f, n)
			acc.method, acc.methodSecret = "bank", m.Secret
			l := kind.open(ts, acc)
			pr := ts.principal(l)
			// The login result shows the sign-in (a step-up came after it).
			signIn := kind.amr[:1]
			pending := (f.totp || f.sms) && signIn[0] != "backup_code"
			if got := l.AMR(); !slices.Equal(got, signIn) || l.SecondFactorPending() != pending {
				t.Fatalf("login result amr %v pending %v, want %v %v", got, l.SecondFactorPending(), signIn, pending)
			}
			pending = pending && !slices.Contains(kind.amr, "totp") && !slices.Contains(kind.amr, "sms")
			_, sp, err := ts.AuthenticateSessionProofs(ctx, "Bearer "+l.Token)
			ok(t, err)
			if !slices.Equal(sp.AMR, kind.amr) || sp.SecondFactorPending != pending {
				t.Fatalf("session amr %v pending %v, want %v %v", sp.AMR, sp.SecondFactorPending, kind.amr, pending)
			}

			old := strings.Contains(kind.name, "old")
			allowed := (!f.guarded() && !old) || (f.guarded() && kind.recent)
			for _, action := range stepUpActions {
				ts.clock.Advance(auth.SMSSendInterval) // past the SMS send throttle
				err := action.do(ts, acc, pr)
				switch {
				case !allowed:
					wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
				case action.name == "enroll TOTP" && f.totp:
					wantErr(t, err, auth.ErrAlreadyEnrolled, auth.CatValidation)
				default:
					if err != nil {
						t.Fatalf("%s: %v, want it allowed", action.name, err)
					}
				}
			}
			u := ts.user(acc.addr)
			if allowed && u != nil {
				t.Fatal("the account was not deleted")
			}
			if !allowed && (u == nil || u.Email != acc.addr) {
				t.Fatalf("a refused session changed the account: %+v", u)
			}
			if !allowed {
				if _, err := ts.EnrollTOTP(ctx, pr, ts.meta); err == nil || f.guarded() && !strings.Contains(err.Error(), "a TOTP code, a code sent to the enrolled phone or a passkey") {
					t.Fatalf("refusal %v, want it to name the account's factors", err)
				}
			}
		})
	}
	ts.t = t
}

// TestStepUpProofs: what proves a factor on a session, and when. A TOTP
// verify (the enrolling one too), an SMS verify (the enrolling one too,
// and a new phone's), a passkey registered from the session: each is a
// proof by that factor at that moment, kept in the order first proven
// and renewed in place; a proof counts for StepUpWindow from when it was
// last made. A session signed in by email on a TOTP account has its
// second factor pending until it proves TOTP or SMS.
func TestStepUpProofs(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "proofs@example.com"
	l, pr := ts.signIn(addr)
	// What a session check shows now: the store answers it from memory,
	// so every change below must show at once.
	proofsOf := func(l *auth.Login) auth.SessionProofs {
		t.Helper()
		_, sp, err := ts.AuthenticateSessionProofs(ctx, "Bearer "+l.Token)
		ok(t, err)
		return sp
	}
	proofs := func(amr []string, pending bool) {
		t.Helper()
		sp := proofsOf(l)
		if !slices.Equal(sp.AMR, amr) || sp.SecondFactorPending != pending {
			t.Fatalf("amr %v pending %v, want %v %v", sp.AMR, sp.SecondFactorPending, amr, pending)
		}
	}
	if !slices.Equal(l.AMR(), []string{"otp"}) || l.SecondFactorPending() {
		t.Fatalf("first sign-in amr %v pending %v", l.AMR(), l.SecondFactorPending())
	}
	proofs([]string{"otp"}, false)

	// A passkey registered from the session proves passkey.
	ok(t, ts.addPasskey(pr, passkeytest.New(passkeyOrigin)))
	proofs([]string{"otp", "passkey"}, false)

	// The enrolling TOTP verify proves totp; TOTP is the second factor
	// now, proven on this session.
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	ok(t, err)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	proofs([]string{"otp", "passkey", "totp"}, false)

	// Another email sign-in: pending, and not recent authentication.
	l2, pr2 := ts.signIn(addr)
	if !l2.SecondFactorPending() {
		t.Fatal("an email sign-in on a TOTP account is not pending")
	}
	_, err = ts.GenerateBackupCodes(ctx, pr2, ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)

	// The first session's proofs count for 10 minutes from when they
	// were made; a new TOTP code renews totp in place.
	ts.clock.Advance(auth.StepUpWindow)
	_, err = ts.GenerateBackupCodes(ctx, pr, ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	proofs([]string{"otp", "passkey", "totp"}, false)
	_, err = ts.GenerateBackupCodes(ctx, pr, ts.meta)
	ok(t, err)

	// The first SMS enrolment (allowed: totp is recent) proves sms.
	ok(t, ts.SendSMSCode(ctx, pr, "+15551230077", ts.meta))
	ok(t, ts.VerifySMSCode(ctx, pr, ts.smsCode("+15551230077"), ts.meta))
	proofs([]string{"otp", "passkey", "totp", "sms"}, false)

	// On the second session, the enrolled phone's code is a step-up
	// that ends the pending second factor and allows the changes.
	ts.clock.Advance(auth.SMSSendInterval)
	if sp := proofsOf(l2); !sp.SecondFactorPending {
		t.Fatalf("second session %+v, want pending", sp)
	}
	ok(t, ts.SendSMSCode(ctx, pr2, "", ts.meta))
	ok(t, ts.VerifySMSCode(ctx, pr2, ts.smsCode("+15551230077"), ts.meta))
	if sp := proofsOf(l2); sp.SecondFactorPending || !slices.Equal(sp.AMR, []string{"otp", "sms"}) {
		t.Fatalf("second session after SMS %+v", sp)
	}
	_, err = ts.GenerateBackupCodes(ctx, pr2, ts.meta)
	ok(t, err)
}

// TestBackupCodeDetour performs the attack of finding 1 without HTTP: an
// email-code session on a TOTP and SMS account cannot generate backup
// codes, so it cannot sign in with one and call that its second factor;
// the direct move of SMS to another phone is refused as before, with
// the phone's own words. A backup-code sign-in made with a code the
// owner holds may move it (recovery).
func TestBackupCodeDetour(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	acc := ts.setUpAccount("detour@example.com", factors{totp: true, sms: true}, 1)
	_, stolen := ts.signIn(acc.addr)
	err := ts.SendSMSCode(ctx, stolen, "+15559990002", ts.meta)
	if e := wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked); e.Message != "Verify with your current phone or another factor first." {
		t.Fatalf("message %q", e.Message)
	}
	_, err = ts.GenerateBackupCodes(ctx, stolen, ts.meta)
	wantErr(t, err, auth.ErrStepUpRequired, auth.CatRiskBlocked)
	wantEvent(t, ts.lastEvent(), "backup_code", "generate", auth.CatRiskBlocked, true)
	// The owner's codes still work; the attacker has none.
	l, err := ts.VerifyBackupCode(ctx, ts.project, auth.BackupInput{Email: ptr(acc.addr), Code: acc.backup[0]}, ts.meta)
	ok(t, err)
	ok(t, ts.SendSMSCode(ctx, ts.principal(l), "+15559990003", ts.meta))
}
