package auth_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"latchkey/auth"
	"latchkey/store"
)

// Consent to third-party clients, called as the pages and the admin API
// call it, without HTTP (over HTTP with go-oidc: httpapi's
// TestOIDCConsent).

// continueAllowing takes request id on with the session pr, allowing
// the client on the consent step when it asks.
func (ts *testService) continueAllowing(pid, id string, pr *auth.Principal) (auth.OIDCStep, error) {
	step, err := ts.OIDCContinue(ctx, pid, id, pr, true)
	if err != nil || step != auth.OIDCStepConsent {
		return step, err
	}
	if allowed, err := ts.OIDCDecideConsent(ctx, pid, id, pr, true); err != nil || !allowed {
		return step, err
	}
	return auth.OIDCStepDone, nil
}

// TestOIDCConsentUseCases: a third-party client's request signed in
// waits for consent (not answered); the consent request is shown only to
// the session that signed in, with the scopes in plain words; deny
// records nothing; allow records the scopes, answers the request and
// emits oidc.consent_granted; the same scopes skip the step, a new one
// or prompt=consent asks again and widens the consent (GrantedAt kept);
// a first-party client never asks; UserConsents lists it; RevokeConsent
// forgets it and revokes the client's grants for the user (another
// client's stay), then CONSENT_NOT_FOUND; another project's user is
// USER_NOT_FOUND; deleting the client deletes its consents.
func TestOIDCConsentUseCases(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	st := ts.OIDCStorage(pid)
	c := ts.refreshClient("Third")
	request := func(client string, scopes []string, prompt ...string) string {
		t.Helper()
		r, err := st.CreateAuthRequest(ctx, &oidc.AuthRequest{ClientID: client, RedirectURI: "https://app.example.com/cb",
			ResponseType: oidc.ResponseTypeCode, Scopes: scopes, Prompt: prompt, CodeChallenge: challenge,
			CodeChallengeMethod: oidc.CodeChallengeMethodS256}, "")
		if err != nil {
			t.Fatal(err)
		}
		return r.GetID()
	}
	_, pr := ts.signIn("ada@example.com")
	id := request(c.ID, []string{"openid", "email"})
	if step, err := ts.OIDCContinue(ctx, pid, id, pr, true); err != nil || step != auth.OIDCStepConsent {
		t.Fatalf("continue: %v %v, want the consent step", step, err)
	}
	if ts.OIDCCallbackAllowed(ctx, pid, id, pr) {
		t.Fatal("the callback is allowed before the consent")
	}
	ask, err := ts.OIDCConsentRequest(ctx, pid, id, pr)
	if err != nil || ask.ClientName != "Third" || len(ask.Scopes) != 2 || ask.Scopes[1].Scope != "email" ||
		!strings.Contains(ask.Scopes[1].Text, "email address") {
		t.Fatalf("consent request %+v %v", ask, err)
	}
	_, other := ts.signIn("bob@example.com")
	if _, err := ts.OIDCConsentRequest(ctx, pid, id, other); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("another session's consent request: %v", err)
	}
	if _, err := ts.OIDCDecideConsent(ctx, pid, id, other, true); !errors.Is(err, auth.ErrNotFound) {
		t.Errorf("another session's decision: %v", err)
	}
	if allowed, err := ts.OIDCDecideConsent(ctx, pid, id, pr, false); err != nil || allowed {
		t.Fatalf("deny: %v %v", allowed, err)
	}
	if list, err := ts.UserConsents(ctx, pid, pr.UserID); err != nil || len(list) != 0 {
		t.Fatalf("consents after a deny: %+v %v", list, err)
	}
	if n := ts.consentEvents(); n != 0 {
		t.Fatalf("%d consent events after a deny", n)
	}
	if allowed, err := ts.OIDCDecideConsent(ctx, pid, id, pr, true); err != nil || !allowed {
		t.Fatalf("allow: %v %v", allowed, err)
	}
	if !ts.OIDCCallbackAllowed(ctx, pid, id, pr) {
		t.Fatal("the callback is refused after the consent")
	}
	if n := ts.consentEvents(); n != 1 {
		t.Fatalf("%d consent events after an allow", n)
	}
	first, err := ts.UserConsents(ctx, pid, pr.UserID)
	if err != nil || len(first) != 1 || first[0].ClientID != c.ID || first[0].ClientName != "Third" ||
		!slices.Equal(first[0].Scopes, []string{"openid", "email"}) || first[0].GrantedAt.IsZero() {
		t.Fatalf("consents %+v %v", first, err)
	}

	// The same scopes: done at once; a new one, or prompt=consent: asked.
	if step, err := ts.OIDCContinue(ctx, pid, request(c.ID, []string{"email"}), pr, false); err != nil || step != auth.OIDCStepDone {
		t.Errorf("covered scopes: %v %v", step, err)
	}
	for _, r := range []string{request(c.ID, []string{"openid", "offline_access"}), request(c.ID, []string{"openid"}, "consent")} {
		if step, err := ts.OIDCContinue(ctx, pid, r, pr, false); err != nil || step != auth.OIDCStepConsent {
			t.Errorf("continue: %v %v, want the consent step", step, err)
		}
	}
	ts.clock.Advance(60e9)
	if _, err := ts.continueAllowing(pid, request(c.ID, []string{"openid", "offline_access"}), pr); err != nil {
		t.Fatal(err)
	}
	wider, _ := ts.UserConsents(ctx, pid, pr.UserID)
	if !slices.Equal(wider[0].Scopes, []string{"openid", "email", "offline_access"}) || !wider[0].GrantedAt.Equal(first[0].GrantedAt) ||
		!wider[0].UpdatedAt.After(first[0].UpdatedAt) {
		t.Errorf("widened consent %+v (first %+v)", wider[0], first[0])
	}
	// A first-party client never asks.
	name, typ, fp := "Own", auth.ClientConfidential, true
	own, _, err := ts.CreateClient(ctx, pid, auth.ClientInput{Name: &name, Type: &typ, RedirectURIs: &[]string{"https://app.example.com/cb"}, FirstParty: &fp})
	if err != nil {
		t.Fatal(err)
	}
	if step, err := ts.OIDCContinue(ctx, pid, request(own.ID, []string{"openid", "email"}, "consent"), pr, false); err != nil || step != auth.OIDCStepDone {
		t.Errorf("first-party client: %v %v", step, err)
	}

	// Revoke: the client's grants for the user are revoked, another
	// client's stay.
	at, atOwn := ts.oidcAccessAs(st, c.ID, pr), ts.oidcAccessAs(st, own.ID, pr)
	ok(t, ts.RevokeConsent(ctx, pid, pr.UserID, c.ID))
	for _, x := range []struct {
		at      string
		revoked bool
	}{{at, true}, {atOwn, false}} {
		g := ts.oidcGrant(strings.Split(jwtClaims(t, x.at)["jti"].(string), ".")[0])
		if got := !g.RevokedAt.IsZero(); got != x.revoked || (x.revoked && g.RevokedFor != "consent revoked") {
			t.Errorf("grant of %s after the revoke: %+v", g.ClientID, g)
		}
	}
	if list, _ := ts.UserConsents(ctx, pid, pr.UserID); len(list) != 0 {
		t.Errorf("consents after the revoke %+v", list)
	}
	wantErr(t, ts.RevokeConsent(ctx, pid, pr.UserID, c.ID), auth.ErrConsentNotFound, "")
	wantErr(t, ts.RevokeConsent(ctx, "", "nobody", c.ID), auth.ErrUserNotFound, auth.CatUserNotFound)
	if _, err := ts.UserConsents(ctx, "another-project", pr.UserID); !errors.Is(err, auth.ErrProjectNotFound) {
		t.Errorf("another project: %v", err)
	}

	// Deleting the client deletes its consents.
	if _, err := ts.continueAllowing(pid, request(c.ID, []string{"openid"}), pr); err != nil {
		t.Fatal(err)
	}
	ok(t, ts.DeleteClient(ctx, pid, c.ID))
	err = ts.db.View(ctx, func(tx store.Tx) error {
		_, err := tx.OIDCConsent(pid, pr.UserID, c.ID)
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("consent after its client's delete: %v", err)
	}
}

// oidcAccessAs runs a code flow of client id answered by the session pr
// (consent allowed) and returns its access token.
func (ts *testService) oidcAccessAs(st *auth.OIDCStorage, id string, pr *auth.Principal) string {
	t := ts.t
	t.Helper()
	r, err := st.CreateAuthRequest(ctx, &oidc.AuthRequest{ClientID: id, RedirectURI: "https://app.example.com/cb",
		ResponseType: oidc.ResponseTypeCode, Scopes: []string{"openid"}, CodeChallenge: challenge,
		CodeChallengeMethod: oidc.CodeChallengeMethodS256}, "")
	ok(t, err)
	if step, err := ts.continueAllowing(ts.project.ID, r.GetID(), pr); err != nil || step != auth.OIDCStepDone {
		t.Fatalf("continue: %v %v", step, err)
	}
	code, err := auth.OIDCMinter{}.Encrypt(r.GetID())
	ok(t, err)
	ok(t, st.SaveAuthCode(ctx, r.GetID(), code))
	ar, err := st.AuthRequestByCode(ctx, code)
	ok(t, err)
	at, _, err := st.CreateAccessToken(ctx, ar)
	ok(t, err)
	return at
}

// consentEvents counts the outbox's oidc.consent_granted events.
func (ts *testService) consentEvents() int {
	ts.t.Helper()
	n := 0
	err := ts.db.View(ctx, func(tx store.Tx) error {
		evs, err := tx.EventsAfter(0, 1<<20)
		for _, e := range evs {
			if e.Type == auth.EventConsentGranted {
				n++
			}
		}
		return err
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return n
}
