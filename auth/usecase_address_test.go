package auth_test

import (
	"testing"

	"latchkey/auth"
)

// TestAddressChangeVerified: PATCH /user {email} in a "verify" project
// keeps the address and mails a code to the new one; its confirmation
// switches the address (user.updated, emailVerified), mails a notice to
// the old one and the user signs in by the new address.
func TestAddressChangeVerified(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const old, new = "old@example.com", "new@example.com"
	l, pr := ts.signIn(old)
	up, err := ts.UpdateUser(ctx, pr, auth.UserPatch{Email: ptr(new)}, ts.meta)
	ok(t, err)
	if up.User.Email != old || up.PendingEmail != new {
		t.Fatalf("update %+v, want %s kept and %s pending", up, old, new)
	}
	wantEvent(t, ts.lastEvent(), "email_change", "send", "", true)
	if got := ts.outbox("user.updated"); len(got) != 0 {
		t.Fatalf("user.updated before the confirmation: %v", got)
	}
	code := ts.lastMail(new, "email_change").Content.Code

	wantErr(t, ts.verifyAddress(pr, wrongCode(code)), auth.ErrInvalidCode, auth.CatInvalidCode)
	wantEvent(t, ts.lastEvent(), "email_change", "verify", auth.CatInvalidCode, true)
	u, err := ts.VerifyAddress(ctx, pr, code, ts.meta)
	ok(t, err)
	if u.Email != new || u.EmailVerified == nil || !*u.EmailVerified || u.ID != l.User.ID {
		t.Fatalf("user %+v, want %s verified", u, new)
	}
	if e := ts.lastEvent(); e.Email == nil || *e.Email != new {
		t.Fatalf("confirmation event %+v, want it to name the new address", e)
	}
	if got := ts.outbox("user.updated"); len(got) != 1 || got[0]["email"] != new {
		t.Fatalf("user.updated events %v", got)
	}
	ts.lastMail(old, "email_changed_notice")
	if again, _ := ts.signIn(new); again.User.ID != l.User.ID {
		t.Fatal("signing in by the new address found another user")
	}
	wantErr(t, ts.verifyAddress(pr, code), auth.ErrInvalidCode, auth.CatInvalidCode) // used up
}

func (ts *testService) verifyAddress(pr *auth.Principal, code string) error {
	_, err := ts.VerifyAddress(ctx, pr, code, ts.meta)
	return err
}

// TestAddressChangeRefusals: an address another user holds is 409
// EMAIL_IN_USE at the change and, if taken meanwhile, at the
// confirmation; codes expire and lock after five tries as email codes
// do; nothing pending is 401.
func TestAddressChangeRefusals(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	_, pr := ts.signIn("me@example.com")
	ts.signIn("taken@example.com")
	_, err := ts.UpdateUser(ctx, pr, auth.UserPatch{Email: ptr("taken@example.com")}, ts.meta)
	wantErr(t, err, auth.ErrEmailInUse, auth.CatValidation)
	wantErr(t, ts.verifyAddress(pr, "123456"), auth.ErrInvalidCode, auth.CatInvalidCode)

	_, err = ts.UpdateUser(ctx, pr, auth.UserPatch{Email: ptr("later@example.com")}, ts.meta)
	ok(t, err)
	code := ts.lastMail("later@example.com", "email_change").Content.Code
	ts.signIn("later@example.com") // someone takes it meanwhile
	wantErr(t, ts.verifyAddress(pr, code), auth.ErrEmailInUse, auth.CatValidation)

	ts.clock.Advance(auth.SendInterval)
	_, err = ts.UpdateUser(ctx, pr, auth.UserPatch{Email: ptr("slow@example.com")}, ts.meta)
	ok(t, err)
	code = ts.lastMail("slow@example.com", "email_change").Content.Code
	ts.clock.Advance(auth.OTPLifetime)
	wantErr(t, ts.verifyAddress(pr, code), auth.ErrCodeExpired, auth.CatExpired)

	// The session is more than 10 minutes old now: a change of address
	// needs a fresh one (TestStepUpMatrix).
	_, pr = ts.signIn("me@example.com")
	_, err = ts.UpdateUser(ctx, pr, auth.UserPatch{Email: ptr("guess@example.com")}, ts.meta)
	ok(t, err)
	code = ts.lastMail("guess@example.com", "email_change").Content.Code
	for range auth.OTPMaxAttempts {
		wantErr(t, ts.verifyAddress(pr, wrongCode(code)), auth.ErrInvalidCode, auth.CatInvalidCode)
	}
	wantErr(t, ts.verifyAddress(pr, code), auth.ErrCodeLocked, auth.CatRateLimited)
	_, err = ts.UpdateUser(ctx, pr, auth.UserPatch{}, ts.meta)
	wantErr(t, err, auth.ErrValidation, auth.CatValidation)
}

// TestAddressChangeDirect: in a project with emailChange "direct" the
// address changes at once, unverified, with user.updated.
func TestAddressChangeDirect(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	p, err := ts.UpdateProject(ctx, ts.project.ID, auth.ProjectInput{EmailChange: ptr(auth.EmailChangeDirect)})
	ok(t, err)
	ts.project = p
	_, pr := ts.signIn("before@example.com")
	up, err := ts.UpdateUser(ctx, pr, auth.UserPatch{Email: ptr("after@example.com"), FirstName: ptr("Ada")}, ts.meta)
	ok(t, err)
	if up.User.Email != "after@example.com" || up.PendingEmail != "" || up.User.FirstName != "Ada" ||
		up.User.EmailVerified == nil || *up.User.EmailVerified {
		t.Fatalf("update %+v, want the new address at once, unverified", up.User)
	}
	e := ts.lastEvent()
	wantEvent(t, e, "email_change", "update", "", true)
	if e.Email == nil || *e.Email != "after@example.com" {
		t.Fatalf("event names %v, want the new address", e.Email)
	}
	if got := ts.outbox("user.updated"); len(got) != 1 || got[0]["email"] != "after@example.com" {
		t.Fatalf("user.updated events %v", got)
	}
}

// TestAddressProof: a user proves their current address with a code
// mailed to it (SendAddressCode) and VerifyAddress marks it verified;
// the send counts against the address's send throttle.
func TestAddressProof(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "prove@example.com"
	_, pr := ts.signIn(addr)
	ok(t, ts.SendAddressCode(ctx, pr, ts.meta))
	wantEvent(t, ts.lastEvent(), "email_verify", "send", "", true)
	u, err := ts.VerifyAddress(ctx, pr, ts.lastMail(addr, "email_change").Content.Code, ts.meta)
	ok(t, err)
	if u.Email != addr || u.EmailVerified == nil || !*u.EmailVerified {
		t.Fatalf("user %+v, want %s verified", u, addr)
	}
	wantEvent(t, ts.lastEvent(), "email_verify", "verify", "", true)
	wantErr(t, ts.SendAddressCode(ctx, pr, ts.meta), auth.ErrTooManyRequests, auth.CatRateLimited)
}
