package auth_test

import (
	"encoding/hex"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
)

// TestOAuthFlowsOfAnOlderRelease: the sign-ins with providers in flight
// that an older release kept, as WebAuthn challenge rows that the
// upgrade moves to OAuthFlows with their ids and payloads, complete
// after it. A state keyed as that release keyed it (the keyed hash in
// domain "oauth_state") holding the JSON it wrote is found by the
// callback, which sends the browser back to the state's redirectUrl and
// uses the state up; a one-time code so keyed (domain "oauth_code") and
// written signs its identity in at the exchange, once.
func TestOAuthFlowsOfAnOlderRelease(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	key := func(domain, secret string) string {
		h := ts.keys.HashString(domain, secret)
		return hex.EncodeToString(h[:])
	}
	now := ts.clock.Now()
	state := "b2xkZXItcmVsZWFzZS1zdGF0ZS0wMTIzNDU2Nzg5YWJjZGVm"
	code := "b2xkZXItcmVsZWFzZS1jb2RlLTAxMjM0NTY3ODlhYmNkZWZnaA"
	ts.db.Update(ctx, func(tx store.Tx) error {
		for _, f := range []*store.OAuthFlow{
			{ID: key("oauth_state", state), ProjectID: ts.project.ID, Kind: store.OAuthFlowState, ExpiresAt: now.Add(10 * time.Minute),
				Payload: []byte(`{"providerId":"0195f3a0-0000-7000-8000-000000000051","provider":"google",` +
					`"redirectUrl":"https://app.example.com/done?from=older","nonce":"n0","verifier":"v0"}`)},
			{ID: key("oauth_code", code), ProjectID: ts.project.ID, Kind: store.OAuthFlowCode, ExpiresAt: now.Add(5 * time.Minute),
				Payload: []byte(`{"provider":"google","issuer":"https://accounts.google.com","subject":"108",` +
					`"email":"ada@example.com","emailVerified":true,"linkByEmail":true}`)},
		} {
			if err := tx.PutOAuthFlow(f); err != nil {
				t.Error(err)
			}
		}
		return nil
	})

	target, err := ts.OAuthCallback(ctx, state, "", "access_denied", ts.meta)
	ok(t, err)
	if want := "https://app.example.com/done?error=OAUTH_DENIED&from=older"; target != want {
		t.Errorf("the callback sends the browser to %q, want %q", target, want)
	}
	_, err = ts.OAuthCallback(ctx, state, "", "access_denied", ts.meta)
	wantErr(t, err, auth.ErrInvalidState, "")

	login, provider, err := ts.OAuthExchange(ctx, ts.project, code, "", ts.meta)
	ok(t, err)
	if login.User.Email != "ada@example.com" || !login.IsNewUser || provider != "google" || login.Token == "" {
		t.Errorf("the exchange signs in %q (new %v) with %q", login.User.Email, login.IsNewUser, provider)
	}
	_, _, err = ts.OAuthExchange(ctx, ts.project, code, "", ts.meta)
	wantErr(t, err, auth.ErrInvalidCode, "")
	ts.db.View(ctx, func(tx store.Tx) error {
		for _, id := range []string{key("oauth_state", state), key("oauth_code", code)} {
			if f, err := tx.OAuthFlow(id); err == nil {
				t.Errorf("flow %s left after its use: %+v", f.Kind, f)
			}
		}
		return nil
	})
}
