package auth_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/pkg/oidc"

	"latchkey/auth"
	"latchkey/store"
)

// The OpenID code flow's storage and hosted sign-in, called as op and
// the pages call them, without HTTP (over HTTP with go-oidc: httpapi's
// TestOIDCCodeFlow).

// oidcClient registers a client of the test project.
func (ts *testService) oidcClient(typ string) auth.ClientView {
	ts.t.Helper()
	name, uri := "App", "https://app.example.com/cb"
	c, _, err := ts.CreateClient(ctx, ts.project.ID, auth.ClientInput{Name: &name, Type: &typ, RedirectURIs: &[]string{uri}})
	if err != nil {
		ts.t.Fatal(err)
	}
	return c
}

// challenge is a valid S256 code_challenge (RFC 7636's example).
const challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

// TestOIDCAuthRequestPolicy: CreateAuthRequest refuses PKCE without
// S256, a public client without a challenge, a fragment response mode
// and oversized state, each as an invalid_request op redirects; it keeps
// the scopes the client may have, less offline_access (it has no refresh
// grant), and the request waits 30 minutes for its sign-in.
func TestOIDCAuthRequestPolicy(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	st := ts.OIDCStorage(ts.project.ID)
	conf, pub := ts.oidcClient(auth.ClientConfidential), ts.oidcClient(auth.ClientPublic)
	req := func(client string, f func(r *oidc.AuthRequest)) *oidc.AuthRequest {
		r := &oidc.AuthRequest{ClientID: client, RedirectURI: "https://app.example.com/cb", ResponseType: oidc.ResponseTypeCode,
			Scopes: []string{"openid", "email", "offline_access", "groups"}, State: "s", Nonce: "n",
			CodeChallenge: challenge, CodeChallengeMethod: oidc.CodeChallengeMethodS256}
		if f != nil {
			f(r)
		}
		return r
	}
	for name, r := range map[string]*oidc.AuthRequest{
		"plain":                 req(conf.ID, func(r *oidc.AuthRequest) { r.CodeChallengeMethod = oidc.CodeChallengeMethodPlain }),
		"no method":             req(conf.ID, func(r *oidc.AuthRequest) { r.CodeChallengeMethod = "" }),
		"public without PKCE":   req(pub.ID, func(r *oidc.AuthRequest) { r.CodeChallenge, r.CodeChallengeMethod = "", "" }),
		"short challenge":       req(conf.ID, func(r *oidc.AuthRequest) { r.CodeChallenge = "abc" }),
		"fragment":              req(conf.ID, func(r *oidc.AuthRequest) { r.ResponseMode = oidc.ResponseModeFragment }),
		"state of 513 bytes":    req(conf.ID, func(r *oidc.AuthRequest) { r.State = strings.Repeat("s", 513) }),
		"nonce not UTF-8":       req(conf.ID, func(r *oidc.AuthRequest) { r.Nonce = "\xff" }),
		"login_hint with a NUL": req(conf.ID, func(r *oidc.AuthRequest) { r.LoginHint = "a\x00b" }),
	} {
		_, err := st.CreateAuthRequest(ctx, r, "")
		var oe *oidc.Error
		if !errors.As(err, &oe) || oe.ErrorType != oidc.InvalidRequest || oe.Description == "" {
			t.Errorf("%s: %v, want invalid_request with a description", name, err)
		}
	}
	// A confidential client without PKCE is accepted.
	got, err := st.CreateAuthRequest(ctx, req(conf.ID, func(r *oidc.AuthRequest) { r.CodeChallenge, r.CodeChallengeMethod = "", "" }), "")
	if err != nil {
		t.Fatal(err)
	}
	if got.GetCodeChallenge() != nil || strings.Join(got.GetScopes(), " ") != "openid email groups" {
		t.Errorf("request: challenge %v scopes %v", got.GetCodeChallenge(), got.GetScopes())
	}
	if _, err := st.AuthRequestByID(ctx, got.GetID()); err != nil {
		t.Fatal(err)
	}
	ts.clock.Advance(auth.OIDCAuthRequestLifetime)
	if _, err := st.AuthRequestByID(ctx, got.GetID()); err == nil {
		t.Error("a request 30 minutes old is still there")
	}
	// Another project's storage never sees it.
	if _, err := ts.OIDCStorage("other").AuthRequestByID(ctx, got.GetID()); err == nil {
		t.Error("another project's storage found the request")
	}
}

// TestOIDCCodeExchange: a request answered by a hosted sign-in (a
// session "oidc:App", proven by the email code), its code saved and
// exchanged once: the grant names the session, the user, the scopes,
// amr otp and acr level 1; a second exchange of the code is refused
// and revokes that grant; a code is worth 60 s; a code reloaded
// replaces the first.
func TestOIDCCodeExchange(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	st := ts.OIDCStorage(pid)
	c := ts.oidcClient(auth.ClientConfidential)
	newRequest := func() string {
		r, err := st.CreateAuthRequest(ctx, &oidc.AuthRequest{ClientID: c.ID, RedirectURI: "https://app.example.com/cb",
			ResponseType: oidc.ResponseTypeCode, Scopes: []string{"openid", "email"}, CodeChallenge: challenge,
			CodeChallengeMethod: oidc.CodeChallengeMethodS256}, "")
		if err != nil {
			t.Fatal(err)
		}
		return r.GetID()
	}
	id := newRequest()
	if err := ts.OIDCSendCode(ctx, pid, id, "ada@example.com", ts.meta); err != nil {
		t.Fatal(err)
	}
	l, err := ts.OIDCVerifyCode(ctx, pid, id, "ada@example.com", ts.otpCode("ada@example.com"), ts.meta)
	if err != nil {
		t.Fatal(err)
	}
	if l.Session.Method != "oidc:App" || l.RefreshToken != "" || strings.Join(l.AMR(), " ") != "otp" {
		t.Errorf("session method %q refresh %q amr %v", l.Session.Method, l.RefreshToken, l.AMR())
	}
	pr := ts.principal(l)
	if step, err := ts.continueAllowing(pid, id, pr); err != nil || step != auth.OIDCStepDone {
		t.Fatalf("continue: %v %v", step, err)
	}
	var m auth.OIDCMinter
	code := func(id string) string {
		code, err := m.Encrypt(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.SaveAuthCode(ctx, id, code); err != nil {
			t.Fatal(err)
		}
		return code
	}
	first := code(id)
	second := code(id) // the callback reloaded
	if _, err := st.AuthRequestByCode(ctx, first); err == nil {
		t.Fatal("a replaced code is still good")
	}
	ar, err := st.AuthRequestByCode(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	at, _, err := st.CreateAccessToken(ctx, ar)
	if err != nil {
		t.Fatal(err)
	}
	jti := jwtClaims(t, at)["jti"].(string)
	gid := strings.Split(jti, ".")[0]
	g := ts.oidcGrant(gid)
	if g.SessionID != pr.SessionID || g.UserID != pr.UserID || g.ClientID != c.ID || strings.Join(g.Scopes, " ") != "openid email" ||
		strings.Join(g.AMR, " ") != "otp" || g.ACR != auth.ACRSingleFactor || !g.RevokedAt.IsZero() {
		t.Errorf("grant %+v", g)
	}
	info := &oidc.UserInfo{}
	if err := st.SetUserinfoFromToken(ctx, info, jti, pr.UserID, ""); err != nil || info.Email != "ada@example.com" {
		t.Fatalf("user info %+v %v", info, err)
	}
	// The code again: refused, the grant revoked, its token dead.
	if _, err := st.AuthRequestByCode(ctx, second); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("replayed code: %v", err)
	}
	if g := ts.oidcGrant(gid); g.RevokedAt.IsZero() || g.RevokedFor != "authorization code replayed" {
		t.Errorf("grant after the replay %+v", g)
	}
	if err := st.SetUserinfoFromToken(ctx, &oidc.UserInfo{}, jti, pr.UserID, ""); err == nil {
		t.Error("the replayed code's token still works")
	}

	// 60 s: the SSO session answers a second request at once.
	id = newRequest()
	if step, err := ts.OIDCContinue(ctx, pid, id, pr, false); err != nil || step != auth.OIDCStepDone {
		t.Fatalf("single sign-on: %v %v", step, err)
	}
	late := code(id)
	ts.clock.Advance(auth.OIDCCodeLifetime)
	if _, err := st.AuthRequestByCode(ctx, late); err == nil {
		t.Error("a code 60 s old is good")
	}
	// A session that ended answers nothing.
	ok(t, ts.RevokeSession(ctx, pr, pr.SessionID))
	if step, err := ts.OIDCContinue(ctx, pid, newRequest(), pr, false); err != nil || step != auth.OIDCStepSignIn {
		t.Errorf("continue with an ended session: %v %v", step, err)
	}
}

// oidcGrant reads the test project's grant id.
func (ts *testService) oidcGrant(id string) *store.OIDCGrant {
	ts.t.Helper()
	var g *store.OIDCGrant
	if err := ts.db.View(ctx, func(tx store.Tx) (err error) { g, err = tx.OIDCGrant(ts.project.ID, id); return err }); err != nil {
		ts.t.Fatal(err)
	}
	return g
}

// jwtClaims decodes a JWT's claims (no check).
func jwtClaims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
