package auth_test

import (
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
	"latchkey/store"
)

// Logout at the providers without HTTP (over HTTP, with go-oidc as the
// relying party: httpapi's TestOIDCEndSession* and
// TestOIDCBackchannelEveryPath).

// TestOIDCBackchannelQueued: a session's ending writes, in its
// transaction, one back-channel logout event per client with a
// back-channel URI holding a grant under it (none for a client without
// one); each delivery is prepared with a logout token signed then with
// the client's algorithm (typ logout+jwt, the claims, no nonce), and
// there is nothing to deliver once the client's URI is removed, the
// client deleted or the project gone.
func TestOIDCBackchannelQueued(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	st := ts.OIDCStorage(pid)
	withURI := ts.refreshClient("With URI")
	es256, uri := auth.AlgES256, "https://rp.example.com/bcl"
	_, err := ts.UpdateClient(ctx, pid, withURI.ID, auth.ClientInput{BackchannelLogoutURI: &uri, IDTokenAlg: &es256})
	ok(t, err)
	without := ts.refreshClient("Without URI")

	_, _, pr := ts.oidcTokens(st, withURI, "ada@example.com")
	_, _, other := ts.oidcTokens(st, without, "bob@example.com")
	ok(t, ts.Logout(ctx, other, auth.LogoutThis))
	if got := ts.outbox(store.BackchannelLogoutEvent); len(got) != 0 {
		t.Fatalf("back-channel events %v for a client without a URI", got)
	}
	ok(t, ts.Logout(ctx, pr, auth.LogoutThis))
	got := ts.outbox(store.BackchannelLogoutEvent)
	want := map[string]string{"clientId": withURI.ID, "userId": pr.UserID, "sessionId": pr.SessionID}
	if len(got) != 1 || len(got[0]) != 3 || got[0]["clientId"] != want["clientId"] || got[0]["userId"] != want["userId"] ||
		got[0]["sessionId"] != want["sessionId"] {
		t.Fatalf("back-channel events %v, want one %v", got, want)
	}
	data, _ := json.Marshal(want)

	ts.clock.Advance(time.Minute)
	target, form, err := ts.BackchannelLogoutDelivery(ctx, pid, data)
	ok(t, err)
	if target != uri {
		t.Errorf("target %q, want %q", target, uri)
	}
	q, err := url.ParseQuery(string(form))
	ok(t, err)
	jws, err := jose.ParseSigned(q.Get("logout_token"), []jose.SignatureAlgorithm{jose.ES256})
	if err != nil || len(q) != 1 {
		t.Fatalf("form %q: %v", form, err)
	}
	set, err := ts.OIDCKeys(ctx, pid)
	ok(t, err)
	k := set.Active[auth.AlgES256]
	payload, err := jws.Verify(k.Private.Public())
	ok(t, err)
	if h := jws.Signatures[0].Header; h.KeyID != k.ID || h.ExtraHeaders["typ"] != "logout+jwt" {
		t.Errorf("header %+v", h)
	}
	var c map[string]any
	ok(t, json.Unmarshal(payload, &c))
	now := float64(ts.clock.Now().Unix())
	aud, _ := c["aud"].([]any)
	ev, _ := c["events"].(map[string]any)
	if c["iss"] != ts.OIDCIssuer(pid) || len(aud) != 1 || aud[0] != withURI.ID || c["sub"] != pr.UserID || c["sid"] != pr.SessionID ||
		c["iat"] != now || c["exp"] != now+120 || c["jti"] == "" || len(ev) != 1 || ev[auth.BackchannelLogoutEventURI] == nil || len(c) != 8 {
		t.Errorf("claims %v", c)
	}

	none := ""
	_, err = ts.UpdateClient(ctx, pid, withURI.ID, auth.ClientInput{BackchannelLogoutURI: &none})
	ok(t, err)
	if _, _, err := ts.BackchannelLogoutDelivery(ctx, pid, data); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("URI removed: %v, want store.ErrNotFound", err)
	}
	ok(t, ts.DeleteClient(ctx, pid, withURI.ID))
	if _, _, err := ts.BackchannelLogoutDelivery(ctx, pid, data); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("client deleted: %v, want store.ErrNotFound", err)
	}
	if _, _, err := ts.BackchannelLogoutDelivery(ctx, "no-such-project", data); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("project gone: %v, want store.ErrNotFound", err)
	}
}

// TestOIDCEndSessionRequest: what an RP-initiated logout request may
// say. A valid id_token_hint (expired too) names its client, user and
// session; post_logout_redirect_uri must be one the client registered
// and gets the state; the rest is refused with a message for the error
// page (400 VALIDATION_ERROR); OIDCEndSessions ends only the project's
// sessions of the users named.
func TestOIDCEndSessionRequest(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	st := ts.OIDCStorage(pid)
	c := ts.refreshClient("App")
	bye := []string{"https://app.example.com/bye", "https://app.example.com/bye?x=1"}
	_, err := ts.UpdateClient(ctx, pid, c.ID, auth.ClientInput{PostLogoutRedirectURIs: &bye})
	ok(t, err)
	_, _, pr := ts.oidcTokens(st, c, "ada@example.com")
	set, err := ts.OIDCKeys(ctx, pid)
	ok(t, err)
	sign := func(typ string, claims map[string]any) string {
		k := set.Active[auth.AlgRS256]
		s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: &jose.JSONWebKey{Key: k.Private, KeyID: k.ID}},
			(&jose.SignerOptions{}).WithType(jose.ContentType(typ)))
		ok(t, err)
		raw, _ := json.Marshal(claims)
		jws, err := s.Sign(raw)
		ok(t, err)
		out, err := jws.CompactSerialize()
		ok(t, err)
		return out
	}
	issuer := ts.OIDCIssuer(pid)
	past := time.Now().Add(-3 * time.Hour).Unix()
	claims := map[string]any{"iss": issuer, "sub": pr.UserID, "aud": []string{c.ID}, "azp": c.ID, "sid": pr.SessionID,
		"iat": past, "exp": past + 3600}
	hint := sign("JWT", claims)
	v := op.NewIDTokenHintVerifier(issuer, &op.OpenIDKeySet{Storage: st})

	es, err := ts.OIDCEndSessionRequest(ctx, pid, v, auth.EndSessionInput{IDTokenHint: hint, PostLogoutRedirectURI: bye[1], State: "a b"})
	ok(t, err)
	if *es != (auth.EndSession{ClientID: c.ID, HintUserID: pr.UserID, HintSessionID: pr.SessionID, Redirect: bye[0] + "?state=a+b&x=1"}) {
		t.Errorf("end session %+v", es)
	}
	es, err = ts.OIDCEndSessionRequest(ctx, pid, v, auth.EndSessionInput{ClientID: c.ID})
	ok(t, err)
	if *es != (auth.EndSession{ClientID: c.ID}) {
		t.Errorf("client only: %+v", es)
	}
	wrongIss := map[string]any{}
	for k, x := range claims {
		wrongIss[k] = x
	}
	wrongIss["iss"] = "https://auth.example.com/oidc/other"
	for name, in := range map[string]auth.EndSessionInput{
		"unregistered address":  {ClientID: c.ID, PostLogoutRedirectURI: "https://app.example.com/bye/"},
		"address, no client":    {PostLogoutRedirectURI: bye[0]},
		"unknown client":        {ClientID: "nope"},
		"client not the hint's": {IDTokenHint: hint, ClientID: "other"},
		"access token as hint":  {IDTokenHint: sign("at+jwt", claims)},
		"logout token as hint":  {IDTokenHint: sign("logout+jwt", claims)},
		"another issuer":        {IDTokenHint: sign("JWT", wrongIss)},
		"garbage":               {IDTokenHint: "a.b.c"},
		"too long":              {State: string(make([]byte, 8193))},
	} {
		_, err := ts.OIDCEndSessionRequest(ctx, pid, v, in)
		if e := auth.AsError(err); err == nil || e.Code != auth.ErrValidation.Code {
			t.Errorf("%s: %v, want VALIDATION_ERROR", name, err)
		}
	}

	// Only the named user's session of this project ends.
	ok(t, ts.OIDCEndSessions(ctx, pid, []auth.EndedSession{{UserID: "someone-else", SessionID: pr.SessionID}}))
	ok(t, ts.OIDCEndSessions(ctx, "other-project", []auth.EndedSession{{UserID: pr.UserID, SessionID: pr.SessionID}}))
	if _, err := ts.Sessions(ctx, pr); err != nil {
		t.Fatalf("a session of another user or project was ended: %v", err)
	}
	ok(t, ts.OIDCEndSessions(ctx, pid, []auth.EndedSession{{UserID: pr.UserID, SessionID: pr.SessionID}, {UserID: pr.UserID, SessionID: pr.SessionID}}))
	wantErr(t, second(ts.Sessions(ctx, pr)), auth.ErrInvalidSession, "")
	if got := ts.outbox("session.revoked"); len(got) != 1 || got[0]["session_id"] != pr.SessionID {
		t.Errorf("session.revoked %v, want one for %s", got, pr.SessionID)
	}
}
