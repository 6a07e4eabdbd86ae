package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/httpapi"
	"latchkey/internal/testkit"
	"latchkey/store"
	"latchkey/store/storetest"
	"latchkey/webhook"
)

const testAdminToken = "adm_testtesttesttesttesttest"

// The tests run on the store backend LATCHKEY_TEST_STORE names
// (storetest).
func TestMain(m *testing.M) { os.Exit(storetest.RunMain(m)) }

// ctx is the context of the tests' store and service calls: never
// cancelled, so cleanups may write too.
var ctx = context.Background()

// newClock returns the tests' clock, at a fixed start.
func newClock() *testkit.Clock {
	return testkit.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
}

// testServer is the real API over loopback HTTP on a real store of the
// backend the tests run on (storetest: by default a bbolt file).
type testServer struct {
	t       testing.TB
	URL     string
	DB      store.DB
	Keys    *store.Keyring
	Svc     *auth.Service
	Clock   *testkit.Clock
	Hooks   *webhook.Service
	Worker  *webhook.Worker
	Key     string // a test-mode key of Project
	Project *store.Project
	dsn     string // where the store is (storetest.New)
	http    *httptest.Server
	broken  bool
	opts    []func(*auth.Config)
	// storeOpts opens the data file (newTestServerStore sets them).
	storeOpts store.Options
	// api adjusts the server's configuration before it starts.
	api func(*httpapi.Config)
	// wrapDB, when set, wraps the store the service is given (a fault
	// injector: oidc_outage_test.go).
	wrapDB func(store.DB) store.DB
	// Metrics are fed by the store, the service, the worker and the
	// server, as main wires them.
	Metrics *httpapi.Metrics
	// hookWoken is set when the webhook worker asks to run again.
	hookWoken atomic.Bool
}

// breakStore closes the store under the running server, so every store
// call fails.
func (ts *testServer) breakStore() {
	ts.broken = true
	ts.DB.Close()
}

// settleFeed returns once the store's invalidation feed has told every
// change committed so far, then fills the key and project caches with a
// call using ts.Key. On PostgreSQL the feed tells changes up to a read
// later, and a late one empties those caches: a test that breaks the
// store and then relies on the caches settles first. A bbolt file has
// no feed: there it only makes the call.
func (ts *testServer) settleFeed() {
	t := ts.t
	t.Helper()
	if storetest.Backend(t) == storetest.Postgres {
		seen := make(chan string, 64)
		cancel := ts.DB.Watch(func(c store.Change) {
			if c.Kind == store.ChangeAPIKey {
				select {
				case seen <- c.ID:
				default:
				}
			}
		})
		// A marker committed after every change before it: once the
		// feed tells it, it has told those (it reads in commit order,
		// holes included).
		_, k, err := ts.Svc.CreateKey(ctx, auth.KeyInput{Mode: "test"})
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.After(30 * time.Second)
	wait:
		for {
			select {
			case id := <-seen:
				if id == k.Prefix {
					break wait
				}
			case <-deadline:
				t.Fatal("the invalidation feed did not tell a committed key within 30 s")
			}
		}
		cancel()
	}
	wantOK(t, ts.do("GET", "/api/v1/me", ts.Key, nil))
}

// newTestServer starts a server with a fresh store, the "default"
// project and a test key; the admin token is testAdminToken.
func newTestServer(t testing.TB, opts ...func(*auth.Config)) *testServer {
	t.Helper()
	return newTestServerWith(t, store.Options{}, nil, opts...)
}

// newLocalhostServer is newTestServer whose base URL and ts.URL name
// localhost rather than 127.0.0.1: browsers keep passkeys for a domain
// name, so the pages offer them only there.
func newLocalhostServer(t testing.TB, opts ...func(*auth.Config)) *testServer {
	t.Helper()
	ts := newTestServer(t, append([]func(*auth.Config){func(c *auth.Config) {
		c.BaseURL = strings.Replace(c.BaseURL, "127.0.0.1", "localhost", 1)
	}}, opts...)...)
	ts.URL = strings.Replace(ts.URL, "127.0.0.1", "localhost", 1)
	return ts
}

// newTestServerStore is newTestServer with store options (a lowered
// event cap, say).
func newTestServerStore(t testing.TB, so store.Options, opts ...func(*auth.Config)) *testServer {
	t.Helper()
	return newTestServerWith(t, so, nil, opts...)
}

// newTestServerAPI is newTestServer with api adjusting the server's
// configuration (readiness checks, say).
func newTestServerAPI(t testing.TB, api func(*httpapi.Config), opts ...func(*auth.Config)) *testServer {
	t.Helper()
	return newTestServerWith(t, store.Options{}, api, opts...)
}

// newTestServerWith is newTestServer with store options and an
// adjustment of the server's configuration.
func newTestServerWith(t testing.TB, so store.Options, api func(*httpapi.Config), opts ...func(*auth.Config)) *testServer {
	t.Helper()
	ts := &testServer{t: t, Clock: newClock(), dsn: storetest.New(t), opts: opts, storeOpts: so, api: api}
	ts.start()
	b, err := ts.Svc.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ts.Key, ts.Project = b.APIKey, b.Project
	return ts
}

var testMaster = bytes.Repeat([]byte{7}, 32)

// start opens the store and serves it.
func (ts *testServer) start() {
	t := ts.t
	t.Helper()
	ts.Metrics = httpapi.NewMetrics(httpapi.MetricsOptions{Version: "test", Now: ts.Clock.Now})
	so := ts.storeOpts
	so.ObserveCommit = ts.Metrics.ObserveCommit
	db, _, err := store.Open(ctx, ts.dsn, so)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := store.NewKeyring(testMaster)
	if err != nil {
		t.Fatal(err)
	}
	ts.DB, ts.Keys = db, keys
	ts.http = httptest.NewUnstartedServer(nil)
	ts.URL = "http://" + ts.http.Listener.Addr().String()
	cfg := auth.Config{BaseURL: ts.URL, AdminToken: testAdminToken, Now: ts.Clock.Now, Observer: ts.Metrics, BuiltInMail: httpapi.BuiltInMail,
		SigningKey: testkit.SigningKey}
	for _, o := range ts.opts {
		o(&cfg)
	}
	served := db
	if ts.wrapDB != nil {
		served = ts.wrapDB(db)
	}
	svc, err := auth.New(served, keys, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.Svc = svc
	ts.Hooks = &webhook.Service{DB: db, Keys: keys, Now: ts.Clock.Now}
	ts.Worker = &webhook.Worker{DB: db, Keys: keys, Now: ts.Clock.Now, Client: webhook.NewClient(2 * time.Second), Logger: slog.New(slog.DiscardHandler),
		OnWake: func() { ts.hookWoken.Store(true) }, Outcome: ts.Metrics.WebhookOutcome, Backchannel: svc.BackchannelLogoutDelivery}
	api := httpapi.Config{Webhooks: ts.Hooks, Metrics: ts.Metrics}
	if ts.api != nil {
		ts.api(&api)
	}
	ts.http.Config.Handler = specChecked(t, httpapi.New(svc, api))
	ts.http.Start()
	t.Cleanup(ts.stop)
}

// stop closes the server and the store, checking a data file is
// consistent.
func (ts *testServer) stop() {
	if ts.http == nil {
		return
	}
	ts.Worker.Close()
	ts.http.Close()
	ts.http = nil
	if ts.broken {
		return
	}
	if f, ok := ts.DB.(store.File); ok {
		if err := f.Check(); err != nil {
			ts.t.Errorf("data file check: %v", err)
		}
	}
	ts.DB.Close()
}

// restart stops the server and starts a new one on the same store.
func (ts *testServer) restart() {
	ts.stop()
	ts.start()
}

// commits returns a function that tells how many write transactions
// committed since commits was called (zero: nothing was written); false
// on a store that does not count them (only a bbolt file does:
// store.File.CommitID), where tests skip their assertions on the count.
func (ts *testServer) commits() func() (int, bool) {
	f, ok := ts.DB.(store.File)
	if !ok {
		return func() (int, bool) { return 0, false }
	}
	before := f.CommitID()
	return func() (int, bool) { return f.CommitID() - before, true }
}

// response is a decoded HTTP response.
type response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// do sends a request with an optional bearer token and JSON body (a
// string body is sent as is).
func (ts *testServer) do(method, path, token string, body any) *response {
	ts.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			ts.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, ts.URL+path, rd)
	if err != nil {
		ts.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return ts.send(req)
}

// send performs req without following redirects.
func (ts *testServer) send(req *http.Request) *response {
	ts.t.Helper()
	return ts.sendWith(&http.Client{}, req)
}

// sendFrom performs req from local address ip (any 127.0.0.0/8 address
// works on loopback), for tests of per-client limits.
func (ts *testServer) sendFrom(ip string, req *http.Request) *response {
	ts.t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	defer tr.CloseIdleConnections()
	return ts.sendWith(&http.Client{Transport: tr}, req)
}

// sendWith performs req with client, without following redirects.
func (ts *testServer) sendWith(client *http.Client, req *http.Request) *response {
	ts.t.Helper()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	r := &response{Status: res.StatusCode, Header: res.Header, Raw: raw}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &r.Body); err != nil {
			ts.t.Fatalf("%s %s: body is not a JSON object: %s", req.Method, req.URL.Path, raw)
		}
	}
	return r
}

// admin sends an admin API request.
func (ts *testServer) admin(method, path string, body any) *response {
	ts.t.Helper()
	return ts.do(method, path, testAdminToken, body)
}

// wantOK fails unless r is 200 with success:true.
func wantOK(t testing.TB, r *response) {
	t.Helper()
	if r.Status != http.StatusOK || r.Body["success"] != true {
		t.Fatalf("status=%d body=%s, want 200 success", r.Status, r.Raw)
	}
}

// wantError fails unless r is the error envelope with status and code.
func wantError(t testing.TB, r *response, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status=%d, want %d (body %s)", r.Status, status, r.Raw)
	}
	if r.Body["success"] != false {
		t.Fatalf("success=%v, want false (body %s)", r.Body["success"], r.Raw)
	}
	if msg, _ := r.Body["error"].(string); msg == "" {
		t.Fatalf("error text missing (body %s)", r.Raw)
	}
	if got, _ := r.Body["code"].(string); got != code {
		t.Fatalf("code=%q, want %q (body %s)", got, code, r.Raw)
	}
}

// str returns a string field of a decoded object, failing when absent.
func str(t testing.TB, m map[string]any, key string) string {
	t.Helper()
	v, ok := m[key].(string)
	if !ok {
		t.Fatalf("field %q is %T (%v), want string", key, m[key], m[key])
	}
	return v
}

// obj returns an object field.
func obj(t testing.TB, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("field %q is %T, want object", key, m[key])
	}
	return v
}

// createKey makes a key through the admin API and returns it.
func (ts *testServer) createKey(body map[string]any) string {
	ts.t.Helper()
	r := ts.admin("POST", "/api/v1/admin/keys", body)
	wantOK(ts.t, r)
	return str(ts.t, r.Body, "key")
}

// lastMail returns the newest queued message to addr, opened with the
// keyring as the mail worker would.
func (ts *testServer) lastMail(addr string) store.MailContent {
	ts.t.Helper()
	return ts.lastMailOf(addr, "")
}

// lastMailOf is lastMail for the newest message of kind ("" for any).
func (ts *testServer) lastMailOf(addr, kind string) store.MailContent {
	ts.t.Helper()
	var found *store.Mail
	ts.DB.View(ctx, func(tx store.Tx) error {
		// Every queued message, whether the clock is ahead of the
		// machine's or behind it.
		ms, err := tx.DueMail(later(time.Now(), ts.Clock.Now()).Add(1000*time.Hour), 1<<20)
		if err != nil {
			ts.t.Fatal(err)
		}
		for _, m := range ms {
			if m.To == addr && (kind == "" || m.Kind == kind) {
				found = m
			}
		}
		return nil
	})
	if found == nil {
		ts.t.Fatalf("no mail queued for %s", addr)
	}
	body, err := ts.Keys.Open(found.Body, store.MailAAD)
	if err != nil {
		ts.t.Fatal(err)
	}
	var c store.MailContent
	if err := json.Unmarshal(body, &c); err != nil {
		ts.t.Fatal(err)
	}
	return c
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// mailCount returns how many messages are queued.
func (ts *testServer) mailCount() int {
	var n int
	ts.DB.View(ctx, func(tx store.Tx) (err error) { n, err = tx.MailCount(); return err })
	return n
}

// login signs addr in by email OTP and returns the verify response.
func (ts *testServer) login(addr string) *response {
	ts.t.Helper()
	wantOK(ts.t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	code := ts.lastMail(strings.ToLower(strings.TrimSpace(addr))).Code
	r := ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code})
	wantOK(ts.t, r)
	ts.Clock.Advance(31 * time.Second) // past the send throttle
	return r
}

// changeEmail changes the session's address the verified way: PATCH
// /user {email}, then /user/email/verify with the code mailed to addr.
// It returns the verify response.
func (ts *testServer) changeEmail(tok, addr string) *response {
	ts.t.Helper()
	p := ts.do("PATCH", "/api/v1/user", tok, map[string]any{"email": addr})
	wantOK(ts.t, p)
	if got := p.Body["pendingEmail"]; got != addr {
		ts.t.Fatalf("pendingEmail=%v, want %s (body %s)", got, addr, p.Raw)
	}
	r := ts.do("POST", "/api/v1/user/email/verify", tok, map[string]any{"code": ts.lastMail(addr).Code})
	wantOK(ts.t, r)
	ts.Clock.Advance(31 * time.Second) // past the send throttle
	return r
}

// methodEvents counts the authentication events of (method, action) by
// failureCode ("" for a success), from the admin events API.
func (ts *testServer) methodEvents(method, action string) map[string]int {
	ts.t.Helper()
	r := ts.admin("GET", "/api/v1/admin/events?limit=1000", nil)
	wantOK(ts.t, r)
	out := map[string]int{}
	for _, e := range r.Body["events"].([]any) {
		ev := e.(map[string]any)
		if ev["method"] != method || ev["action"] != action {
			continue
		}
		fc, _ := ev["failureCode"].(string)
		if (fc == "") != (ev["success"] == true) {
			ts.t.Fatalf("event %v", ev)
		}
		out[fc]++
	}
	return out
}

// outbox returns the types of the outbox's events in order.
func (ts *testServer) outbox() []string {
	var types []string
	ts.DB.View(ctx, func(tx store.Tx) error {
		evs, _ := tx.EventsAfter(0, 1<<20)
		for _, e := range evs {
			types = append(types, e.Type)
		}
		return nil
	})
	return types
}

// outboxEvent is one outbox row as a webhook would carry it.
type outboxEvent struct {
	Type string
	Data map[string]any
}

// outboxSince returns the outbox events after the first n.
func (ts *testServer) outboxSince(n int) []outboxEvent {
	ts.t.Helper()
	var out []outboxEvent
	ts.DB.View(ctx, func(tx store.Tx) error {
		evs, err := tx.EventsAfter(0, 1<<20)
		if err != nil {
			ts.t.Fatal(err)
		}
		for _, e := range evs[n:] {
			var d map[string]any
			if err := json.Unmarshal(e.Data, &d); err != nil {
				ts.t.Fatal(err)
			}
			out = append(out, outboxEvent{e.Type, d})
		}
		return nil
	})
	return out
}

// wantLoginUser asserts a login result's user object (every login result
// carries it: docs/api.md, "Login results"): exactly the keys id,
// email, externalUserId, company_id, first_name, emailVerified (a
// boolean), groups (an array) and metadata (an object), the result's
// userId, the given email, and companyId beside it.
func wantLoginUser(t *testing.T, body map[string]any, email string) {
	t.Helper()
	u, ok := body["user"].(map[string]any)
	if !ok {
		t.Fatalf("login result without a user object: %v", body)
	}
	var keys []string
	for k := range u {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if got := strings.Join(keys, ","); got != "company_id,email,emailVerified,externalUserId,first_name,groups,id,metadata" {
		t.Fatalf("user keys = %s, want company_id,email,emailVerified,externalUserId,first_name,groups,id,metadata", got)
	}
	if _, ok := u["emailVerified"].(bool); !ok {
		t.Fatalf("emailVerified = %v, want a boolean", u["emailVerified"])
	}
	_, isList := u["groups"].([]any)
	_, isObject := u["metadata"].(map[string]any)
	if !isList || !isObject {
		t.Fatalf("groups = %v, metadata = %v; want an array and an object", u["groups"], u["metadata"])
	}
	if u["id"] != body["userId"] || u["email"] != email {
		t.Fatalf("user = %v, want id %v and email %s", u, body["userId"], email)
	}
	if _, ok := body["companyId"]; !ok {
		t.Fatalf("login result without companyId: %v", body)
	}
}

// parallel sends the n requests made by mk all at once, each on its own
// connection, and returns their statuses and decoded bodies in order.
// Safe to use from the test goroutine only; failures to send are
// reported after all returned.
func (ts *testServer) parallel(n int, mk func(i int) *http.Request) []*response {
	ts.t.Helper()
	out := make([]*response, n)
	errs := make([]error, n)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		req := mk(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := client.Do(req)
			if err != nil {
				errs[i] = err
				return
			}
			defer res.Body.Close()
			raw, err := io.ReadAll(res.Body)
			r := &response{Status: res.StatusCode, Header: res.Header, Raw: raw}
			if err == nil {
				err = json.Unmarshal(raw, &r.Body)
			}
			out[i], errs[i] = r, err
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			ts.t.Fatalf("request %d: %v", i, err)
		}
	}
	return out
}

// statusCodes counts responses by "status code" (e.g. "401 INVALID_CODE").
func statusCodes(rs []*response) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		code, _ := r.Body["code"].(string)
		out[fmt.Sprintf("%d %s", r.Status, code)]++
	}
	return out
}

// loginFrom signs addr in by email OTP as an app backend does for an end
// user at ip (X-End-User-IP; none when empty) with browser ua
// (User-Agent), and returns the session token.
func (ts *testServer) loginFrom(addr, ip, ua string) string {
	ts.t.Helper()
	call := func(path, body string) *response {
		req, _ := http.NewRequest("POST", ts.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+ts.Key)
		req.Header.Set("Content-Type", "application/json")
		if ip != "" {
			req.Header.Set("X-End-User-IP", ip)
		}
		req.Header.Set("User-Agent", ua)
		return ts.send(req)
	}
	wantOK(ts.t, call("/api/v1/otp/send", fmt.Sprintf(`{"email":%q}`, addr)))
	code := ts.lastMail(addr).Code
	r := call("/api/v1/otp/verify", fmt.Sprintf(`{"email":%q,"code":%q}`, addr, code))
	wantOK(ts.t, r)
	ts.Clock.Advance(31 * time.Second) // past the send throttle
	return str(ts.t, r.Body, "token")
}

// sessionID returns the id of a session token's session (GET /session).
func (ts *testServer) sessionID(token string) string {
	ts.t.Helper()
	r := ts.do("GET", "/api/v1/session", token, nil)
	wantOK(ts.t, r)
	return str(ts.t, obj(ts.t, r.Body, "session"), "id")
}
