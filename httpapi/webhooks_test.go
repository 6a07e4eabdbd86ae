package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

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
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, plan ...int) *receiver {
	r := &receiver{plan: plan, seen: make(chan struct{}, 1024)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{req.Header.Clone(), body})
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
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// deliver runs the webhook worker until nothing it started is in flight.
func (ts *testServer) deliver() {
	ts.t.Helper()
	if err := ts.Worker.RunOnce(context.Background()); err != nil {
		ts.t.Fatal(err)
	}
	ts.Worker.Wait()
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

func TestWebhookRegistration(t *testing.T) {
	ts := newTestServer(t)
	rcv := newReceiver(t)
	id, secret := ts.createWebhook(rcv.URL+"/hook", nil)
	if len(secret) != 64 {
		t.Fatalf("secret %q is not 64 hex characters", secret)
	}
	id2, _ := ts.createWebhook(rcv.URL+"/only-users", []string{"user.registered", "user.deleted"})

	r := ts.do("GET", "/api/v1/webhooks", ts.Key, nil)
	wantOK(t, r)
	list := r.Body["webhooks"].([]any)
	if len(list) != 2 {
		t.Fatalf("webhooks=%d", len(list))
	}
	for _, x := range list {
		w := x.(map[string]any)
		for _, f := range []string{"id", "project_id", "url", "secret", "created_at", "event_types"} {
			if _, ok := w[f]; !ok {
				t.Fatalf("webhook lacks %q: %v", f, w)
			}
		}
		if w["id"] == id && w["event_types"] != nil {
			t.Fatalf("event_types=%v, want null", w["event_types"])
		}
		if w["id"] == id2 && len(w["event_types"].([]any)) != 2 {
			t.Fatalf("event_types=%v", w["event_types"])
		}
	}

	// Unknown id: 404 with no code.
	r = ts.do("DELETE", "/api/v1/webhooks/nope", ts.Key, nil)
	if r.Status != 404 || r.Body["error"] != "Webhook not found" || r.Body["success"] != false {
		t.Fatalf("status=%d body=%s", r.Status, r.Raw)
	}
	if _, has := r.Body["code"]; has {
		t.Fatalf("404 carries a code: %s", r.Raw)
	}
	// Another project's key cannot see or delete it.
	other := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "other"})
	otherKey := ts.createKey(map[string]any{"projectId": str(t, obj(t, other.Body, "project"), "id"), "mode": "test"})
	if r := ts.do("DELETE", "/api/v1/webhooks/"+id, otherKey, nil); r.Status != 404 {
		t.Fatalf("other project's delete: %d", r.Status)
	}
	if r := ts.do("GET", "/api/v1/webhooks", otherKey, nil); len(r.Body["webhooks"].([]any)) != 0 {
		t.Fatal("other project sees the webhooks")
	}
	wantOK(t, ts.do("DELETE", "/api/v1/webhooks/"+id, ts.Key, nil))
	if r := ts.do("GET", "/api/v1/webhooks", ts.Key, nil); len(r.Body["webhooks"].([]any)) != 1 {
		t.Fatal("delete did not remove")
	}
}

func TestWebhookBadInput(t *testing.T) {
	ts := newTestServer(t)
	for name, body := range map[string]any{
		"no url":        map[string]any{},
		"ftp":           map[string]any{"url": "ftp://example.com/x"},
		"not a url":     map[string]any{"url": "::::"},
		"too long":      map[string]any{"url": "https://example.com/" + strings.Repeat("a", 2100)},
		"userinfo":      map[string]any{"url": "https://user:pw@example.com/"},
		"unknown event": map[string]any{"url": "http://127.0.0.1:9/x", "eventTypes": []string{"user.exploded"}},
		"event type":    map[string]any{"url": "http://127.0.0.1:9/x", "eventTypes": "user.registered"},
		"url type":      map[string]any{"url": 5},
	} {
		t.Run(name, func(t *testing.T) {
			wantError(t, ts.do("POST", "/api/v1/webhooks", ts.Key, body), 400, "VALIDATION_ERROR")
		})
	}
	// A live-mode key may not target private, loopback or link-local
	// addresses; a test-mode key may.
	live := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live"})
	for _, u := range []string{"http://127.0.0.1:8080/x", "http://[::1]/x", "http://169.254.169.254/latest", "http://10.1.2.3/x", "http://localhost:9/x"} {
		wantError(t, ts.do("POST", "/api/v1/webhooks", live, map[string]any{"url": u}), 400, "VALIDATION_ERROR")
	}
	wantOK(t, ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": "http://127.0.0.1:8080/x"}))
	// At most 20 per project.
	for i := 1; i < 20; i++ {
		wantOK(t, ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": "http://127.0.0.1:8080/x"}))
	}
	wantError(t, ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": "http://127.0.0.1:8080/x"}), 400, "VALIDATION_ERROR")
}

func TestWebhookDeliverySignedAndFiltered(t *testing.T) {
	ts := newTestServer(t)
	all := newReceiver(t)
	users := newReceiver(t)
	_, secret := ts.createWebhook(all.URL, nil)
	_, _ = ts.createWebhook(users.URL, []string{"user.registered"})
	login := ts.login("w@example.com")
	ts.deliver()

	got := all.deliveries()
	if len(got) != 2 {
		t.Fatalf("all-events receiver got %d deliveries, want 2 (user.registered, session.created)", len(got))
	}
	var env struct {
		ID, Type  string
		CreatedAt string `json:"created_at"`
		Data      map[string]any
	}
	first := got[0]
	if err := json.Unmarshal(first.body, &env); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	json.Unmarshal(first.body, &raw)
	for _, f := range []string{"id", "type", "created_at", "data"} {
		if _, ok := raw[f]; !ok {
			t.Fatalf("envelope lacks %q: %s", f, first.body)
		}
	}
	if raw["type"] != "user.registered" || raw["data"].(map[string]any)["user_id"] != login.Body["userId"] || raw["data"].(map[string]any)["email"] != "w@example.com" {
		t.Fatalf("envelope=%s", first.body)
	}
	if !strings.HasPrefix(raw["id"].(string), "evt_") {
		t.Fatalf("id=%v", raw["id"])
	}
	if first.header.Get("X-Service-Signature") != webhook.Sign(secret, first.body) {
		t.Fatal("X-Service-Signature does not verify over the raw body")
	}
	if first.header.Get("X-Service-Event-Id") != raw["id"] || first.header.Get("X-Service-Delivery-Attempt") != "1" {
		t.Fatalf("headers=%v", first.header)
	}
	if err := webhook.VerifyStandard(webhook.StandardKey(secret), first.header, first.body, time.Now(), time.Hour*24*365*10); err != nil {
		t.Fatalf("standard webhooks verification: %v", err)
	}
	if n := len(users.deliveries()); n != 1 {
		t.Fatalf("filtered receiver got %d deliveries, want 1", n)
	}
}

func TestWebhookRetry(t *testing.T) {
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
	if d["status"] != "pending" || d["error"] == nil {
		t.Fatalf("delivery=%v", d)
	}
}
