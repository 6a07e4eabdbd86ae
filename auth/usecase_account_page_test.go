package auth_test

import (
	"strings"
	"testing"
	"time"

	"latchkey/auth"
)

// TestAccountFormToken: the account page's CSRF token works in the
// browser it was made for, for AccountFormLifetime; another browser's,
// an expired one, one from the future, a tampered or malformed one, and
// any without a browser cookie are ErrStaleForm.
func TestAccountFormToken(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const browser = "browser-secret-0123456789-0123456789"
	tok := ts.AccountFormToken(browser)
	if err := ts.CheckAccountForm(browser, tok); err != nil {
		t.Fatalf("a fresh token: %v", err)
	}
	ts.clock.Advance(auth.AccountFormLifetime)
	if err := ts.CheckAccountForm(browser, tok); err != nil {
		t.Fatalf("a token AccountFormLifetime old: %v", err)
	}
	now := ts.clock.Now()
	ts.clock.Set(now.Add(2 * time.Minute))
	future := ts.AccountFormToken(browser)
	ts.clock.Set(now)
	ts.clock.Advance(time.Second)
	later := ts.AccountFormToken(browser)
	at, mac, _ := strings.Cut(later, ".")
	for _, c := range []struct{ name, browser, token string }{
		{"expired", browser, tok},
		{"from the future", browser, future},
		{"another browser", "another-browser-secret-0123456789-01", later},
		{"no browser cookie", "", later},
		{"no token", browser, ""},
		{"malformed", browser, "abc"},
		{"time changed", browser, at + "1." + mac},
		{"hash changed", browser, at + "." + strings.ToUpper(mac)},
	} {
		if err := ts.CheckAccountForm(c.browser, c.token); err == nil || auth.AsError(err).Message != auth.ErrStaleForm.Message {
			t.Errorf("%s: %v, want ErrStaleForm", c.name, err)
		}
	}
	if err := ts.CheckAccountForm(browser, later); err != nil {
		t.Errorf("the later token: %v", err)
	}
}

// TestAccountSignInTarget: the sign-in pages take the account page as
// rd for a project without forward-auth (any other rd is refused
// there); the code signs in a session of method account.
func TestAccountSignInTarget(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	if _, err := ts.ForwardAuthSignInTarget(ctx, pid, "https://auth.example.com/elsewhere"); !auth.AsError(err).Is(auth.ErrAccessDenied) {
		t.Fatalf("another rd without forward-auth: %v, want ACCESS_DENIED", err)
	}
	rd := ts.OIDCIssuer(pid) + auth.AccountPath
	target, err := ts.ForwardAuthSignInTarget(ctx, pid, rd)
	if err != nil || target.RD != rd || target.CookieDomain != "" {
		t.Fatalf("the account page: %+v %v", target, err)
	}
	const addr = "acct-target@example.com"
	if err := ts.ForwardAuthSendCode(ctx, target, addr, ts.meta); err != nil {
		t.Fatal(err)
	}
	l, err := ts.ForwardAuthVerifyCode(ctx, target, addr, ts.otpCode(addr), ts.meta)
	if err != nil {
		t.Fatal(err)
	}
	if l.Session.Method != "account" || l.RefreshToken != "" {
		t.Errorf("session method %q, refresh %q: want account, none", l.Session.Method, l.RefreshToken)
	}
	pr, err := ts.AccountSession(ctx, pid, l.Token, true)
	if err != nil || pr.UserID != l.User.ID {
		t.Fatalf("AccountSession: %+v %v", pr, err)
	}
	if _, err := ts.AccountSession(ctx, "another-project", l.Token, false); !auth.AsError(err).Is(auth.ErrInvalidSession) {
		t.Errorf("another project's page: %v, want INVALID_SESSION", err)
	}
	ov, err := ts.AccountOverview(ctx, pr)
	if err != nil || ov.User.Email != addr || len(ov.Sessions) != 1 || ov.TOTP || len(ov.Passkeys) != 0 {
		t.Fatalf("overview %+v %v", ov, err)
	}
	opts, err := ts.AccountStepUpOptions(ctx, pr)
	if err != nil || opts != (auth.AccountStepUp{SignInAgain: true}) {
		t.Errorf("step-up of an account without factors: %+v %v, want sign in again only", opts, err)
	}
}

// TestAccountSessionSecondFactorPending: on an account with TOTP, a
// sign-in for the account page by the emailed code alone (whose cookie
// the pages set before they ask for the factor) does not open the page,
// for reading or for a change; the same session does once it proves the
// TOTP code.
func TestAccountSessionSecondFactorPending(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "acct-pending@example.com"
	_, pr := ts.signIn(addr)
	en, err := ts.EnrollTOTP(ctx, pr, ts.meta)
	if err != nil {
		t.Fatal(err)
	}
	ok(t, ts.VerifyTOTP(ctx, pr, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	ts.clock.Advance(time.Minute)

	pid := ts.project.ID
	target, err := ts.AccountSignInTarget(ctx, pid)
	if err != nil {
		t.Fatal(err)
	}
	ok(t, ts.ForwardAuthSendCode(ctx, target, addr, ts.meta))
	l, err := ts.ForwardAuthVerifyCode(ctx, target, addr, ts.otpCode(addr), ts.meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, write := range []bool{false, true} {
		if _, err := ts.AccountSession(ctx, pid, l.Token, write); !auth.AsError(err).Is(auth.ErrInvalidSession) {
			t.Errorf("write=%v with the second factor pending: %v, want INVALID_SESSION", write, err)
		}
	}
	mine := ts.principal(l)
	ok(t, ts.VerifyTOTP(ctx, mine, totpCode(t, en.Secret, ts.clock.Now()), ts.meta))
	if got, err := ts.AccountSession(ctx, pid, l.Token, true); err != nil || got.SessionID != l.Session.ID {
		t.Fatalf("after the TOTP code: %+v %v", got, err)
	}
}
