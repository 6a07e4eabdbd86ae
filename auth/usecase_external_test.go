package auth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"latchkey/auth"
)

// signed returns body as JSON and its signature by the method's secret
// (hex HMAC-SHA256 keyed by the secret as shown).
func signed(t *testing.T, secret string, body map[string]any) ([]byte, string) {
	t.Helper()
	raw, err := json.Marshal(body)
	ok(t, err)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(raw)
	return raw, hex.EncodeToString(mac.Sum(nil))
}

// confirmation is a Pattern A body verified at the clock's time.
func (ts *testService) confirmation(ext, method, email string) map[string]any {
	b := map[string]any{"externalUserId": ext, "method": method, "verifiedAt": ts.clock.Now().Format(time.RFC3339)}
	if email != "" {
		b["email"] = email
	}
	return b
}

// TestExternalConfirm: a signed confirmation creates the external user
// (verified address, isNewUser) and signs them in (session.created with
// method external:<name>); a later one needs no email and finds them.
func TestExternalConfirm(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	m, err := ts.CreateMethod(ctx, ts.project.ID, "bank", "direct")
	ok(t, err)
	if m.Secret == "" || m.Status != "active" {
		t.Fatalf("registration %+v", m)
	}
	raw, sig := signed(t, m.Secret, ts.confirmation("ext-1", "bank", "Ext@Example.com"))
	l, err := ts.ConfirmExternal(ctx, ts.project, raw, sig, ts.meta)
	ok(t, err)
	if !l.IsNewUser || l.ExternalUserID != "ext-1" || l.User.Email != "ext@example.com" || l.User.EmailVerified == nil || !*l.User.EmailVerified {
		t.Fatalf("login %+v user %+v, want a new verified external user", l, l.User)
	}
	ts.principal(l.Login)
	wantEvent(t, ts.lastEvent(), "external", "confirm", "", true)
	if got := ts.outbox("session.created"); len(got) != 1 || got[0]["method"] != "external:bank" {
		t.Fatalf("session.created events %v", got)
	}

	ts.clock.Advance(time.Second)
	raw, sig = signed(t, m.Secret, ts.confirmation("ext-1", "bank", ""))
	again, err := ts.ConfirmExternal(ctx, ts.project, raw, sig, ts.meta)
	ok(t, err)
	if again.IsNewUser || again.User.ID != l.User.ID {
		t.Fatalf("second confirm %+v, want the same user", again)
	}
}

// TestExternalConfirmFailures: the decided checks, each with its code;
// a refused confirmation changes nothing (no user, no replay mark).
func TestExternalConfirmFailures(t *testing.T) {
	t.Parallel()
	type fixture struct {
		ts              *testService
		direct, webhook auth.MethodView
	}
	cases := []struct {
		name     string
		call     func(f fixture) ([]byte, string)
		want     *auth.Error
		category string
	}{
		{"not JSON", func(f fixture) ([]byte, string) { return []byte("[1]"), "00" },
			auth.ErrInvalidPayload, auth.CatExternalMethod},
		{"unknown method", func(f fixture) ([]byte, string) {
			return signed(t, f.direct.Secret, f.ts.confirmation("ext-2", "nope", "a@example.com"))
		}, auth.ErrInvalidPayload, auth.CatExternalMethod},
		{"bad signature", func(f fixture) ([]byte, string) {
			return signed(t, "not the secret", f.ts.confirmation("ext-2", "bank", "a@example.com"))
		}, auth.ErrInvalidSignature, auth.CatExternalMethod},
		{"stale", func(f fixture) ([]byte, string) {
			b := f.ts.confirmation("ext-2", "bank", "a@example.com")
			b["verifiedAt"] = f.ts.clock.Now().Add(-auth.ExternalWindow - time.Second).Format(time.RFC3339)
			return signed(t, f.direct.Secret, b)
		}, auth.ErrStaleTimestamp, auth.CatExternalMethod},
		{"wrong pattern", func(f fixture) ([]byte, string) {
			return signed(t, f.webhook.Secret, f.ts.confirmation("ext-2", "kyc", "a@example.com"))
		}, auth.ErrWrongPattern, auth.CatExternalMethod},
		{"inactive", func(f fixture) ([]byte, string) {
			_, err := f.ts.SetMethodStatus(ctx, f.direct.ID, "inactive")
			ok(t, err)
			return signed(t, f.direct.Secret, f.ts.confirmation("ext-2", "bank", "a@example.com"))
		}, auth.ErrInactiveRegistration, auth.CatExternalMethod},
		{"new id without email", func(f fixture) ([]byte, string) {
			return signed(t, f.direct.Secret, f.ts.confirmation("ext-2", "bank", ""))
		}, auth.ErrInvalidPayload, auth.CatExternalMethod},
		{"address held by another id", func(f fixture) ([]byte, string) {
			raw, sig := signed(t, f.direct.Secret, f.ts.confirmation("ext-held", "bank", "a@example.com"))
			_, err := f.ts.ConfirmExternal(ctx, f.ts.project, raw, sig, f.ts.meta)
			ok(t, err)
			return signed(t, f.direct.Secret, f.ts.confirmation("ext-2", "bank", "a@example.com"))
		}, auth.ErrExternalIDMismatch, auth.CatUserExists},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestService(t)
			direct, err := ts.CreateMethod(ctx, ts.project.ID, "bank", "direct")
			ok(t, err)
			hook, err := ts.CreateMethod(ctx, ts.project.ID, "kyc", "webhook")
			ok(t, err)
			f := fixture{ts, direct, hook}
			raw, sig := tc.call(f)
			_, err = ts.ConfirmExternal(ctx, ts.project, raw, sig, ts.meta)
			wantErr(t, err, tc.want, tc.category)
			wantEvent(t, ts.lastEvent(), "external", "confirm", tc.category, false)
			if _, err := ts.UserIDByExternal(ctx, ts.project.ID, "ext-2"); err == nil {
				t.Fatal("a refused confirmation created the user")
			}
		})
	}

	// Replay: the same signed body twice; a refused one leaves no mark.
	ts := newTestService(t)
	m, err := ts.CreateMethod(ctx, ts.project.ID, "bank", "direct")
	ok(t, err)
	_, err = ts.SetMethodStatus(ctx, m.ID, "inactive")
	ok(t, err)
	raw, sig := signed(t, m.Secret, ts.confirmation("ext-3", "bank", "r@example.com"))
	_, err = ts.ConfirmExternal(ctx, ts.project, raw, sig, ts.meta)
	wantErr(t, err, auth.ErrInactiveRegistration, auth.CatExternalMethod)
	_, err = ts.SetMethodStatus(ctx, m.ID, "active")
	ok(t, err)
	_, err = ts.ConfirmExternal(ctx, ts.project, raw, sig, ts.meta)
	ok(t, err)
	_, err = ts.ConfirmExternal(ctx, ts.project, raw, sig, ts.meta)
	wantErr(t, err, auth.ErrReplayed, auth.CatExternalMethod)
}

// TestExternalCallbackAndRedeem: Pattern B. The verifier's signed
// callback stores a grant the app redeems once within 5 minutes for the
// confirm login result; a reused, unknown or expired reference is 401
// INVALID_TOKEN with its category, a callback repeating a reference 401
// REPLAYED, and a disabled user's redeem 403 that leaves the grant
// unused.
func TestExternalCallbackAndRedeem(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	m, err := ts.CreateMethod(ctx, ts.project.ID, "kyc", "webhook")
	ok(t, err)
	callback := func(ext, email, ref string) error {
		t.Helper()
		b := map[string]any{"externalUserId": ext, "verifiedAt": ts.clock.Now().Format(time.RFC3339), "reference": ref}
		if email != "" {
			b["email"] = email
		}
		raw, sig := signed(t, m.Secret, b)
		return ts.ExternalCallback(ctx, m.ID, raw, sig, ts.meta)
	}
	ok(t, callback("kyc-1", "kyc@example.com", "ref-1"))
	wantEvent(t, ts.lastEvent(), "external", "callback", "", false)
	l, err := ts.RedeemExternal(ctx, ts.project, "kyc", "ref-1", ts.meta)
	ok(t, err)
	if !l.IsNewUser || l.ExternalUserID != "kyc-1" || l.User.Email != "kyc@example.com" {
		t.Fatalf("redeem %+v", l)
	}
	wantEvent(t, ts.lastEvent(), "external", "redeem", "", true)
	_, err = ts.RedeemExternal(ctx, ts.project, "kyc", "ref-1", ts.meta)
	wantErr(t, err, auth.ErrInvalidToken, auth.CatAlreadyUsed)
	wantEvent(t, ts.lastEvent(), "external", "redeem", auth.CatAlreadyUsed, false)
	_, err = ts.RedeemExternal(ctx, ts.project, "kyc", "ref-unknown", ts.meta)
	wantErr(t, err, auth.ErrInvalidToken, auth.CatInvalidCode)
	wantErr(t, callback("kyc-1", "", "ref-1"), auth.ErrReplayed, auth.CatExternalMethod)
	wantErr(t, ts.ExternalCallback(ctx, "no-such-registration", []byte(`{}`), "00", ts.meta), auth.ErrInvalidPayload, auth.CatExternalMethod)

	ok(t, callback("kyc-1", "", "ref-2"))
	ts.clock.Advance(auth.GrantLifetime)
	_, err = ts.RedeemExternal(ctx, ts.project, "kyc", "ref-2", ts.meta)
	wantErr(t, err, auth.ErrInvalidToken, auth.CatExpired)

	ok(t, callback("kyc-1", "", "ref-3"))
	ok(t, ts.SetUserDisabled(ctx, l.User.ID, true))
	_, err = ts.RedeemExternal(ctx, ts.project, "kyc", "ref-3", ts.meta)
	wantErr(t, err, auth.ErrUserDisabled, auth.CatUserDisabled)
	ok(t, ts.SetUserDisabled(ctx, l.User.ID, false))
	_, err = ts.RedeemExternal(ctx, ts.project, "kyc", "ref-3", ts.meta)
	ok(t, err)

	ok(t, callback("kyc-1", "", "ref-4"))
	_, err = ts.SetMethodStatus(ctx, m.ID, "inactive")
	ok(t, err)
	_, err = ts.RedeemExternal(ctx, ts.project, "kyc", "ref-4", ts.meta)
	wantErr(t, err, auth.ErrInactiveRegistration, auth.CatExternalMethod)
	_, err = ts.RedeemExternal(ctx, ts.project, "", "", ts.meta)
	wantErr(t, err, auth.ErrValidation, auth.CatValidation)
}
