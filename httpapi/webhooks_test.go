package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"latchkey/webhook"
)

// receiver is a local webhook endpoint that records deliveries and
// answers with the statuses queued in plan (then 200).
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	got   []delivery
	plan  []int
	block chan struct{} // when set, requests hang until closed
	seen  chan struct{} // receives one value per delivery
}

type delivery struct {
	path   string
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, plan ...int) *receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return newReceiverOn(t, ln, plan...)
}

// newReceiverOn is newReceiver listening on ln.
func newReceiverOn(t *testing.T, ln net.Listener, plan ...int) *receiver {
	r := &receiver{plan: plan, seen: make(chan struct{}, 1024)}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{req.URL.Path, req.Header.Clone(), body})
		status := 200
		if len(r.plan) > 0 {
			status, r.plan = r.plan[0], r.plan[1:]
		}
		block := r.block
		r.mu.Unlock()
		r.seen <- struct{}{}
		if block != nil {
			select {
			case <-block:
			case <-req.Context().Done():
			}
			return
		}
		w.WriteHeader(status)
	}))
	r.Server.Listener.Close()
	r.Server.Listener = ln
	r.Server.Start()
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// deliver runs the webhook worker, as the scheduler does on its wake-ups,
// until a round starts no delivery: everything due at the test clock's
// time has been attempted and recorded.
func (ts *testServer) deliver() {
	ts.t.Helper()
	for {
		ts.hookWoken.Store(false)
		if err := ts.Worker.RunOnce(context.Background()); err != nil {
			ts.t.Fatal(err)
		}
		ts.Worker.Wait()
		if !ts.hookWoken.Load() {
			return
		}
	}
}

func (ts *testServer) createWebhook(url string, types []string) (id, secret string) {
	ts.t.Helper()
	body := map[string]any{"url": url}
	if types != nil {
		body["eventTypes"] = types
	}
	r := ts.do("POST", "/api/v1/webhooks", ts.Key, body)
	wantOK(ts.t, r)
	wh := obj(ts.t, r.Body, "webhook")
	return str(ts.t, wh, "id"), str(ts.t, wh, "secret")
}

// history returns the delivery records of webhook id, newest first.
func (ts *testServer) history(key, id string) []map[string]any {
	ts.t.Helper()
	r := ts.do("GET", "/api/v1/webhooks/"+id+"/deliveries", key, nil)
	wantOK(ts.t, r)
	var out []map[string]any
	for _, d := range r.Body["deliveries"].([]any) {
		out = append(out, d.(map[string]any))
	}
	return out
}

func TestWebhookRegistration(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rcv := newReceiver(t)
	r := ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": rcv.URL + "/hook"})
	wantOK(t, r)
	created := obj(t, r.Body, "webhook")
	if len(created) != 3 {
		t.Fatalf("webhook=%v, want exactly id, url, secret", created)
	}
	id, secret := str(t, created, "id"), str(t, created, "secret")
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(secret) {
		t.Fatalf("secret %q is not 64 hex characters", secret)
	}
	if _, err := uuid.Parse(id); err != nil || created["url"] != rcv.URL+"/hook" {
		t.Fatalf("webhook=%v", created)
	}
	ts.Clock.Advance(time.Millisecond)
	id2, _ := ts.createWebhook(rcv.URL+"/only-users", []string{"user.registered", "user.deleted"})
	ts.Clock.Advance(time.Millisecond)
	id3, _ := ts.createWebhook(rcv.URL+"/none", []string{})

	r = ts.do("GET", "/api/v1/webhooks", ts.Key, nil)
	wantOK(t, r)
	list := r.Body["webhooks"].([]any)
	if len(list) != 3 {
		t.Fatalf("webhooks=%d", len(list))
	}
	// Oldest first, each with exactly the documented fields.
	for i, want := range []struct {
		id, url string
		types   any
	}{
		{id, rcv.URL + "/hook", nil},
		{id2, rcv.URL + "/only-users", []any{"user.deleted", "user.registered"}},
		{id3, rcv.URL + "/none", []any{}},
	} {
		w := list[i].(map[string]any)
		if len(w) != 6 {
			t.Fatalf("webhook %d=%v, want id, project_id, url, secret, created_at, event_types", i, w)
		}
		if w["id"] != want.id || w["url"] != want.url || w["project_id"] != ts.Project.ID {
			t.Fatalf("webhook %d=%v, want id %s url %s", i, w, want.id, want.url)
		}
		if got, _ := json.Marshal(w["event_types"]); string(got) != mustJSON(want.types) {
			t.Fatalf("webhook %d event_types=%s, want %s", i, got, mustJSON(want.types))
		}
		if s, _ := w["secret"].(string); len(s) != 64 {
			t.Fatalf("webhook %d secret=%v", i, w["secret"])
		}
	}
	if w := list[0].(map[string]any); w["secret"] != secret || w["created_at"] != "2026-11-22T10:00:00.000Z" {
		t.Fatalf("webhook=%v, want the creation secret and created_at", w)
	}

	// Unknown id: 404 with no code.
	for _, path := range []string{"/api/v1/webhooks/nope", "/api/v1/webhooks/" + uuid.NewString()} {
		r = ts.do("DELETE", path, ts.Key, nil)
		if r.Status != 404 || r.Body["error"] != "Webhook not found" || r.Body["success"] != false || len(r.Body) != 2 {
			t.Fatalf("DELETE %s: status=%d body=%s, want 404 {success:false, error:\"Webhook not found\"}", path, r.Status, r.Raw)
		}
	}
	// Another project's key cannot see, read or delete it.
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	otherKey := ts.createKey(map[string]any{"projectId": str(t, obj(t, other.Body, "project"), "id"), "mode": "test"})
	for _, c := range []struct{ method, path string }{{"DELETE", "/api/v1/webhooks/" + id}, {"GET", "/api/v1/webhooks/" + id + "/deliveries"}} {
		r := ts.do(c.method, c.path, otherKey, nil)
		if r.Status != 404 || r.Body["error"] != "Webhook not found" || len(r.Body) != 2 {
			t.Fatalf("other project's %s %s: status=%d body=%s", c.method, c.path, r.Status, r.Raw)
		}
	}
	if r := ts.do("GET", "/api/v1/webhooks", otherKey, nil); len(r.Body["webhooks"].([]any)) != 0 {
		t.Fatal("other project sees the webhooks")
	}
	r = ts.do("DELETE", "/api/v1/webhooks/"+id, ts.Key, nil)
	wantOK(t, r)
	if len(r.Body) != 1 {
		t.Fatalf("delete body=%s, want {success:true}", r.Raw)
	}
	if r := ts.do("GET", "/api/v1/webhooks", ts.Key, nil); len(r.Body["webhooks"].([]any)) != 2 {
		t.Fatal("delete did not remove")
	}
	// A webhook subscribed to no type receives nothing.
	ts.login("none@example.com")
	ts.deliver()
	got := rcv.deliveries()
	if len(got) != 1 {
		t.Fatalf("receiver got %d deliveries, want 1 (user.registered for /only-users)", len(got))
	}
	if d, _ := byType(t, got, "user.registered"); d.path != "/only-users" {
		t.Fatalf("user.registered delivered to %s, want /only-users", d.path)
	}
	if h := ts.history(ts.Key, id3); len(h) != 0 {
		t.Fatalf("webhook with eventTypes [] has history %v", h)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestWebhookBadInput(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for name, body := range map[string]any{
		"no url":           map[string]any{},
		"empty url":        map[string]any{"url": ""},
		"null url":         map[string]any{"url": nil},
		"ftp":              map[string]any{"url": "ftp://example.com/x"},
		"no scheme":        map[string]any{"url": "example.com/x"},
		"javascript":       map[string]any{"url": "javascript:alert(1)"},
		"not a url":        map[string]any{"url": "::::"},
		"no host":          map[string]any{"url": "http:///x"},
		"too long":         map[string]any{"url": "https://example.com/" + strings.Repeat("a", 2029)},
		"userinfo":         map[string]any{"url": "https://user:pw@example.com/"},
		"shorthand ip":     map[string]any{"url": "http://2130706433/x"},
		"unknown event":    map[string]any{"url": "http://127.0.0.1:9/x", "eventTypes": []string{"user.registered", "user.exploded"}},
		"empty event":      map[string]any{"url": "http://127.0.0.1:9/x", "eventTypes": []string{""}},
		"event type":       map[string]any{"url": "http://127.0.0.1:9/x", "eventTypes": "user.registered"},
		"event object":     map[string]any{"url": "http://127.0.0.1:9/x", "eventTypes": map[string]any{"user.registered": true}},
		"event number":     map[string]any{"url": "http://127.0.0.1:9/x", "eventTypes": []any{1}},
		"url type":         map[string]any{"url": 5},
		"url array":        map[string]any{"url": []string{"http://127.0.0.1:9/x"}},
		"body not object":  []string{"http://127.0.0.1:9/x"},
		"body json string": "http://127.0.0.1:9/x",
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, ts.do("POST", "/api/v1/webhooks", ts.Key, body), 400, "VALIDATION_ERROR")
		})
	}
	// 2,048 characters is the longest URL accepted.
	long := "https://93.184.216.34/" + strings.Repeat("a", 2048-22)
	wantOK(t, ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": long}))
	wantError(t, ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": long + "a"}), 400, "VALIDATION_ERROR")

	// A live-mode key may not target private, loopback or link-local
	// addresses, nor a name that resolves to one; a test-mode key may
	// target loopback (and TestWebhookTestModeTargets shows what it may not).
	live := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live"})
	for _, u := range []string{
		"http://127.0.0.1:8080/x", "http://127.9.9.9/x", "http://[::1]/x", "http://169.254.169.254/latest/meta-data/",
		"http://10.1.2.3/x", "http://192.168.1.1/x", "http://172.16.0.1/x", "http://172.31.255.255/x",
		"http://0.0.0.0:8080/x", "http://[::ffff:127.0.0.1]/x", "http://[::ffff:a9fe:a9fe]/x", "http://[fd00::1]/x",
		"http://[fe80::1%25eth0]/x", "http://100.64.0.1/x", "http://localhost:9/x", "http://LocalHost./x", "http://app.localhost/x",
		// IPv4 embedded in IPv6: NAT64, 6to4, Teredo (server or inverted client), IPv4-translated.
		"http://[64:ff9b::a9fe:a9fe]/x", "http://[2002:a00:1::1]/x", "http://[2001:0:a00:1::1]/x",
		"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x", "http://[::ffff:0:a00:1]/x",
	} {
		t.Run("live "+u, func(t *testing.T) {
			r := ts.do("POST", "/api/v1/webhooks", live, map[string]any{"url": u})
			wantError(t, r, 400, "VALIDATION_ERROR")
			if !strings.Contains(r.Body["error"].(string), "private") {
				t.Fatalf("error=%v, want it to say the address is private", r.Body["error"])
			}
		})
	}
	wantOK(t, ts.do("POST", "/api/v1/webhooks", live, map[string]any{"url": "https://93.184.216.34/x"}))
	wantOK(t, ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": "http://127.0.0.1:8080/x"}))
	if n := len(ts.do("GET", "/api/v1/webhooks", ts.Key, nil).Body["webhooks"].([]any)); n != 2 {
		t.Fatalf("bad input stored webhooks: the test-mode key sees %d, want 2", n)
	}
	if n := len(ts.do("GET", "/api/v1/webhooks", live, nil).Body["webhooks"].([]any)); n != 1 {
		t.Fatalf("bad input stored webhooks: the live-mode key sees %d, want 1", n)
	}
	// At most 20 per project, whatever the key.
	for i := 3; i < 20; i++ {
		wantOK(t, ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": "http://127.0.0.1:8080/x"}))
	}
	r := ts.do("POST", "/api/v1/webhooks", live, map[string]any{"url": "https://93.184.216.34/x"})
	wantError(t, r, 400, "VALIDATION_ERROR")
	if !strings.Contains(r.Body["error"].(string), "20") {
		t.Fatalf("error=%v, want it to name the limit", r.Body["error"])
	}
	// Deleting one frees a place.
	first := ts.do("GET", "/api/v1/webhooks", ts.Key, nil).Body["webhooks"].([]any)[0].(map[string]any)["id"].(string)
	wantOK(t, ts.do("DELETE", "/api/v1/webhooks/"+first, ts.Key, nil))
	wantOK(t, ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": "http://127.0.0.1:8080/x"}))
}

// byType returns the one delivery in got whose envelope has type typ.
// Deliveries of different events run concurrently, so their order at the
// receiver is not fixed.
func byType(t *testing.T, got []delivery, typ string) (delivery, map[string]any) {
	t.Helper()
	var found []delivery
	var env map[string]any
	for _, d := range got {
		var e map[string]any
		if err := json.Unmarshal(d.body, &e); err != nil {
			t.Fatalf("delivery body is not JSON: %s", d.body)
		}
		if e["type"] == typ {
			found, env = append(found, d), e
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d deliveries of type %s, want 1", len(found), typ)
	}
	return found[0], env
}

// wantData checks an event's data has exactly the fields of want.
func wantData(t *testing.T, env map[string]any, want map[string]any) {
	t.Helper()
	data, ok := env["data"].(map[string]any)
	if !ok || len(data) != len(want) {
		t.Fatalf("%v data=%v, want %v", env["type"], env["data"], want)
	}
	for k, v := range want {
		if data[k] != v {
			t.Fatalf("%v data.%s=%v, want %v", env["type"], k, data[k], v)
		}
	}
}

func TestWebhookDeliverySignedAndFiltered(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	all := newReceiver(t)
	users := newReceiver(t)
	_, secret := ts.createWebhook(all.URL, nil)
	_, usersSecret := ts.createWebhook(users.URL, []string{"user.registered"})
	ts.Clock.Advance(1234567 * time.Microsecond) // created_at keeps the milliseconds, drops the rest
	login := ts.login("w@example.com")
	ts.deliver()

	got := all.deliveries()
	if len(got) != 2 {
		t.Fatalf("all-events receiver got %d deliveries, want 2 (user.registered, session.created)", len(got))
	}
	reg, raw := byType(t, got, "user.registered")
	if len(raw) != 4 {
		t.Fatalf("envelope has %d fields, want id, type, created_at, data: %s", len(raw), reg.body)
	}
	for _, f := range []string{"id", "type", "created_at", "data"} {
		if _, ok := raw[f]; !ok {
			t.Fatalf("envelope lacks %q: %s", f, reg.body)
		}
	}
	wantData(t, raw, map[string]any{"user_id": login.Body["userId"], "email": "w@example.com"})
	sess, sessEnv := byType(t, got, "session.created")
	wantData(t, sessEnv, map[string]any{"user_id": login.Body["userId"], "session_id": sessEnv["data"].(map[string]any)["session_id"], "method": "email_otp"})
	if id, _ := sessEnv["data"].(map[string]any)["session_id"].(string); id == "" {
		t.Fatalf("session.created session_id=%v", sessEnv["data"])
	}
	for _, d := range []delivery{reg, sess} {
		var env map[string]any
		json.Unmarshal(d.body, &env)
		id, _ := env["id"].(string)
		if !regexp.MustCompile(`^evt_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(id) {
			t.Fatalf("id=%q, want evt_<uuid>", id)
		}
		if env["created_at"] != "2026-11-22T10:00:01.234Z" {
			t.Fatalf("created_at=%v, want RFC 3339 UTC with milliseconds", env["created_at"])
		}
		if d.header.Get("Content-Type") != "application/json" {
			t.Fatalf("Content-Type=%q", d.header.Get("Content-Type"))
		}
		if d.header.Get("X-Service-Signature") != webhook.Sign(secret, d.body) {
			t.Fatal("X-Service-Signature does not verify over the raw body")
		}
		if d.header.Get("X-Service-Event-Id") != id || d.header.Get("X-Service-Delivery-Attempt") != "1" || d.header.Get("Webhook-Id") != id {
			t.Fatalf("headers=%v", d.header)
		}
		if err := webhook.VerifyStandard(webhook.StandardKey(secret), d.header, d.body, ts.Clock.Now(), time.Minute); err != nil {
			t.Fatalf("standard webhooks verification: %v", err)
		}
	}
	if raw["id"] == sessEnv["id"] {
		t.Fatal("two events share an id")
	}
	// The filtered webhook gets only user.registered, the same event,
	// signed with its own secret.
	ug := users.deliveries()
	if len(ug) != 1 {
		t.Fatalf("filtered receiver got %d deliveries, want 1", len(ug))
	}
	if _, env := byType(t, ug, "user.registered"); env["id"] != raw["id"] {
		t.Fatalf("filtered receiver got event %v, want %v", env["id"], raw["id"])
	}
	if !webhook.Verify(usersSecret, ug[0].body, ug[0].header.Get("X-Service-Signature")) || webhook.Verify(secret, ug[0].body, ug[0].header.Get("X-Service-Signature")) {
		t.Fatal("filtered delivery not signed with its own webhook's secret")
	}
}

func TestWebhookRetry(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rcv := newReceiver(t, 500)
	id, _ := ts.createWebhook(rcv.URL, []string{"user.registered"})
	ts.login("r@example.com")
	ts.deliver()
	if n := len(rcv.deliveries()); n != 1 {
		t.Fatalf("deliveries=%d", n)
	}
	r := ts.do("GET", "/api/v1/webhooks/"+id+"/deliveries", ts.Key, nil)
	wantOK(t, r)
	ds := r.Body["deliveries"].([]any)
	d := ds[0].(map[string]any)
	if d["status"] != "pending" || d["response_status"] != float64(500) || d["attempt"] != float64(1) || d["next_attempt_at"] == nil {
		t.Fatalf("delivery=%v", d)
	}
	for _, f := range []string{"id", "event_id", "event_type", "attempt", "status", "response_status", "error", "duration_ms", "created_at", "next_attempt_at"} {
		if _, ok := d[f]; !ok {
			t.Fatalf("delivery lacks %q", f)
		}
	}
	// Not before 30 seconds.
	ts.Clock.Advance(29 * time.Second)
	ts.deliver()
	if n := len(rcv.deliveries()); n != 1 {
		t.Fatalf("retried early: deliveries=%d", n)
	}
	ts.Clock.Advance(time.Second)
	ts.deliver()
	got := rcv.deliveries()
	if len(got) != 2 || got[1].header.Get("X-Service-Delivery-Attempt") != "2" || got[1].header.Get("X-Service-Event-Id") != got[0].header.Get("X-Service-Event-Id") {
		t.Fatalf("retry: %d deliveries", len(got))
	}
	if string(got[0].body) != string(got[1].body) {
		t.Fatal("retry sent different bytes")
	}
	r = ts.do("GET", "/api/v1/webhooks/"+id+"/deliveries", ts.Key, nil)
	if d := r.Body["deliveries"].([]any)[0].(map[string]any); d["status"] != "succeeded" || d["attempt"] != float64(2) {
		t.Fatalf("newest delivery=%v", d)
	}
}

func TestWebhookHangDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	slow := newReceiver(t)
	slow.block = make(chan struct{})
	t.Cleanup(func() { close(slow.block) })
	fast := newReceiver(t)
	ts.createWebhook(slow.URL, nil)
	ts.createWebhook(fast.URL, nil)
	ts.login("h@example.com")
	start := time.Now()
	if err := ts.Worker.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The fast receiver gets both events while the slow one hangs (well
	// before the 2 s client timeout that cuts the hanging attempts).
	timeout := time.After(1500 * time.Millisecond)
	for i := 0; i < 2; i++ {
		select {
		case <-fast.seen:
		case <-timeout:
			t.Fatalf("fast receiver got %d deliveries while another hung", i)
		}
	}
	ts.Worker.Wait() // the hanging attempts are cut at the client timeout (2 s here)
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("hanging receiver held the worker %v", waited)
	}
}

func TestWebhookDeleteWithHistory(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rcv := newReceiver(t, 500, 500, 500)
	id, _ := ts.createWebhook(rcv.URL, nil)
	ts.login("d@example.com")
	ts.deliver()
	r := ts.do("GET", "/api/v1/webhooks/"+id+"/deliveries", ts.Key, nil)
	if len(r.Body["deliveries"].([]any)) == 0 {
		t.Fatal("no history")
	}
	wantOK(t, ts.do("DELETE", "/api/v1/webhooks/"+id, ts.Key, nil))
	ts.Clock.Advance(time.Hour)
	before := len(rcv.deliveries())
	ts.deliver()
	if after := len(rcv.deliveries()); after != before {
		t.Fatalf("pending retries still delivered after delete: %d → %d", before, after)
	}
	if r := ts.do("GET", "/api/v1/webhooks/"+id+"/deliveries", ts.Key, nil); r.Status != 404 {
		t.Fatalf("deliveries of deleted webhook: %d", r.Status)
	}
}

func TestWebhookDialTimeSSRF(t *testing.T) {
	t.Parallel()
	// A live-mode webhook registered while its name resolved publicly is
	// refused at dial time when it points at loopback.
	ts := newTestServer(t)
	rcv := newReceiver(t)
	live := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live"})
	ts.Hooks.AllowPrivate = true // registration passes...
	r := ts.do("POST", "/api/v1/webhooks", live, map[string]any{"url": rcv.URL})
	wantOK(t, r)
	id := str(t, obj(t, r.Body, "webhook"), "id")
	ts.login("s@example.com") // ...but the worker does not allow private targets
	ts.deliver()
	if n := len(rcv.deliveries()); n != 0 {
		t.Fatalf("loopback receiver reached %d times by a live webhook", n)
	}
	r = ts.do("GET", "/api/v1/webhooks/"+id+"/deliveries", live, nil)
	d := r.Body["deliveries"].([]any)[0].(map[string]any)
	if d["status"] != "pending" || d["error"] == nil || d["response_status"] != nil {
		t.Fatalf("delivery=%v", d)
	}
	if e := d["error"].(string); !strings.Contains(e, "private") || strings.Contains(e, "127.0.0.1") {
		t.Fatalf("error=%q, want it to say the address is private without naming it", e)
	}
}
