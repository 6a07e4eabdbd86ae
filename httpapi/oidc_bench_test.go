package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/store/storetest"
)

// oidcBenchClient is a first-party confidential client of the benchmark
// project, signing its ID tokens with alg.
type oidcBenchClient struct {
	id, secret, alg string
}

// oidcBench is a benchmark environment with the project's provider,
// two clients (RS256 and ES256 ID tokens) and signed-in users whose
// session tokens serve as their browsers' SSO cookies.
type oidcBench struct {
	*benchEnv
	issuer  string
	clients map[string]oidcBenchClient // by alg
	tokens  []string                   // a session per worker
}

const (
	benchRedirect = "https://rp.example.com/callback"
	benchVerifier = "bench-verifier-bench-verifier-bench-verifier-0123"
)

func newOIDCBench(b *testing.B) *oidcBench {
	b.Helper()
	e := &oidcBench{benchEnv: newMailedBenchEnv(b, storetest.Open(b)), clients: map[string]oidcBenchClient{}}
	e.issuer = e.url + "/oidc/" + e.project.ID
	for _, alg := range []string{"RS256", "ES256"} {
		out, err := e.post("/api/v1/admin/projects/"+e.project.ID+"/clients", "adm_benchbenchbenchbenchbench", map[string]any{
			"name": "Bench " + alg, "type": "confidential", "redirectUris": []string{benchRedirect}, "firstParty": true,
			"idTokenAlg": alg})
		if err != nil {
			b.Fatal(err)
		}
		e.clients[alg] = oidcBenchClient{id: out["client"].(map[string]any)["id"].(string), secret: out["clientSecret"].(string), alg: alg}
	}
	e.tokens = make([]string, benchConc)
	for i := range e.tokens {
		e.tokens[i] = e.loginDirect(b, fmt.Sprintf("oidc%d@example.com", i))
	}
	return e
}

// noRedirect is a client of the benchmark's transport that hands back
// redirects instead of following them.
func (e *oidcBench) noRedirect() *http.Client {
	return &http.Client{Transport: e.client.Transport, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// authorizeCode runs the browser's part of a sign-in with a session
// (single sign-on, no page): the authorization request with the SSO
// cookie tok, the provider's callback, and returns the code of its
// redirect to the client.
func (e *oidcBench) authorizeCode(hc *http.Client, c oidcBenchClient, tok string) (string, error) {
	sum := sha256.Sum256([]byte(benchVerifier))
	q := url.Values{"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {benchRedirect},
		"scope": {"openid email profile"}, "state": {"st"}, "nonce": {"no"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	next := e.issuer + "/authorize?" + q.Encode()
	for range 4 {
		req, _ := http.NewRequest("GET", next, nil)
		req.AddCookie(&http.Cookie{Name: ssoCookie + e.project.ID, Value: tok})
		res, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		loc := res.Header.Get("Location")
		if (res.StatusCode != http.StatusFound && res.StatusCode != http.StatusSeeOther) || loc == "" {
			return "", fmt.Errorf("authorize: %d, Location %q", res.StatusCode, loc)
		}
		if strings.HasPrefix(loc, benchRedirect+"?") {
			u, _ := url.Parse(loc)
			if code := u.Query().Get("code"); code != "" {
				return code, nil
			}
			return "", fmt.Errorf("authorize: redirected without a code: %s", loc)
		}
		next = loc
		if strings.HasPrefix(loc, "/") {
			next = e.url + loc
		}
	}
	return "", errors.New("authorize: too many redirects")
}

// exchange redeems code at the token endpoint (Basic, as x/oauth2 does)
// and returns the access token.
func (e *oidcBench) exchange(c oidcBenchClient, code string) (string, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {benchRedirect},
		"code_verifier": {benchVerifier}}
	req, _ := http.NewRequest("POST", e.issuer+"/oauth/token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(c.id, c.secret)
	res, err := e.client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		IDToken     string `json:"id_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 || out.IDToken == "" {
		return "", fmt.Errorf("token: %d %v", res.StatusCode, err)
	}
	return out.AccessToken, nil
}

// signIn signs worker w's user in to the ES256 client with its session
// (authorize, the callback, the token endpoint) and returns the access
// token.
func (e *oidcBench) signIn(hc *http.Client, w int) (string, error) {
	code, err := e.authorizeCode(hc, e.clients["ES256"], e.tokens[w])
	if err != nil {
		return "", err
	}
	return e.exchange(e.clients["ES256"], code)
}

// accessTokens returns an access token of the ES256 client per worker.
func (e *oidcBench) accessTokens(b *testing.B, hc *http.Client) []string {
	ats := make([]string, benchConc)
	for w := range ats {
		var err error
		if ats[w], err = e.signIn(hc, w); err != nil {
			b.Fatal(err)
		}
	}
	return ats
}

// userinfo calls userinfo with access token at.
func (e *oidcBench) userinfo(at string) error {
	req, _ := http.NewRequest("GET", e.issuer+"/userinfo", nil)
	req.Header.Set("Authorization", "Bearer "+at)
	res, err := e.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("userinfo: %d", res.StatusCode)
	}
	return nil
}

// codes is a supply of codes for one client, made before a round.
type codes struct {
	mu   sync.Mutex
	list []string
}

func (c *codes) take() (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.list) == 0 {
		return "", false
	}
	code := c.list[len(c.list)-1]
	c.list = c.list[:len(c.list)-1]
	return code, true
}

// fill makes n codes of client c, from benchConc browsers.
func (e *oidcBench) fill(s *codes, c oidcBenchClient, n int) error {
	hc := e.noRedirect()
	var wg sync.WaitGroup
	var failed error
	var mu sync.Mutex
	for w := range benchConc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += benchConc {
				code, err := e.authorizeCode(hc, c, e.tokens[w])
				mu.Lock()
				if err != nil {
					failed = err
				} else {
					s.list = append(s.list, code)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return failed
}

// BenchmarkOIDCRatios measures the provider's calls against the floor
// and the API's own email-code sign-in, in the same run: rounds of one
// second alternate the kinds (in a rotating order; the codes a code
// exchange redeems are made before its second starts) and the median
// round's figures are reported:
//
//   - userinfo with an access token, as a share of the floor;
//   - a code exchange (the token endpoint: the code checked, an access
//     token and an ID token signed), with ES256 and with RS256 ID
//     tokens, per second and as a share of the API's email-code sign-ins
//     (send, then verify the mailed code) per second;
//   - a sign-in with a session (authorize, the callback, the token
//     endpoint; no page): the server's CPU time per sign-in.
//
// One op is the whole experiment:
//
//	go test -run XXX -bench OIDCRatios -benchtime 1x ./httpapi/
func BenchmarkOIDCRatios(b *testing.B) {
	e := newOIDCBench(b)
	hc := e.noRedirect()
	ats := e.accessTokens(b, hc)
	userinfo := func(w int) error { return e.userinfo(ats[w]) }
	var logins sync.Map // worker → next index
	otpLogin := func(w int) error {
		v, _ := logins.LoadOrStore(w, new(int))
		n := v.(*int)
		*n++
		email := fmt.Sprintf("otp%d-%d@example.com", w, *n)
		if _, err := e.post("/api/v1/otp/send", e.key, map[string]any{"email": email}); err != nil {
			return err
		}
		_, err := e.post("/api/v1/otp/verify", e.key, map[string]any{"email": email, "code": e.code(email)})
		return err
	}
	supply := map[string]*codes{"RS256": {}, "ES256": {}}
	exchange := func(alg string) func(int) error {
		return func(int) error {
			code, ok := supply[alg].take()
			if !ok {
				return errOutOfCodes
			}
			_, err := e.exchange(e.clients[alg], code)
			return err
		}
	}
	sso := func(w int) error { _, err := e.signIn(hc, w); return err }
	kinds := []ratioKind{
		{name: "floor", do: func(int) error { return e.get("/bench/floor", "") }},
		{name: "userinfo", do: userinfo},
		{name: "otp-login", do: otpLogin},
		{name: "exchange-ES256", do: exchange("ES256")},
		{name: "exchange-RS256", do: exchange("RS256")},
		{name: "sso", do: sso},
	}
	// The exchanges' supply: twice the last round's rate, at least 8000
	// (a fast day's first round exchanged more than 3000 ES256 codes in
	// its second).
	need := map[string]int{"RS256": 8000, "ES256": 8000}
	for _, alg := range []string{"RS256", "ES256"} {
		kinds[slices.IndexFunc(kinds, func(k ratioKind) bool { return k.name == "exchange-"+alg })].prep = func() error {
			supply[alg].list = supply[alg].list[:0]
			return e.fill(supply[alg], e.clients[alg], need[alg])
		}
	}
	const rounds = 7
	for range b.N {
		figures := map[string][]float64{}
		for round := range rounds {
			rate, cpu := e.ratioRound(b, round, kinds)
			for i, k := range kinds {
				if alg, ok := strings.CutPrefix(k.name, "exchange-"); ok {
					need[alg] = max(8000, int(2*rate[i]))
				}
			}
			figures["userinfo-%floor"] = append(figures["userinfo-%floor"], 100*rate[1]/rate[0])
			figures["otp-logins/s"] = append(figures["otp-logins/s"], rate[2])
			figures["ES256-exchanges/s"] = append(figures["ES256-exchanges/s"], rate[3])
			figures["RS256-exchanges/s"] = append(figures["RS256-exchanges/s"], rate[4])
			figures["ES256-%otp-login"] = append(figures["ES256-%otp-login"], 100*rate[3]/rate[2])
			figures["RS256-%otp-login"] = append(figures["RS256-%otp-login"], 100*rate[4]/rate[2])
			figures["sso-cpu-ms"] = append(figures["sso-cpu-ms"], float64(cpu[5])/float64(time.Millisecond))
			figures["sso/s"] = append(figures["sso/s"], rate[5])
		}
		for name, v := range figures {
			slices.Sort(v)
			b.ReportMetric(v[rounds/2], name)
		}
	}
}

// errOutOfCodes: a code exchange's second outran the codes made for it.
var errOutOfCodes = errors.New("out of codes: make more before the round")

// BenchmarkOIDCUserinfo is userinfo with an access token from 32
// clients (for profiles: BenchmarkOIDCRatios gives the ratios).
func BenchmarkOIDCUserinfo(b *testing.B) {
	e := newOIDCBench(b)
	ats := e.accessTokens(b, e.noRedirect())
	e.load(b, benchConc, func(w, _ int) error { return e.userinfo(ats[w]) })
}

// BenchmarkOIDCSignIn is a sign-in with a session (authorize, callback,
// token endpoint; ES256 ID tokens) from 32 clients (for profiles).
func BenchmarkOIDCSignIn(b *testing.B) {
	e := newOIDCBench(b)
	hc := e.noRedirect()
	e.load(b, benchConc, func(w, _ int) error { _, err := e.signIn(hc, w); return err })
}
