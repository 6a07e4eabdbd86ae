package auth_test

import (
	"testing"
	"time"

	"latchkey/auth"
)

// TestRiskBlocksVelocity: more than 30 failed verifications from one end-user address
// within 10 minutes block its further verifications for 15 minutes (403
// RISK_BLOCKED, whatever the credential; recorded as risk_blocked), not
// another address's, and not a known device's; without a known end-user
// address the count is the account's instead. (Failures naming no user
// past ten a minute are counted, not stored: the clock moves a minute
// before the event looked at.)
func TestRiskBlocksVelocity(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	const addr = "target@example.com"
	l, _ := ts.signIn(addr)
	attacker := auth.Meta{IP: "203.0.113.66", EndUserIP: true, UserAgent: "bot"}
	ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	code := ts.otpCode(addr)
	for range auth.RiskMaxFailures + 1 {
		_, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: "other@example.com", Code: "123456"}, attacker)
		wantErr(t, err, auth.ErrInvalidCode, "")
	}
	ts.clock.Advance(time.Minute) // past the suppression of failures naming no user
	_, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: code}, attacker)
	wantErr(t, err, auth.ErrRiskBlocked, auth.CatRiskBlocked)
	wantEvent(t, ts.lastEvent(), "email_otp", "verify", auth.CatRiskBlocked, false)

	withDevice := attacker
	withDevice.DeviceToken = l.DeviceToken
	if _, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: code}, withDevice); err != nil {
		t.Fatalf("a known device from a blocked address: %v", err)
	}
	ts.clock.Advance(auth.SendInterval)
	ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	neighbour := auth.Meta{IP: "203.0.113.67", EndUserIP: true}
	if _, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: ts.otpCode(addr)}, neighbour); err != nil {
		t.Fatalf("another address: %v", err)
	}
	ts.clock.Advance(auth.RiskBlockFor)
	_, err = ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: "other@example.com", Code: "123456"}, attacker)
	wantErr(t, err, auth.ErrInvalidCode, auth.CatInvalidCode)

	// The app's backend (no end-user address): the account is counted.
	for range auth.RiskMaxFailures + 1 {
		_, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: "acct@example.com", Code: "123456"}, ts.meta)
		wantErr(t, err, auth.ErrInvalidCode, "")
	}
	_, err = ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: "acct@example.com", Code: "123456"}, ts.meta)
	wantErr(t, err, auth.ErrRiskBlocked, auth.CatRiskBlocked)
	ts.clock.Advance(auth.SendInterval)
	ok(t, ts.SendOTP(ctx, ts.project, addr, ts.meta))
	if _, err := ts.VerifyOTP(ctx, ts.project, auth.OTPInput{Email: addr, Code: ts.otpCode(addr)}, ts.meta); err != nil {
		t.Fatalf("another account from the same backend: %v", err)
	}
}
