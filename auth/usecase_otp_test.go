package auth_test

import (
	"strings"
	"testing"
	"time"

	"latchkey/auth"
)

// TestOTPSignIn: a code is queued for the address (6 digits, 10
// minutes); its verify creates the user (isNewUser, user.registered,
// session.created) and a session whose token authenticates; the next
// sign-in finds the same user, and a device token presented back is
// kept. Each step is an event.
func TestOTPSignIn(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "new@example.com"
	ok(t, ts.SendOTP(ctx, ts.project, " New@Example.com ", ts.meta))
	m := ts.lastMail(addr, "otp")
	if len(m.Content.Code) != 6 || !isDigits(m.Content.Code) || m.Content.TTLSeconds != 600 || m.Content.Project != ts.project.Name {
		t.Fatalf("mail %+v, want a 6-digit code for 10 minutes naming the project", m)
	}
	wantEvent(t, ts.lastEvent(), "email_otp", "send", "", false)

	l, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: m.Content.Code}, ts.meta)
	ok(t, err)
	if !l.IsNewUser || l.User.Email != addr || l.Token == "" || l.DeviceToken == "" {
		t.Fatalf("login %+v, want a new user with a token and a device token", l)
	}
	pr := ts.principal(l)
	if pr.UserID != l.User.ID || pr.ProjectID != ts.project.ID {
		t.Fatalf("principal %+v of user %s", pr, l.User.ID)
	}
	wantEvent(t, ts.lastEvent(), "email_otp", "verify", "", true)
	if reg := ts.outbox("user.registered"); len(reg) != 1 || reg[0]["email"] != addr || reg[0]["user_id"] != l.User.ID {
		t.Fatalf("user.registered events %v", reg)
	}
	if created := ts.outbox("session.created"); len(created) != 1 || created[0]["method"] != "email_otp" {
		t.Fatalf("session.created events %v", created)
	}

	ts.clock.Advance(auth.SendInterval)
	ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	again, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: ts.otpCode(addr), DeviceToken: l.DeviceToken}, ts.meta)
	ok(t, err)
	if again.IsNewUser || again.User.ID != l.User.ID || again.DeviceToken != l.DeviceToken {
		t.Fatalf("second login %+v, want the same user and device", again)
	}
	if reg := ts.outbox("user.registered"); len(reg) != 1 {
		t.Fatalf("%d user.registered events after two sign-ins", len(reg))
	}
}

// TestOTPVerifyFailures: every way an email code fails, its answer and
// the category its event records.
func TestOTPVerifyFailures(t *testing.T) {
	t.Parallel()
	const addr = "guess@example.com"
	cases := []struct {
		name      string
		setup     func(ts *testService) string // returns the code to verify
		want      *auth.Error
		category  string
		message   string // substring of the answer's text, when it matters
		namesUser bool
	}{
		{"wrong code", func(ts *testService) string {
			ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
			return wrongCode(ts.otpCode(addr))
		}, auth.ErrInvalidCode, auth.CatInvalidCode, "Invalid code", false},
		{"none pending", func(ts *testService) string { return "123456" },
			auth.ErrInvalidCode, auth.CatInvalidCode, "No code is pending", false},
		{"expired", func(ts *testService) string {
			ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
			ts.clock.Advance(auth.OTPLifetime)
			return ts.otpCode(addr)
		}, auth.ErrCodeExpired, auth.CatExpired, "expired", false},
		{"locked after five tries", func(ts *testService) string {
			ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
			code := ts.otpCode(addr)
			for i := range auth.OTPMaxAttempts {
				_, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: wrongCode(code)}, ts.meta)
				e := wantErr(t, err, auth.ErrInvalidCode, auth.CatInvalidCode)
				if locked := strings.Contains(e.Message, "Too many attempts"); locked != (i == auth.OTPMaxAttempts-1) {
					t.Fatalf("try %d: %q", i+1, e.Message)
				}
			}
			return code // right, but too late
		}, auth.ErrCodeLocked, auth.CatRateLimited, "Too many attempts", false},
		{"empty code", func(ts *testService) string { return "" },
			auth.ErrValidation, auth.CatValidation, "code is required", false},
		{"letters", func(ts *testService) string { return "12ab56" },
			auth.ErrValidation, auth.CatValidation, "digits", false},
		{"disabled user", func(ts *testService) string {
			l, _ := ts.signIn(addr)
			ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
			code := ts.otpCode(addr)
			ok(t, ts.SetUserDisabled(ctx, l.User.ID, true))
			return code
		}, auth.ErrUserDisabled, auth.CatUserDisabled, "disabled", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestService(t)
			code := tc.setup(ts)
			l, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: code}, ts.meta)
			if l != nil {
				t.Fatalf("login %+v on a failure", l)
			}
			e := wantErr(t, err, tc.want, tc.category)
			if !strings.Contains(e.Message, tc.message) {
				t.Fatalf("message %q, want it to say %q", e.Message, tc.message)
			}
			wantEvent(t, ts.lastEvent(), "email_otp", "verify", tc.category, tc.namesUser)
			if u := ts.user(addr); !tc.namesUser && u != nil {
				t.Fatalf("a failure created user %+v", u)
			}
		})
	}
}

// wrongCode returns a 6-digit code other than code.
func wrongCode(code string) string {
	if code == "000000" {
		return "000001"
	}
	return "000000"
}

// TestOTPAddressFailCap: 50 wrong codes for one address within 24 hours,
// over many codes, lock every further code of that address (the locked
// text, even for the right code) while a magic link still signs in; a
// day after the failures the address's codes work again.
func TestOTPAddressFailCap(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "capped@example.com"
	failures := 0
	for failures < auth.AddressFailLimit {
		ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
		code := ts.otpCode(addr)
		for range auth.OTPMaxAttempts {
			_, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: wrongCode(code)}, ts.meta)
			wantErr(t, err, auth.ErrInvalidCode, auth.CatInvalidCode)
			failures++
		}
		// Past the send throttle (ten an hour) and the risk engine's
		// ten-minute window.
		ts.clock.Advance(7 * time.Minute)
	}
	ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	_, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: ts.otpCode(addr)}, ts.meta)
	wantErr(t, err, auth.ErrCodeLocked, auth.CatRateLimited)

	ok(t, ts.SendMagicLink(ctx, ts.project, addr, "", ts.meta))
	if _, err := ts.VerifyMagicLink(ctx, ts.linkToken(addr), "", ts.meta); err != nil {
		t.Fatalf("magic link while codes are capped: %v", err)
	}

	ts.clock.Advance(auth.AddressFailWindow)
	ts.signIn(addr)
}

// TestOTPSendThrottle: one code per 30 s and ten per hour per address,
// over it 429 TOO_MANY_REQUESTS with the wait; a refused send queues
// nothing and does not restart the window; addresses count apart.
func TestOTPSendThrottle(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "busy@example.com"
	ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	ts.clock.Advance(10 * time.Second)
	e := wantErr(t, ts.SendOTP(ctx, ts.project, addr, ts.meta), auth.ErrTooManyRequests, auth.CatRateLimited)
	if e.RetryAfter != 20*time.Second {
		t.Fatalf("retry after %v, want 20s", e.RetryAfter)
	}
	wantEvent(t, ts.lastEvent(), "email_otp", "send", auth.CatRateLimited, false)
	ok(t, ts.SendOTP(ctx, ts.project, "other@example.com", ts.meta))
	ts.clock.Advance(20 * time.Second)
	ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	for range auth.SendsPerHour - 2 {
		ts.clock.Advance(auth.SendInterval)
		ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	}
	if n := len(ts.mailTo(addr)); n != auth.SendsPerHour {
		t.Fatalf("%d messages queued, want %d", n, auth.SendsPerHour)
	}
	ts.clock.Advance(auth.SendInterval)
	wantErr(t, ts.SendOTP(ctx, ts.project, addr, ts.meta), auth.ErrTooManyRequests, auth.CatRateLimited)
	if n := len(ts.mailTo(addr)); n != auth.SendsPerHour {
		t.Fatalf("a refused send queued mail: %d messages", n)
	}
}

// TestOTPSendRefusals: a bad address is VALIDATION_ERROR, a disabled
// account USER_DISABLED, an address on the deny list RISK_BLOCKED; none
// queues mail.
func TestOTPSendRefusals(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	wantErr(t, ts.SendOTP(ctx, ts.project, "not an address", ts.meta), auth.ErrValidation, auth.CatValidation)
	l, _ := ts.signIn("off@example.com")
	ok(t, ts.SetUserDisabled(ctx, l.User.ID, true))
	before := len(ts.mailTo("off@example.com"))
	wantErr(t, ts.SendOTP(ctx, ts.project, "off@example.com", ts.meta), auth.ErrUserDisabled, auth.CatUserDisabled)
	wantEvent(t, ts.lastEvent(), "email_otp", "send", auth.CatUserDisabled, true)
	if n := len(ts.mailTo("off@example.com")); n != before {
		t.Fatal("a disabled account was sent a code")
	}
	p, err := ts.UpdateProject(ctx, ts.project.ID, auth.ProjectInput{DenyCIDRs: &[]string{"198.51.100.0/24"}})
	ok(t, err)
	wantErr(t, ts.SendOTP(ctx, p, "deny@example.com", ts.meta), auth.ErrRiskBlocked, auth.CatRiskBlocked)
	if n := len(ts.mailTo("deny@example.com")); n != 0 {
		t.Fatal("a denied address was sent a code")
	}
}

// TestOTPExternalUserID: otp/verify attaches an externalUserId to a user
// without one; one held by another user is 409 EXTERNAL_ID_CONFLICT, and
// for a new address nothing is created.
func TestOTPExternalUserID(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	verify := func(addr, ext string) (*auth.Login, error) {
		t.Helper()
		ts.clock.Advance(auth.SendInterval)
		ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
		return ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: ts.otpCode(addr), ExternalUserID: &ext}, ts.meta)
	}
	l, err := verify("a@example.com", "ext-a")
	ok(t, err)
	if l.User.ExternalUserID != "ext-a" {
		t.Fatalf("externalUserId %q, want ext-a", l.User.ExternalUserID)
	}
	_, err = verify("b@example.com", "ext-a")
	wantErr(t, err, auth.ErrExternalIDConflict, auth.CatUserExists)
	if u := ts.user("b@example.com"); u != nil {
		t.Fatalf("the conflict created user %+v", u)
	}
	_, err = verify("a@example.com", "ext-other")
	wantErr(t, err, auth.ErrExternalIDMismatch, auth.CatUserExists)
	wantEvent(t, ts.lastEvent(), "email_otp", "verify", auth.CatUserExists, true)
}
