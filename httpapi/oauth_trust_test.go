package httpapi_test

import (
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"latchkey/auth"
	"latchkey/auth/social"
	"latchkey/internal/netguard/netguardtest"
	"latchkey/internal/testkit"
	"latchkey/store"
)

// What a provider sign-in trusts: the account linked to the provider
// account first, linking by address only where the provider is trusted
// with it, the ID token's authorized party, Microsoft's verified-address
// claim, and no call to a private address.

// linkByEmail sets the linkByEmail of ts's project's provider name.
func (ts *testServer) linkByEmail(t *testing.T, name string, link bool) {
	t.Helper()
	r := ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID+"/providers/"+name, map[string]any{"linkByEmail": link})
	wantOK(t, r)
	if got := obj(t, r.Body, "provider")["linkByEmail"]; got != link {
		t.Fatalf("linkByEmail=%v after PATCH, want %v", got, link)
	}
}

// oauthSignIn signs user in at o through "corp" and exchanges the code.
func (ts *testServer) oauthSignIn(t *testing.T, o *testOP, user string) *response {
	t.Helper()
	code := appQuery(t, o.browse(t, ts.oauthStart(t), user)).Get("code")
	if code == "" {
		t.Fatal("no code in the app redirect")
	}
	return ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
}

// identities returns the provider links of userID.
func (ts *testServer) identities(t *testing.T, userID string) []*store.Identity {
	t.Helper()
	var out []*store.Identity
	err := ts.DB.View(ctx, func(tx store.Tx) error {
		var err error
		out, err = tx.UserIdentities(userID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// userCount returns how many users ts's project has.
func (ts *testServer) userCount(t *testing.T) int {
	t.Helper()
	var n int
	ts.DB.View(ctx, func(tx store.Tx) error {
		us, _, err := tx.Users(ts.Project.ID, "", "", 0)
		n = len(us)
		return err
	})
	return n
}

// TestOAuthLinkedAfterEmailChange: the first sign-in links the provider
// account (issuer, subject) to the user it created; later sign-ins find
// that user by the link, after the provider's address changed and
// whether or not the provider vouches for the new one, and the account
// keeps its own address. The link goes with the user.
func TestOAuthLinkedAfterEmailChange(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	r := ts.oauthSignIn(t, o, "alice")
	wantOK(t, r)
	id := str(t, r.Body, "userId")
	links := ts.identities(t, id)
	if len(links) != 1 || links[0].Issuer != o.URL || links[0].Subject != "u-alice" || links[0].Provider != "corp" ||
		links[0].ProjectID != ts.Project.ID || !links[0].CreatedAt.Equal(ts.Clock.Now()) {
		t.Fatalf("links after the first sign-in: %+v", links)
	}

	for _, verified := range []bool{true, false} {
		o.setClaims(func(c map[string]any) { c["email"], c["email_verified"] = "ada.lovelace@example.org", verified })
		r = ts.oauthSignIn(t, o, "alice")
		wantOK(t, r)
		wantLoginUser(t, r.Body, "ada@example.com")
		if r.Body["userId"] != id || r.Body["isNewUser"] != false {
			t.Fatalf("verified=%v: userId=%v isNewUser=%v, want %s false", verified, r.Body["userId"], r.Body["isNewUser"], id)
		}
	}
	if n := ts.userCount(t); n != 1 {
		t.Fatalf("%d users, want 1", n)
	}
	if links := ts.identities(t, id); len(links) != 1 {
		t.Fatalf("links after three sign-ins: %+v", links)
	}

	// Deleted with the user: the next sign-in is a new account.
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/users/"+id, nil))
	if links := ts.identities(t, id); len(links) != 0 {
		t.Fatalf("links of a deleted user: %+v", links)
	}
	o.setClaims(nil)
	r = ts.oauthSignIn(t, o, "alice")
	wantOK(t, r)
	if r.Body["userId"] == id || r.Body["isNewUser"] != true {
		t.Fatalf("after the user's deletion: userId=%v isNewUser=%v, want a new user", r.Body["userId"], r.Body["isNewUser"])
	}

	// Deleted with the project.
	other := str(t, r.Body, "userId")
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+ts.Project.ID, nil))
	if links := ts.identities(t, other); len(links) != 0 {
		t.Fatalf("links after the project's deletion: %+v", links)
	}
}

// TestOAuthLinkByEmail: a generic oidc provider does not link by
// address by default: with an account of the address and no link, the
// sign-in is refused (409 SIGN_IN_WITH_EMAIL_FIRST, recorded as
// user_exists), creating and linking nothing, while a new address is a
// new user. With linkByEmail turned on, the sign-in links the account;
// turned off again, the link still signs it in. Types that link by
// default, and the PATCH's refusals.
func TestOAuthLinkByEmail(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	base := "/api/v1/admin/projects/" + ts.Project.ID + "/providers"
	r := ts.admin("GET", base, nil)
	wantOK(t, r)
	if p := r.Body["providers"].([]any)[0].(map[string]any); p["linkByEmail"] != false {
		t.Fatalf("oidc provider %v, want linkByEmail false by default", p)
	}

	id := str(t, ts.login("ada@example.com").Body, "userId")
	events := len(ts.outbox())
	r = ts.oauthSignIn(t, o, "alice")
	wantError(t, r, http.StatusConflict, "SIGN_IN_WITH_EMAIL_FIRST")
	if msg := r.Body["error"].(string); !strings.Contains(msg, "not linked to this provider") {
		t.Fatalf("error %q, want the not-linked refusal", msg)
	}
	if n := ts.userCount(t); n != 1 {
		t.Fatalf("%d users after the refusal, want 1 (no duplicate)", n)
	}
	if links := ts.identities(t, id); len(links) != 0 {
		t.Fatalf("links after the refusal: %+v", links)
	}
	if got := ts.methodEvents("oauth", "exchange"); got["user_exists"] != 1 {
		t.Fatalf("exchange events %v, want 1 user_exists", got)
	}
	for _, e := range ts.outboxSince(events) {
		if e.Type == "session.created" || e.Type == "user.registered" {
			t.Fatalf("the refusal emitted %s", e.Type)
		}
	}
	// A new address is a new user, linked. (The provider's ID tokens
	// carry no address: it gives bob's, unverified, from its userinfo
	// endpoint, unless the token says otherwise.)
	o.setClaims(func(c map[string]any) { c["email"], c["email_verified"] = "bob@example.com", true })
	r = ts.oauthSignIn(t, o, "bob")
	wantOK(t, r)
	if r.Body["isNewUser"] != true || len(ts.identities(t, str(t, r.Body, "userId"))) != 1 {
		t.Fatalf("bob: isNewUser=%v, want a new, linked user", r.Body["isNewUser"])
	}
	o.setClaims(nil)

	ts.linkByEmail(t, "corp", true)
	r = ts.oauthSignIn(t, o, "alice")
	wantOK(t, r)
	if r.Body["userId"] != id || r.Body["isNewUser"] != false {
		t.Fatalf("linkByEmail true: userId=%v isNewUser=%v, want %s false", r.Body["userId"], r.Body["isNewUser"], id)
	}
	if links := ts.identities(t, id); len(links) != 1 || links[0].Subject != "u-alice" {
		t.Fatalf("links after linking: %+v", links)
	}
	ts.linkByEmail(t, "corp", false)
	r = ts.oauthSignIn(t, o, "alice")
	wantOK(t, r)
	if r.Body["userId"] != id {
		t.Fatalf("linked, linkByEmail false: userId=%v, want %s", r.Body["userId"], id)
	}

	// The other types link by default; a type's default can be refused
	// at creation.
	for _, c := range []struct {
		body map[string]any
		want bool
	}{
		{map[string]any{"type": "github", "clientId": "x", "clientSecret": "y"}, true},
		{map[string]any{"type": "google", "clientId": "x", "clientSecret": "y"}, true},
		{map[string]any{"type": "apple", "clientId": "x", "clientSecret": "y"}, true},
		{map[string]any{"type": "microsoft", "clientId": "x", "clientSecret": "y"}, true},
		{map[string]any{"type": "google", "name": "google-no", "clientId": "x", "clientSecret": "y", "linkByEmail": false}, false},
		{map[string]any{"type": "oidc", "name": "corp-yes", "clientId": "x", "clientSecret": "y", "issuer": o.URL, "linkByEmail": true}, true},
	} {
		r := ts.admin("POST", base, c.body)
		wantOK(t, r)
		if got := obj(t, r.Body, "provider")["linkByEmail"]; got != c.want {
			t.Errorf("%v: linkByEmail=%v, want %v", c.body, got, c.want)
		}
	}

	// PATCH refusals change nothing.
	wantError(t, ts.admin("PATCH", base+"/corp", map[string]any{}), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, ts.admin("PATCH", base+"/corp", map[string]any{"linkByEmail": "yes"}), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, ts.admin("PATCH", base+"/corp", map[string]any{"linkByEmail": true, "issuer": "https://x"}), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, ts.admin("POST", base, map[string]any{"type": "oidc", "name": "bad", "clientId": "x", "clientSecret": "y", "issuer": o.URL, "linkByEmail": 1}),
		http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, ts.admin("PATCH", base+"/nope", map[string]any{"linkByEmail": true}), http.StatusNotFound, "PROVIDER_NOT_FOUND")
	wantError(t, ts.admin("PATCH", "/api/v1/admin/projects/nope/providers/corp", map[string]any{"linkByEmail": true}), http.StatusNotFound, "PROJECT_NOT_FOUND")
	wantError(t, ts.do("PATCH", base+"/corp", ts.Key, map[string]any{"linkByEmail": true}), http.StatusUnauthorized, "UNAUTHORIZED")
	r = ts.admin("GET", base, nil)
	for _, p := range r.Body["providers"].([]any) {
		if p := p.(map[string]any); p["name"] == "corp" && p["linkByEmail"] != false {
			t.Fatalf("corp after refused PATCHes: %v", p)
		}
	}
}

// TestOAuthProvidersStoredBefore: a provider stored before linkByEmail
// existed keeps linking by address, as it did, and says so.
func TestOAuthProvidersStoredBefore(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	err := ts.DB.Update(ctx, func(tx store.Tx) error {
		p, err := tx.Project(ts.Project.ID)
		if err != nil {
			return err
		}
		p.Providers[0].LinkByEmail = nil
		return tx.PutProject(p)
	})
	if err != nil {
		t.Fatal(err)
	}
	// A change of the project drops the service's copy of it.
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{oauthApp}}))
	r := ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID+"/providers", nil)
	if p := r.Body["providers"].([]any)[0].(map[string]any); p["linkByEmail"] != true {
		t.Fatalf("provider stored before the setting: %v, want linkByEmail true", p)
	}
	id := str(t, ts.login("ada@example.com").Body, "userId")
	r = ts.oauthSignIn(t, o, "alice")
	wantOK(t, r)
	if r.Body["userId"] != id {
		t.Fatalf("userId=%v, want the account of the address %s", r.Body["userId"], id)
	}
}

// TestOAuthAuthorizedParty: an ID token with several audiences needs
// azp naming this client; an azp present with one audience must name it
// too (OpenID Connect Core 3.1.3.7).
func TestOAuthAuthorizedParty(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	tests := []struct {
		name string
		aud  []string
		azp  any // nil: no azp claim
		ok   bool
	}{
		{"several audiences, no azp", []string{o.ClientID, "other-app"}, nil, false},
		{"several audiences, another azp", []string{o.ClientID, "other-app"}, "other-app", false},
		{"several audiences, this azp", []string{"other-app", o.ClientID}, o.ClientID, true},
		{"one audience, another azp", []string{o.ClientID}, "other-app", false},
		{"one audience, no azp", []string{o.ClientID}, nil, true},
		{"one audience, this azp", []string{o.ClientID}, o.ClientID, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o.setClaims(func(c map[string]any) {
				c["aud"] = tt.aud
				delete(c, "azp")
				if tt.azp != nil {
					c["azp"] = tt.azp
				}
			})
			q := appQuery(t, o.browse(t, ts.oauthStart(t), "alice"))
			if !tt.ok {
				if q.Get("error") != "INVALID_ID_TOKEN" || q.Get("code") != "" {
					t.Fatalf("app query %v, want error=INVALID_ID_TOKEN and no code", q)
				}
				return
			}
			r := ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": q.Get("code")})
			wantOK(t, r)
			wantLoginUser(t, r.Body, "ada@example.com")
		})
	}
}

// TestOAuthEDOVOnlyMicrosoft: xms_edov is Microsoft's claim; from any
// other provider it vouches for nothing.
func TestOAuthEDOVOnlyMicrosoft(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	o.setClaims(func(c map[string]any) {
		c["email"], c["xms_edov"] = "ada@example.com", true
		delete(c, "email_verified")
	})
	wantError(t, ts.oauthSignIn(t, o, "alice"), http.StatusForbidden, "EMAIL_NOT_VERIFIED")
}

// fakeOIDC is a small OpenID Connect provider on loopback: discovery,
// an authorization endpoint that approves at once, a token endpoint
// that answers the code it gave with an ID token (the sign-in's nonce,
// the claims set) signed by its key, and its JWKS. Its issuer is its own
// URL, or another (Microsoft's) whose host its client sends to it.
type fakeOIDC struct {
	URL      string // where it listens
	Issuer   string
	ClientID string
	now      func() time.Time
	key      *rsa.PrivateKey
	// claims are set in each ID token (over the defaults).
	claims atomic.Pointer[map[string]any]
	// doc changes the discovery document.
	doc atomic.Pointer[func(map[string]any)]

	mu     sync.Mutex
	nonces map[string]string // code → nonce
	issued int
}

// newFakeOIDC starts a provider whose issuer is issuer ("" for its own
// URL), whose ID tokens are dated by now.
func newFakeOIDC(t *testing.T, issuer string, now func() time.Time) *fakeOIDC {
	t.Helper()
	f := &fakeOIDC{ClientID: "fake-client", now: now, key: testRSAKey(t, 0), nonces: map[string]string{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL, f.Issuer = srv.URL, issuer
	if issuer == "" {
		f.Issuer = srv.URL
	}
	return f
}

// setClaims sets the claims of the next ID tokens.
func (f *fakeOIDC) setClaims(c map[string]any) { f.claims.Store(&c) }

func (f *fakeOIDC) serve(w http.ResponseWriter, r *http.Request) {
	switch path := r.URL.Path; {
	case strings.HasSuffix(path, "/.well-known/openid-configuration"):
		doc := map[string]any{"issuer": f.Issuer, "authorization_endpoint": f.Issuer + "/authorize", "token_endpoint": f.Issuer + "/token",
			"jwks_uri": f.Issuer + "/keys", "response_types_supported": []string{"code"}, "subject_types_supported": []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"}}
		if change := f.doc.Load(); change != nil {
			(*change)(doc)
		}
		json.NewEncoder(w).Encode(doc)
	case strings.HasSuffix(path, "/authorize"):
		q := r.URL.Query()
		f.mu.Lock()
		f.issued++
		code := fmt.Sprintf("fake-code-%d", f.issued)
		f.nonces[code] = q.Get("nonce")
		f.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	case strings.HasSuffix(path, "/token"):
		r.ParseForm()
		f.mu.Lock()
		nonce, ok := f.nonces[r.PostForm.Get("code")]
		delete(f.nonces, r.PostForm.Get("code"))
		f.mu.Unlock()
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"error":"invalid_grant"}`))
			return
		}
		now := f.now()
		claims := map[string]any{"iss": f.Issuer, "sub": "fake-subject-1", "aud": f.ClientID, "iat": now.Unix(),
			"exp": now.Add(time.Hour).Unix(), "nonce": nonce, "email": "Mia@Contoso.example"}
		if extra := f.claims.Load(); extra != nil {
			for k, v := range *extra {
				claims[k] = v
			}
		}
		payload, _ := json.Marshal(claims)
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: f.key, KeyID: "fake-key"}}, nil)
		if err != nil {
			panic(err)
		}
		jws, err := signer.Sign(payload)
		if err != nil {
			panic(err)
		}
		idToken, _ := jws.CompactSerialize()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "fake-access", "token_type": "Bearer", "expires_in": 3600, "id_token": idToken})
	case strings.HasSuffix(path, "/keys"):
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &f.key.PublicKey, KeyID: "fake-key", Algorithm: "RS256", Use: "sig"}}})
	default:
		http.NotFound(w, r)
	}
}

// hostTo is a transport that sends the requests for host to target (an
// http://host:port on loopback) and the others as they are.
type hostTo struct{ host, target string }

func (h hostTo) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Hostname() == h.host {
		u, _ := url.Parse(h.target)
		req = req.Clone(req.Context())
		req.URL.Scheme, req.URL.Host, req.Host = u.Scheme, u.Host, u.Host
	}
	return http.DefaultTransport.RoundTrip(req)
}

// fakeSignIn starts a sign-in with provider, follows it through the
// fake's authorization endpoint (with client c) to the app and returns
// the app's query.
func (ts *testServer) fakeSignIn(t *testing.T, c *http.Client, provider string) url.Values {
	t.Helper()
	r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": provider, "redirectUrl": oauthApp + "/done"})
	wantOK(t, r)
	browser := &http.Client{Transport: c.Transport, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), oauthApp) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res, err := browser.Get(str(t, r.Body, "authorizationUrl"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return appQuery(t, res)
}

// TestOAuthMicrosoftVerifiedDomain: Microsoft's ID token address is
// verified only when xms_edov (the address's domain owner verified it)
// or email_verified says so; absent or false, it signs no one in. The
// provider is Microsoft's single-tenant issuer, reached on loopback
// through a client that sends login.microsoftonline.com there.
func TestOAuthMicrosoftVerifiedDomain(t *testing.T) {
	t.Parallel()
	const tenant = "9188040d-6c67-4c5b-b112-36a304b66dad"
	var ts *testServer
	f := newFakeOIDC(t, "https://login.microsoftonline.com/"+tenant+"/v2.0", func() time.Time { return ts.Clock.Now() })
	ms := &http.Client{Transport: hostTo{"login.microsoftonline.com", f.URL}, Timeout: 10 * time.Second}
	ts = newTestServer(t, func(c *auth.Config) { c.OAuth = &social.Transport{Client: ms} })
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{oauthApp}}))
	r := ts.admin("POST", "/api/v1/admin/projects/"+ts.Project.ID+"/providers", map[string]any{"type": "microsoft", "clientId": f.ClientID,
		"clientSecret": "fake-secret", "issuer": f.Issuer})
	wantOK(t, r)
	if p := obj(t, r.Body, "provider"); p["linkByEmail"] != true {
		t.Fatalf("microsoft provider %v, want linkByEmail true", p)
	}
	tests := []struct {
		name   string
		claims map[string]any
		ok     bool
	}{
		{"xms_edov absent", map[string]any{}, false},
		{"xms_edov false", map[string]any{"xms_edov": false}, false},
		{"xms_edov \"false\"", map[string]any{"xms_edov": "false"}, false},
		{"email_verified false", map[string]any{"email_verified": false, "xms_edov": false}, false},
		{"xms_edov true", map[string]any{"xms_edov": true}, true},
		{"xms_edov \"true\"", map[string]any{"xms_edov": "true"}, true},
		{"email_verified true", map[string]any{"email_verified": true}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims := map[string]any{"sub": fmt.Sprintf("ms-subject-%d", i), "email": fmt.Sprintf("Mia.%d@Contoso.example", i), "tid": tenant}
			for k, v := range tt.claims {
				claims[k] = v
			}
			f.setClaims(claims)
			q := ts.fakeSignIn(t, ms, "microsoft")
			r := ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": q.Get("code")})
			if !tt.ok {
				wantError(t, r, http.StatusForbidden, "EMAIL_NOT_VERIFIED")
				return
			}
			wantOK(t, r)
			wantLoginUser(t, r.Body, fmt.Sprintf("mia.%d@contoso.example", i))
			if r.Body["provider"] != "microsoft" || r.Body["isNewUser"] != true {
				t.Fatalf("provider=%v isNewUser=%v", r.Body["provider"], r.Body["isNewUser"])
			}
			links := ts.identities(t, str(t, r.Body, "userId"))
			if len(links) != 1 || links[0].Issuer != f.Issuer || links[0].Subject != claims["sub"] {
				t.Fatalf("links %+v, want (%s, %s)", links, f.Issuer, claims["sub"])
			}
		})
	}
}

// TestOAuthPrivateAddresses: provider calls go through the guard
// webhooks use. An issuer at a private IP address is refused when the
// provider is added; a provider on loopback is called (its issuer is a
// loopback address), but its discovery document's endpoints at private,
// link-local or reserved addresses are not: the sign-in fails with
// PROVIDER_UNAVAILABLE, the operator is told in the log, and nothing
// reaches a listener there. An issuer whose name resolves to loopback at
// dial time is refused as it dials: no request is sent.
func TestOAuthPrivateAddresses(t *testing.T) {
	t.Parallel()
	// A listener on loopback that counts connections, for the name
	// that resolves to it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var rebound atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			rebound.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dns := netguardtest.NewDNS(t, map[string]string{"idp.test": "127.0.0.1"})
	var logs testkit.Buffer
	ts := newTestServer(t, func(c *auth.Config) {
		c.OAuth = &social.Transport{Resolver: dns}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{oauthApp}}))
	base := "/api/v1/admin/projects/" + ts.Project.ID + "/providers"
	add := func(name, issuer string) *response {
		return ts.admin("POST", base, map[string]any{"name": name, "type": "oidc", "clientId": "fake-client", "clientSecret": "fake-secret", "issuer": issuer})
	}

	// Refused when added.
	for _, issuer := range []string{"https://10.0.0.1", "https://169.254.169.254/", "https://[::ffff:10.0.0.1]", "https://[fd00::1]:8443", "https://100.64.0.1"} {
		wantError(t, add("private", issuer), http.StatusBadRequest, "VALIDATION_ERROR")
	}

	// A loopback provider works.
	f := newFakeOIDC(t, "", ts.Clock.Now)
	wantOK(t, add("local", f.URL))
	f.setClaims(map[string]any{"email_verified": true})
	q := ts.fakeSignIn(t, http.DefaultClient, "local")
	wantOK(t, ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": q.Get("code")}))

	// Its endpoints elsewhere are not called. Where this host has a
	// private address, a listener there counts what reaches it.
	endpoints := []struct{ field, url string }{
		{"token_endpoint", "http://10.0.0.1/token"},
		{"token_endpoint", "http://[64:ff9b::a9fe:a9fe]/token"},
		{"jwks_uri", "http://169.254.169.254/latest/keys"},
	}
	var reached atomic.Int32
	if private := listenPrivate(); private != nil {
		go func() {
			for {
				c, err := private.Accept()
				if err != nil {
					return
				}
				reached.Add(1)
				c.Close()
			}
		}()
		t.Cleanup(func() { private.Close() })
		endpoints = append(endpoints, struct{ field, url string }{"token_endpoint", "http://" + private.Addr().String() + "/token"},
			struct{ field, url string }{"jwks_uri", "http://" + private.Addr().String() + "/keys"})
	} else {
		t.Log("this host has no private non-loopback address to listen on: the endpoints there are not tried")
	}
	for i, c := range endpoints {
		t.Run(c.field+" "+c.url, func(t *testing.T) {
			name := fmt.Sprintf("elsewhere-%d", i)
			g := newFakeOIDC(t, "", ts.Clock.Now)
			change := func(doc map[string]any) { doc[c.field] = c.url }
			g.doc.Store(&change)
			wantOK(t, add(name, g.URL))
			logs.Reset()
			start := time.Now()
			q := ts.fakeSignIn(t, http.DefaultClient, name)
			if q.Get("error") != "PROVIDER_UNAVAILABLE" || q.Get("code") != "" {
				t.Fatalf("app query %v, want error=PROVIDER_UNAVAILABLE", q)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Fatalf("the refusal took %v: the address was tried", took)
			}
			if !strings.Contains(logs.String(), "private, loopback or link-local address; not called") {
				t.Fatalf("no log line tells the operator:\n%s", logs.String())
			}
		})
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("%d connections reached the private listener", n)
	}

	// A name that resolves to loopback at dial time.
	wantOK(t, add("rebind", "https://idp.test:"+port))
	r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "rebind", "redirectUrl": oauthApp + "/done"})
	wantError(t, r, http.StatusBadGateway, "PROVIDER_UNAVAILABLE")
	if msg := r.Body["error"].(string); !strings.Contains(msg, "private, loopback or link-local") {
		t.Fatalf("error %q, want the guard's", msg)
	}
	if n := rebound.Load(); n != 0 {
		t.Fatalf("%d connections reached the rebound name's listener", n)
	}
}
