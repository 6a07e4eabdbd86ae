package httpapi_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"

	"latchkey/auth"
	"latchkey/auth/social"
	"latchkey/store"
)

// The OAuth tests run the whole sign-in over real HTTP against a real
// OpenID Connect provider on loopback: zitadel/oidc's example server
// (its op package with its example storage and login form), with a
// storage wrapper that can sign ID tokens with a key that is not in its
// JWKS, or address them to another audience.

const oauthApp = "https://app.example"

// testOP is an OpenID Connect provider on loopback.
type testOP struct {
	URL, ClientID string
	mode          atomic.Value // "", "badkey" or "audience"
	// claims, when set, changes the claims of the ID tokens it issues
	// (which are then signed again with its own key).
	claims atomic.Pointer[func(map[string]any)]
	// discoveries counts the reads of its discovery document.
	discoveries atomic.Int32
}

// setClaims makes the provider's ID tokens go through f (nil: as
// issued).
func (o *testOP) setClaims(f func(map[string]any)) {
	if f == nil {
		o.claims.Store(nil)
		return
	}
	o.claims.Store(&f)
}

// opStorage is the example storage with the faults testOP can inject.
type opStorage struct {
	*storage.Storage
	op     *testOP
	badKey *rogueKey
}

// testClients guards the example storage's client map, which is one map
// for the whole process: tests run in parallel, each registering its
// own OP's client while the others' OPs read theirs.
var testClients sync.RWMutex

// GetClientByClientID is the example's, under testClients.
func (s *opStorage) GetClientByClientID(ctx context.Context, clientID string) (op.Client, error) {
	testClients.RLock()
	defer testClients.RUnlock()
	return s.Storage.GetClientByClientID(ctx, clientID)
}

// AuthorizeClientIDSecret is the example's, under testClients.
func (s *opStorage) AuthorizeClientIDSecret(ctx context.Context, clientID, clientSecret string) error {
	testClients.RLock()
	defer testClients.RUnlock()
	return s.Storage.AuthorizeClientIDSecret(ctx, clientID, clientSecret)
}

// SigningKey signs with a key of the same id that the JWKS does not hold.
func (s *opStorage) SigningKey(ctx context.Context) (op.SigningKey, error) {
	k, err := s.Storage.SigningKey(ctx)
	if err != nil || s.op.mode.Load() != "badkey" {
		return k, err
	}
	s.badKey.id = k.ID()
	return s.badKey, nil
}

// readdress wraps the provider's handler: in mode "audience", the ID
// token of a token response is addressed to another client ("aud" and
// "azp") and signed again with the provider's own key, so that only its
// audience is wrong (zitadel's op always adds the requesting client to
// the audience); with claims set, the ID token's claims go through it
// and are signed again alike.
func (s *opStorage) readdress(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		change := s.op.claims.Load()
		if s.op.mode.Load() != "audience" && change == nil || r.URL.Path != "/oauth/token" {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		var body map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["id_token"] == nil {
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
			return
		}
		parts := strings.Split(body["id_token"].(string), ".")
		payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
		var claims map[string]any
		json.Unmarshal(payload, &claims)
		if s.op.mode.Load() == "audience" {
			claims["aud"], claims["azp"] = []string{"someone-else"}, "someone-else"
		}
		if change != nil {
			(*change)(claims)
		}
		payload, _ = json.Marshal(claims)
		k, _ := s.Storage.SigningKey(r.Context())
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.SignatureAlgorithm(), Key: jose.JSONWebKey{Key: k.Key(), KeyID: k.ID()}}, nil)
		if err != nil {
			panic(err)
		}
		jws, err := signer.Sign(payload)
		if err != nil {
			panic(err)
		}
		body["id_token"], _ = jws.CompactSerialize()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	})
}

type rogueKey struct {
	key *rsa.PrivateKey
	id  string
}

func (k *rogueKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *rogueKey) Key() any                                    { return k.key }
func (k *rogueKey) ID() string                                  { return k.id }

// newTestOP starts a provider whose client may return to redirectURI.
// Its users (password "verysecure"): alice (ada@example.com, verified),
// bob (bob@example.com, not verified).
func newTestOP(t testing.TB, redirectURI string) *testOP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &testOP{URL: "http://" + ln.Addr().String(), ClientID: "latchkey-" + hex.EncodeToString(randomN(6))}
	o.mode.Store("")
	testClients.Lock()
	storage.RegisterClients(storage.WebClient(o.ClientID, "op-secret", redirectURI))
	testClients.Unlock()
	st := &opStorage{Storage: sharedOPStorage(t), op: o, badKey: &rogueKey{key: testRSAKey(t, 1)}}
	h := st.readdress(exampleop.SetupServer(o.URL, st, nil, false))
	count := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/openid-configuration" {
			o.discoveries.Add(1)
		}
		h.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: count, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return o
}

// sharedOPStorage returns the example provider's storage every test
// provider uses: the same two users (alice, bob) for every test, and one
// signing key made once per process (an RSA key costs a tenth of a
// second, seconds under the race detector, and a test per provider made
// one). Auth requests, codes and tokens are keyed by random ids, so
// tests running at once do not meet in it.
var sharedOPStorage = func() func(t testing.TB) *storage.Storage {
	st := sync.OnceValues(func() (*storage.Storage, error) {
		users := map[string]*storage.User{
			"u-alice": {ID: "u-alice", Username: "alice", Password: "verysecure", Email: "Ada@Example.com", EmailVerified: true},
			"u-bob":   {ID: "u-bob", Username: "bob", Password: "verysecure", Email: "bob@example.com", EmailVerified: false},
		}
		raw, _ := json.Marshal(users)
		dir, err := os.MkdirTemp("", "latchkey-op-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "users.json")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return nil, err
		}
		us, err := storage.StoreFromFile(path)
		if err != nil {
			return nil, err
		}
		return storage.NewStorage(us), nil
	})
	return func(t testing.TB) *storage.Storage {
		t.Helper()
		s, err := st()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}()

// testRSAKeys are RSA keys made once per process, for the tests'
// providers: testRSAKey(t, i) returns the i-th (0 or 1), each distinct.
var testRSAKeys [2]func() (*rsa.PrivateKey, error)

func init() {
	for i := range testRSAKeys {
		testRSAKeys[i] = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })
	}
}

// testRSAKey returns the i-th process-wide test key.
func testRSAKey(t testing.TB, i int) *rsa.PrivateKey {
	t.Helper()
	k, err := testRSAKeys[i]()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func randomN(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// browse follows a sign-in as a browser would: to the provider's login
// form, signs in as user, and follows the redirects until one leaves
// for the app's origin or a response is not a redirect. It returns that
// last response (its Location is where the app is sent).
func (o *testOP) browse(t *testing.T, authURL, user string) *http.Response {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), oauthApp) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Request.URL.Query().Get("authRequestID")
	if res.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("provider's login page: status=%d url=%s", res.StatusCode, res.Request.URL)
	}
	res, err = c.PostForm(o.URL+"/login/username", url.Values{"username": {user}, "password": {"verysecure"}, "id": {id}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res
}

// oauthSetup returns a test server whose project allows oauthApp and
// has the provider "corp" (type oidc) at a new testOP.
func oauthSetup(t *testing.T) (*testServer, *testOP) {
	t.Helper()
	ts := newTestServer(t)
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{oauthApp}}))
	o := newTestOP(t, ts.URL+"/api/v1/oauth/callback")
	r := ts.admin("POST", "/api/v1/admin/projects/"+ts.Project.ID+"/providers", map[string]any{
		"name": "corp", "type": "oidc", "clientId": o.ClientID, "clientSecret": "op-secret", "issuer": o.URL})
	wantOK(t, r)
	return ts, o
}

// start begins a sign-in with "corp" and returns the authorization URL.
func (ts *testServer) oauthStart(t *testing.T) string {
	t.Helper()
	r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "corp", "redirectUrl": oauthApp + "/done"})
	wantOK(t, r)
	return str(t, r.Body, "authorizationUrl")
}

// appQuery returns the query of the app redirect res carries.
func appQuery(t *testing.T, res *http.Response) url.Values {
	t.Helper()
	loc := res.Header.Get("Location")
	if res.StatusCode != http.StatusFound || !strings.HasPrefix(loc, oauthApp+"/done?") {
		t.Fatalf("status=%d Location=%q, want 302 to %s/done?…", res.StatusCode, loc, oauthApp)
	}
	u, _ := url.Parse(loc)
	return u.Query()
}

func TestOAuthNewAndExistingUser(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	authURL := ts.oauthStart(t)
	u, _ := url.Parse(authURL)
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" {
		t.Fatalf("authorization URL %s: want PKCE S256, nonce and state", authURL)
	}
	if got := q.Get("redirect_uri"); got != ts.URL+"/api/v1/oauth/callback" {
		t.Fatalf("redirect_uri=%q", got)
	}
	events := len(ts.outbox())
	code := appQuery(t, o.browse(t, authURL, "alice")).Get("code")
	if code == "" {
		t.Fatal("no code in the app redirect")
	}
	r := ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
	wantOK(t, r)
	wantLoginUser(t, r.Body, "ada@example.com")
	if r.Body["isNewUser"] != true || r.Body["provider"] != "corp" {
		t.Fatalf("isNewUser=%v provider=%v, want true corp", r.Body["isNewUser"], r.Body["provider"])
	}
	first := str(t, r.Body, "userId")
	var methods []string
	for _, e := range ts.outboxSince(events) {
		if e.Type == "session.created" {
			methods = append(methods, e.Data["method"].(string))
		}
	}
	if len(methods) != 1 || methods[0] != "oauth:corp" {
		t.Fatalf("session.created methods %v, want [oauth:corp]", methods)
	}
	if got := ts.methodEvents("oauth", "exchange"); got[""] != 1 {
		t.Fatalf("exchange events %v, want one success", got)
	}

	// The one-time code is single use.
	wantError(t, ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code}), http.StatusUnauthorized, "INVALID_CODE")

	// Again: the same, existing, verified user.
	code = appQuery(t, o.browse(t, ts.oauthStart(t), "alice")).Get("code")
	r = ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
	wantOK(t, r)
	if r.Body["isNewUser"] != false || r.Body["userId"] != first {
		t.Fatalf("second sign-in: isNewUser=%v userId=%v, want false %s", r.Body["isNewUser"], r.Body["userId"], first)
	}
}

// TestOAuthLinksExistingEmailUser: a provider that links by address
// signs the existing account of the address in, and links it.
func TestOAuthLinksExistingEmailUser(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	ts.linkByEmail(t, "corp", true)
	id := str(t, ts.login("ada@example.com").Body, "userId")
	code := appQuery(t, o.browse(t, ts.oauthStart(t), "alice")).Get("code")
	r := ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
	wantOK(t, r)
	if r.Body["userId"] != id || r.Body["isNewUser"] != false {
		t.Fatalf("userId=%v isNewUser=%v, want %s false", r.Body["userId"], r.Body["isNewUser"], id)
	}
}

// TestOAuthNeverIntoAccountWithFactors: an account with a second factor
// is never signed in by a provider, whether found by its address (with
// linking by address on) or by its link to the provider account.
func TestOAuthNeverIntoAccountWithFactors(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	ts.linkByEmail(t, "corp", true)
	tok := str(t, ts.login("ada@example.com").Body, "token")
	ts.enrollTOTP(tok)
	code := appQuery(t, o.browse(t, ts.oauthStart(t), "alice")).Get("code")
	r := ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
	wantError(t, r, http.StatusConflict, "SIGN_IN_WITH_EMAIL_FIRST")
	if !strings.Contains(r.Body["error"].(string), "second factor") {
		t.Fatalf("error %q, want the second-factor refusal", r.Body["error"])
	}

	// A linked account that enrolls a factor afterwards (bob's address
	// is vouched for at his first sign-in only).
	o.setClaims(func(c map[string]any) { c["email"], c["email_verified"] = "bob@example.com", true })
	code = appQuery(t, o.browse(t, ts.oauthStart(t), "bob")).Get("code")
	r = ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
	wantOK(t, r)
	ts.enrollTOTP(str(t, r.Body, "token"))
	o.setClaims(nil)
	code = appQuery(t, o.browse(t, ts.oauthStart(t), "bob")).Get("code")
	r = ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
	wantError(t, r, http.StatusConflict, "SIGN_IN_WITH_EMAIL_FIRST")
	if !strings.Contains(r.Body["error"].(string), "second factor") {
		t.Fatalf("error %q, want the second-factor refusal", r.Body["error"])
	}
}

func TestOAuthForgedAndReplayedState(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	wantError(t, ts.do("GET", "/api/v1/oauth/callback?state=forged&code=x", "", nil), http.StatusBadRequest, "INVALID_STATE")
	wantError(t, ts.do("GET", "/api/v1/oauth/callback?code=x", "", nil), http.StatusBadRequest, "INVALID_STATE")

	// Replay the provider's redirect to the callback (its code and our
	// state): the state is gone after its first use.
	path := o.callbackPath(t, ts, ts.oauthStart(t))
	first := ts.do("GET", path, "", nil)
	if first.Status != http.StatusFound || !strings.Contains(first.Header.Get("Location"), "code=") {
		t.Fatalf("first callback: status=%d Location=%q", first.Status, first.Header.Get("Location"))
	}
	wantError(t, ts.do("GET", path, "", nil), http.StatusBadRequest, "INVALID_STATE")
	if got := ts.methodEvents("oauth", "callback"); got["invalid_code"] != 3 || got[""] != 1 {
		t.Fatalf("callback events %v, want 3 invalid_code (INVALID_STATE) and 1 success", got)
	}
}

// callbackPath signs alice in at the provider from authURL and returns
// the path (with its query) of the provider's redirect to ts's
// callback, without following it.
func (o *testOP) callbackPath(tb testing.TB, ts *testServer, authURL string) string {
	tb.Helper()
	jar, _ := cookiejar.New(nil)
	var callback string
	c := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), ts.URL+"/api/v1/oauth/callback") {
			callback = req.URL.String()
			return http.ErrUseLastResponse
		}
		return nil
	}}
	res, err := c.Get(authURL)
	if err != nil {
		tb.Fatal(err)
	}
	res.Body.Close()
	res, err = c.PostForm(o.URL+"/login/username", url.Values{"username": {"alice"}, "password": {"verysecure"}, "id": {res.Request.URL.Query().Get("authRequestID")}})
	if err != nil {
		tb.Fatal(err)
	}
	res.Body.Close()
	if callback == "" {
		tb.Fatal("the provider did not redirect to the callback")
	}
	return strings.TrimPrefix(callback, ts.URL)
}

func TestOAuthIDTokenChecks(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	for _, mode := range []string{"badkey", "audience"} {
		o.mode.Store(mode)
		q := appQuery(t, o.browse(t, ts.oauthStart(t), "alice"))
		if q.Get("error") != "INVALID_ID_TOKEN" || q.Get("code") != "" {
			t.Fatalf("%s: app query %v, want error=INVALID_ID_TOKEN and no code", mode, q)
		}
	}
	if got := ts.methodEvents("oauth", "callback"); got["invalid_code"] != 2 {
		t.Fatalf("callback events %v, want 2 invalid_code (INVALID_ID_TOKEN)", got)
	}
}

func TestOAuthUnverifiedAddress(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	code := appQuery(t, o.browse(t, ts.oauthStart(t), "bob")).Get("code")
	wantError(t, ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code}), http.StatusForbidden, "EMAIL_NOT_VERIFIED")
	// Nor into an existing account of that address.
	ts.login("bob@example.com")
	code = appQuery(t, o.browse(t, ts.oauthStart(t), "bob")).Get("code")
	wantError(t, ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code}), http.StatusForbidden, "EMAIL_NOT_VERIFIED")
}

func TestOAuthExpiredState(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	authURL := ts.oauthStart(t)
	ts.Clock.Advance(11 * time.Minute)
	res := o.browse(t, authURL, "alice")
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("status=%d, want 400 INVALID_STATE", res.StatusCode)
	}
	if got := ts.methodEvents("oauth", "callback"); got["expired"] != 1 {
		t.Fatalf("callback events %v, want 1 expired (INVALID_STATE)", got)
	}
}

// TestOAuthBoundToBrowser: a sign-in started with a codeChallenge signs
// in only an exchange that brings its codeVerifier, which the app keeps
// with the browser's own session. A callback URL carried to another
// browser (login CSRF: the attacker's sign-in, the victim's browser)
// reaches the exchange with that browser's verifier and is refused, the
// code used up. A sign-in started without a challenge takes no verifier.
// Malformed values are 400 VALIDATION_ERROR and use nothing up.
func TestOAuthBoundToBrowser(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	verifier := func(who string) string { return strings.Repeat(who, 43/len(who)+1) }
	challenge := func(v string) string {
		sum := sha256.Sum256([]byte(v))
		return base64.RawURLEncoding.EncodeToString(sum[:])
	}
	start := func(ch string) string {
		t.Helper()
		r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "corp", "redirectUrl": oauthApp + "/done", "codeChallenge": ch})
		wantOK(t, r)
		return appQuery(t, o.browse(t, str(t, r.Body, "authorizationUrl"), "alice")).Get("code")
	}
	exchange := func(code, v string) *response {
		body := map[string]any{"code": code}
		if v != "" {
			body["codeVerifier"] = v
		}
		return ts.do("POST", "/api/v1/oauth/exchange", ts.Key, body)
	}
	attacker, victim := verifier("attacker"), verifier("victim")

	// The attacker's sign-in, exchanged with the victim's verifier.
	code := start(challenge(attacker))
	wantError(t, exchange(code, victim), http.StatusUnauthorized, "INVALID_CODE")
	wantError(t, exchange(code, attacker), http.StatusUnauthorized, "INVALID_CODE") // used up
	// Without a verifier.
	wantError(t, exchange(start(challenge(victim)), ""), http.StatusUnauthorized, "INVALID_CODE")
	// A verifier for a sign-in started without a challenge.
	wantError(t, exchange(start(""), victim), http.StatusUnauthorized, "INVALID_CODE")
	if got := ts.methodEvents("oauth", "exchange"); got["invalid_code"] != 4 {
		t.Fatalf("exchange events %v, want 4 invalid_code", got)
	}

	// Malformed: nothing is used up.
	for _, ch := range []string{"abc", challenge(victim) + "=", strings.Repeat("A", 44)} {
		r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "corp", "redirectUrl": oauthApp + "/done", "codeChallenge": ch})
		wantError(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
	}
	code = start(challenge(victim))
	for _, v := range []string{"short", victim + "!", strings.Repeat("v", 129)} {
		wantError(t, exchange(code, v), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	// The browser's own verifier signs it in.
	r := exchange(code, victim)
	wantOK(t, r)
	wantLoginUser(t, r.Body, "ada@example.com")
	wantOK(t, exchange(start(""), ""))
}

// TestOAuthBindingNoGuess: refusals for the codeVerifier are no wrong
// guesses for the velocity check (the codes are real), so a page that
// makes one address open more captured callback URLs than the check's
// limit does not block it.
func TestOAuthBindingNoGuess(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	wantOK(t, ts.do("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, testAdminToken, map[string]any{"rateLimitPerMinute": 10000}))
	sum := sha256.Sum256([]byte(strings.Repeat("a", 43)))
	challenge := base64.RawURLEncoding.EncodeToString(sum[:])
	for range auth.RiskMaxFailures + 1 {
		r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "corp", "redirectUrl": oauthApp + "/done", "codeChallenge": challenge})
		wantOK(t, r)
		code := appQuery(t, o.browse(t, str(t, r.Body, "authorizationUrl"), "alice")).Get("code")
		body := fmt.Sprintf(`{"code":%q,"codeVerifier":%q}`, code, strings.Repeat("b", 43))
		wantError(t, ts.fromIP("203.0.113.9", "POST", "/api/v1/oauth/exchange", body), http.StatusUnauthorized, "INVALID_CODE")
	}
	wantError(t, ts.fromIP("203.0.113.9", "POST", "/api/v1/otp/verify", `{"email":"x@example.com","code":"000000"}`), http.StatusUnauthorized, "INVALID_CODE")
}

func TestOAuthStartChecks(t *testing.T) {
	t.Parallel()
	ts, _ := oauthSetup(t)
	wantError(t, ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "corp", "redirectUrl": "https://evil.example/x"}), http.StatusBadRequest, "INVALID_REDIRECT_URL")
	wantError(t, ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "nope", "redirectUrl": oauthApp + "/done"}), http.StatusNotFound, "PROVIDER_NOT_FOUND")
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"denyCidrs": []string{"127.0.0.0/8"}}))
	r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "corp", "redirectUrl": oauthApp + "/done"})
	wantError(t, r, http.StatusForbidden, "RISK_BLOCKED")
}

func TestOAuthProvidersAdmin(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	base := "/api/v1/admin/projects/" + ts.Project.ID + "/providers"
	wantError(t, ts.admin("POST", base, map[string]any{"name": "corp", "type": "oidc", "clientId": "x", "clientSecret": "y", "issuer": o.URL}), http.StatusConflict, "PROVIDER_EXISTS")
	wantError(t, ts.admin("POST", base, map[string]any{"type": "oidc", "clientId": "x", "clientSecret": "y"}), http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, ts.admin("POST", base, map[string]any{"type": "oidc", "clientId": "x", "clientSecret": "y", "issuer": "http://idp.example"}), http.StatusBadRequest, "VALIDATION_ERROR")
	r := ts.admin("POST", base, map[string]any{"type": "github", "clientId": "gh-id", "clientSecret": "gh-secret"})
	wantOK(t, r)
	if p := obj(t, r.Body, "provider"); p["name"] != "github" || p["issuer"] != nil {
		t.Fatalf("provider %v, want name github and no issuer", p)
	}
	r = ts.admin("GET", base, nil)
	wantOK(t, r)
	if strings.Contains(string(r.Raw), "op-secret") || strings.Contains(string(r.Raw), "gh-secret") {
		t.Fatalf("the list shows a secret: %s", r.Raw)
	}
	if n := len(r.Body["providers"].([]any)); n != 2 {
		t.Fatalf("%d providers, want 2", n)
	}
	// At rest the secrets are sealed: no plaintext in the stored project.
	ts.DB.View(ctx, func(tx store.Tx) error {
		p, err := tx.Project(ts.Project.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range p.Providers {
			if len(pr.Secret) == 0 || strings.Contains(string(pr.Secret), "secret") {
				t.Fatalf("provider %s secret stored as %q", pr.Name, pr.Secret)
			}
		}
		return nil
	})
	wantOK(t, ts.admin("DELETE", base+"/github", nil))
	wantError(t, ts.admin("DELETE", base+"/github", nil), http.StatusNotFound, "PROVIDER_NOT_FOUND")
	wantError(t, ts.admin("GET", "/api/v1/admin/projects/nope/providers", nil), http.StatusNotFound, "PROJECT_NOT_FOUND")
}

// fakeGitHub is GitHub's OAuth endpoints and user API on loopback: its
// authorize page approves at once; the token endpoint wants the code it
// issued and a PKCE verifier; the user's primary address is verified
// unless unverified is set.
type fakeGitHub struct {
	URL        string
	unverified atomic.Bool
	verifiers  atomic.Int32
	// other makes the user another GitHub account (id 4343).
	other atomic.Bool
}

func newFakeGitHub(t *testing.T) *fakeGitHub {
	t.Helper()
	g := &fakeGitHub{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login/oauth/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code=gh-code&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /login/oauth/access_token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.PostForm.Get("code") != "gh-code" || r.PostForm.Get("client_secret") != "gh-secret" {
			w.WriteHeader(http.StatusBadRequest)
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"error":"bad_verification_code"}`))
			return
		}
		if r.PostForm.Get("code_verifier") != "" {
			g.verifiers.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"gh-token","token_type":"bearer","scope":"read:user,user:email"}`))
	})
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer gh-token" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /user", auth(func(w http.ResponseWriter, r *http.Request) {
		if g.other.Load() {
			w.Write([]byte(`{"id":4343,"login":"octo2"}`))
			return
		}
		w.Write([]byte(`{"id":4242,"login":"octo"}`))
	}))
	mux.HandleFunc("GET /user/emails", auth(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `[{"email":"other@example.com","primary":false,"verified":true},{"email":"Octo@Example.com","primary":true,"verified":%v}]`, !g.unverified.Load())
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

func TestOAuthGitHub(t *testing.T) {
	t.Parallel()
	g := newFakeGitHub(t)
	ts := newTestServer(t, func(c *auth.Config) {
		c.OAuth = &social.Transport{GitHub: social.GitHubEndpoints{AuthURL: g.URL + "/login/oauth/authorize", TokenURL: g.URL + "/login/oauth/access_token", APIURL: g.URL}}
	})
	wantOK(t, ts.admin("PATCH", "/api/v1/admin/projects/"+ts.Project.ID, map[string]any{"allowedOrigins": []string{oauthApp}}))
	wantOK(t, ts.admin("POST", "/api/v1/admin/projects/"+ts.Project.ID+"/providers", map[string]any{"type": "github", "clientId": "gh-id", "clientSecret": "gh-secret"}))
	signIn := func() *response {
		r := ts.do("POST", "/api/v1/oauth/start", ts.Key, map[string]any{"provider": "github", "redirectUrl": oauthApp + "/done"})
		wantOK(t, r)
		c := &http.Client{CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			if strings.HasPrefix(req.URL.String(), oauthApp) {
				return http.ErrUseLastResponse
			}
			return nil
		}}
		res, err := c.Get(str(t, r.Body, "authorizationUrl"))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		code := appQuery(t, res).Get("code")
		return ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code})
	}
	r := signIn()
	wantOK(t, r)
	wantLoginUser(t, r.Body, "octo@example.com")
	if r.Body["provider"] != "github" || r.Body["isNewUser"] != true {
		t.Fatalf("provider=%v isNewUser=%v", r.Body["provider"], r.Body["isNewUser"])
	}
	if g.verifiers.Load() != 1 {
		t.Fatal("the token request carried no PKCE verifier")
	}
	id := str(t, r.Body, "userId")
	links := ts.identities(t, id)
	if len(links) != 1 || links[0].Issuer != "https://github.com" || links[0].Subject != "4242" {
		t.Fatalf("links %+v, want (https://github.com, 4242)", links)
	}
	// The linked GitHub account signs its user in whatever GitHub says
	// of the address now; another account with that address unverified
	// signs no one in.
	g.unverified.Store(true)
	r = signIn()
	wantOK(t, r)
	if r.Body["userId"] != id {
		t.Fatalf("linked account: userId=%v, want %s", r.Body["userId"], id)
	}
	g.other.Store(true)
	wantError(t, signIn(), http.StatusForbidden, "EMAIL_NOT_VERIFIED")
}

// TestOAuthDashboard: the providers page lists them, adds one (the
// secret never shown again), refuses a bad one in the form, and removes
// one behind a confirmation.
func TestOAuthDashboard(t *testing.T) {
	t.Parallel()
	ts, _ := oauthSetup(t)
	c, csrf := signedInCSRF(t, ts)
	page := "/admin/projects/" + ts.Project.ID + "/providers"
	code, body := c.get(page)
	if code != 200 || !strings.Contains(body, "<code>corp</code>") || !strings.Contains(body, ts.URL+"/api/v1/oauth/callback") {
		t.Fatalf("providers page: %d\n%s", code, body)
	}
	code, body = c.post(page, url.Values{"csrf": {csrf}, "type": {"oidc"}, "clientId": {"x"}, "clientSecret": {"y"}})
	if code != 400 || !strings.Contains(elementText(body, "provider-error"), "issuer is required") {
		t.Fatalf("bad provider: %d %q", code, elementText(body, "provider-error"))
	}
	code, body = c.post(page, url.Values{"csrf": {csrf}, "type": {"github"}, "clientId": {"gh-id"}, "clientSecret": {"y"}, "responseMode": {"form_post"}})
	if code != 400 || !strings.Contains(elementText(body, "provider-error"), "form_post is not available for type github") ||
		!strings.Contains(body, `<option value="form_post" selected>`) {
		t.Fatalf("github with form_post: %d %q", code, elementText(body, "provider-error"))
	}
	code, body = c.post(page, url.Values{"csrf": {csrf}, "type": {"github"}, "clientId": {"gh-id"}, "clientSecret": {"gh-dash-secret"}})
	if code != 200 || !strings.Contains(body, "<code>github</code>") || strings.Contains(body, "gh-dash-secret") {
		t.Fatalf("add: %d\n%s", code, body)
	}
	if !strings.Contains(body, "<td>query</td>") {
		t.Fatalf("the list does not show the response mode:\n%s", body)
	}
	remove := page + "/github/remove"
	if code, body := c.get(remove); code != 200 || !strings.Contains(body, `<form id="confirm" method="post" action="`+remove+`">`) {
		t.Fatalf("confirmation: %d\n%s", code, body)
	}
	if code, loc, _ := c.postRaw(remove, url.Values{"csrf": {csrf}, "confirm": {"yes"}}); code != http.StatusSeeOther || loc != page {
		t.Fatalf("remove: %d to %q", code, loc)
	}
	if n := len(ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID+"/providers", nil).Body["providers"].([]any)); n != 1 {
		t.Fatalf("%d providers after remove, want 1", n)
	}

	// Linking by address: set in the form, turned on behind a
	// confirmation, turned off at once.
	linking := func(name string) any {
		t.Helper()
		for _, p := range ts.admin("GET", "/api/v1/admin/projects/"+ts.Project.ID+"/providers", nil).Body["providers"].([]any) {
			if p := p.(map[string]any); p["name"] == name {
				return p["linkByEmail"]
			}
		}
		t.Fatalf("no provider %s", name)
		return nil
	}
	code, body = c.post(page, url.Values{"csrf": {csrf}, "type": {"google"}, "clientId": {"g-id"}, "clientSecret": {"y"}, "linkByEmail": {"no"}})
	if code != 200 || linking("google") != false {
		t.Fatalf("google added with linkByEmail no: %d, linkByEmail %v", code, linking("google"))
	}
	on := page + "/corp/link-by-email/on"
	if !strings.Contains(body, `href="`+on+`"`) {
		t.Fatalf("the list has no way to turn corp's linking on:\n%s", body)
	}
	if code, body := c.get(on); code != 200 || !strings.Contains(body, `<form id="confirm" method="post" action="`+on+`">`) || !strings.Contains(body, "trust") {
		t.Fatalf("confirmation: %d\n%s", code, body)
	}
	if code, loc, _ := c.postRaw(on, url.Values{"csrf": {csrf}}); code != 200 || loc != "" || linking("corp") != false {
		t.Fatalf("unconfirmed: %d to %q, linkByEmail %v", code, loc, linking("corp"))
	}
	if code, loc, _ := c.postRaw(on, url.Values{"csrf": {csrf}, "confirm": {"yes"}}); code != http.StatusSeeOther || loc != page || linking("corp") != true {
		t.Fatalf("turned on: %d to %q, linkByEmail %v", code, loc, linking("corp"))
	}
	if code, loc, _ := c.postRaw(page+"/corp/link-by-email/off", url.Values{"csrf": {csrf}}); code != http.StatusSeeOther || loc != page || linking("corp") != false {
		t.Fatalf("turned off: %d to %q, linkByEmail %v", code, loc, linking("corp"))
	}
	if code, _, _ := c.postRaw(page+"/corp/link-by-email/off", url.Values{"csrf": {"forged"}}); code != http.StatusForbidden {
		t.Fatalf("a forged form: %d, want 403", code)
	}
}
