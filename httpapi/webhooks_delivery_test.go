package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/webhook"
)

// rfc3339ms parses a delivery record timestamp.
func rfc3339ms(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse("2006-01-02T15:04:05.000Z", s)
	if err != nil {
		t.Fatalf("timestamp %v is not RFC 3339 UTC with milliseconds", v)
	}
	return at
}

// TestWebhookRetryScheduleToFailed: a receiver that always fails gets
// attempts 1 to 9 at 30 s, 2 min, 10 min, 30 min, 1 h, 3 h, 6 h and 12 h
// intervals, never earlier, across a restart, with the same event id and
// bytes and a fresh Standard Webhooks timestamp; the 9th failure is final.
func TestWebhookRetryScheduleToFailed(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rcv := newReceiver(t, 500, 500, 500, 500, 500, 500, 500, 500, 500, 500)
	id, secret := ts.createWebhook(rcv.URL, []string{"user.registered"})
	ts.login("fail@example.com")
	ts.deliver()
	schedule := []time.Duration{30 * time.Second, 2 * time.Minute, 10 * time.Minute, 30 * time.Minute,
		time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour}
	for i, wait := range schedule {
		ts.Clock.Advance(wait - time.Second)
		ts.deliver()
		if n := len(rcv.deliveries()); n != i+1 {
			t.Fatalf("attempt %d came %v early", i+2, time.Second)
		}
		if i == 3 {
			ts.restart() // pending retries survive a restart
		}
		ts.Clock.Advance(time.Second)
		ts.deliver()
		if n := len(rcv.deliveries()); n != i+2 {
			t.Fatalf("after %v: %d attempts, want %d", wait, n, i+2)
		}
	}
	ts.Clock.Advance(48 * time.Hour)
	ts.deliver()
	got := rcv.deliveries()
	if len(got) != 9 {
		t.Fatalf("%d attempts, want 9", len(got))
	}
	for i, d := range got {
		if a := d.header.Get("X-Service-Delivery-Attempt"); a != strconv.Itoa(i+1) {
			t.Fatalf("attempt %d header X-Service-Delivery-Attempt=%s", i+1, a)
		}
		if d.header.Get("X-Service-Event-Id") != got[0].header.Get("X-Service-Event-Id") || string(d.body) != string(got[0].body) {
			t.Fatalf("attempt %d changed the event id or the body", i+1)
		}
		ts := time.Unix(mustInt(t, d.header.Get("Webhook-Timestamp")), 0)
		if err := webhook.VerifyStandard(webhook.StandardKey(secret), d.header, d.body, ts, time.Second); err != nil {
			t.Fatalf("attempt %d: %v", i+1, err)
		}
		if i > 0 && d.header.Get("Webhook-Timestamp") == got[i-1].header.Get("Webhook-Timestamp") {
			t.Fatalf("attempt %d reuses the webhook-timestamp of the previous attempt", i+1)
		}
	}

	h := ts.history(ts.Key, id)
	if len(h) != 9 {
		t.Fatalf("history has %d records, want 9", len(h))
	}
	for i, d := range h { // newest first
		attempt := 9 - i
		if d["attempt"] != float64(attempt) || d["response_status"] != float64(500) || d["error"] == nil || d["event_type"] != "user.registered" {
			t.Fatalf("record %d=%v", i, d)
		}
		if attempt == 9 {
			if d["status"] != "failed" || d["next_attempt_at"] != nil {
				t.Fatalf("last attempt=%v, want failed with no next_attempt_at", d)
			}
			continue
		}
		if d["status"] != "pending" {
			t.Fatalf("attempt %d status=%v, want pending", attempt, d["status"])
		}
		if got := rfc3339ms(t, d["next_attempt_at"]).Sub(rfc3339ms(t, d["created_at"])); got != schedule[attempt-1] {
			t.Fatalf("attempt %d: next_attempt_at is %v after created_at, want %v", attempt, got, schedule[attempt-1])
		}
	}
	var jobs int
	ts.DB.View(ctx, func(tx store.Tx) (err error) { jobs, err = tx.JobCount(); return err })
	if jobs != 0 {
		t.Fatalf("%d deliveries still queued after the final failure", jobs)
	}
	// limit keeps the newest records.
	r := ts.do("GET", "/api/v1/webhooks/"+id+"/deliveries?limit=2", ts.Key, nil)
	wantOK(t, r)
	if ds := r.Body["deliveries"].([]any); len(ds) != 2 || ds[0].(map[string]any)["id"] != h[0]["id"] || ds[1].(map[string]any)["id"] != h[1]["id"] {
		t.Fatalf("limit=2 gave %v", ds)
	}
	for _, bad := range []string{"0", "-1", "x"} {
		wantError(t, ts.do("GET", "/api/v1/webhooks/"+id+"/deliveries?limit="+bad, ts.Key, nil), 400, "VALIDATION_ERROR")
	}
	ids := map[any]bool{}
	for _, d := range h {
		if s, _ := d["id"].(string); s == "" || ids[s] {
			t.Fatalf("delivery id %v is not a unique string", d["id"])
		}
		ids[d["id"]] = true
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("%q is not an integer", s)
	}
	return n
}

// TestWebhookRetryAfter: a 429 or 503 with Retry-After waits at least
// that long, and never less than the schedule; other statuses' Retry-After
// is ignored.
func TestWebhookRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		ra     string
		wait   time.Duration
	}{
		{"503 longer than the schedule", 503, "120", 2 * time.Minute},
		{"429 longer than the schedule", 429, "3600", time.Hour},
		{"429 shorter than the schedule", 429, "5", 30 * time.Second},
		{"503 without Retry-After", 503, "", 30 * time.Second},
		{"500 ignores Retry-After", 500, "120", 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTestServer(t)
			var mu sync.Mutex
			calls := 0
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls == 1 {
					if tt.ra != "" {
						w.Header().Set("Retry-After", tt.ra)
					}
					w.WriteHeader(tt.status)
				}
			}))
			t.Cleanup(rcv.Close)
			count := func() int { mu.Lock(); defer mu.Unlock(); return calls }
			id, _ := ts.createWebhook(rcv.URL, []string{"user.registered"})
			ts.login("ra@example.com")
			ts.deliver()
			d := ts.history(ts.Key, id)[0]
			if d["status"] != "pending" || d["response_status"] != float64(tt.status) {
				t.Fatalf("first attempt=%v", d)
			}
			if got := rfc3339ms(t, d["next_attempt_at"]).Sub(rfc3339ms(t, d["created_at"])); got != tt.wait {
				t.Fatalf("next_attempt_at is %v after the attempt, want %v", got, tt.wait)
			}
			ts.Clock.Advance(tt.wait - time.Second)
			ts.deliver()
			if n := count(); n != 1 {
				t.Fatalf("retried before %v", tt.wait)
			}
			ts.Clock.Advance(time.Second)
			ts.deliver()
			if n := count(); n != 2 {
				t.Fatalf("not retried after %v: %d attempts", tt.wait, n)
			}
			if d := ts.history(ts.Key, id)[0]; d["status"] != "succeeded" || d["attempt"] != float64(2) {
				t.Fatalf("retry=%v", d)
			}
		})
	}
}

// TestWebhookResponses: only a 2xx is success; a redirect is a failure
// and is not followed.
func TestWebhookResponses(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	var mu sync.Mutex
	landed := 0
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/landed" {
			mu.Lock()
			landed++
			mu.Unlock()
			return
		}
		status, _ := strconv.Atoi(r.URL.Path[1:])
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "/landed")
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(rcv.Close)
	tests := []struct {
		status int
		want   string
	}{
		{200, "succeeded"},
		{201, "succeeded"},
		{204, "succeeded"},
		{299, "succeeded"},
		{301, "pending"},
		{302, "pending"},
		{307, "pending"},
		{308, "pending"},
		{400, "pending"},
		{404, "pending"},
		{410, "pending"},
		{500, "pending"},
		{502, "pending"},
	}
	ids := map[int]string{}
	for _, tt := range tests {
		ids[tt.status], _ = ts.createWebhook(rcv.URL+"/"+strconv.Itoa(tt.status), []string{"user.registered"})
	}
	ts.login("resp@example.com")
	ts.deliver()
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			h := ts.history(ts.Key, ids[tt.status])
			if len(h) != 1 {
				t.Fatalf("%d records, want 1", len(h))
			}
			d := h[0]
			if d["status"] != tt.want || d["response_status"] != float64(tt.status) {
				t.Fatalf("record=%v, want status %s", d, tt.want)
			}
			if (d["error"] == nil) != (tt.want == "succeeded") || (d["next_attempt_at"] == nil) != (tt.want == "succeeded") {
				t.Fatalf("record=%v: error and next_attempt_at must be set exactly on failure", d)
			}
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if landed != 0 {
		t.Fatalf("redirects followed %d times", landed)
	}
}

// TestWebhookAllowPrivate: with --webhook-allow-private a live-mode key
// may register a loopback receiver, and it is delivered to.
func TestWebhookAllowPrivate(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rcv := newReceiver(t)
	live := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live"})
	wantError(t, ts.do("POST", "/api/v1/webhooks", live, map[string]any{"url": rcv.URL}), 400, "VALIDATION_ERROR")
	ts.Hooks.AllowPrivate, ts.Worker.AllowPrivate = true, true
	r := ts.do("POST", "/api/v1/webhooks", live, map[string]any{"url": rcv.URL, "eventTypes": []string{"user.registered"}})
	wantOK(t, r)
	ts.login("private@example.com")
	ts.deliver()
	if n := len(rcv.deliveries()); n != 1 {
		t.Fatalf("receiver got %d deliveries, want 1", n)
	}
}

// TestWebhookProjectDeleted: deleting a project deletes its webhooks, so
// their pending retries are never sent.
func TestWebhookProjectDeleted(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	p := ts.admin("POST", "/api/v1/admin/projects", map[string]any{"name": "doomed"})
	wantOK(t, p)
	pid := str(t, obj(t, p.Body, "project"), "id")
	key := ts.createKey(map[string]any{"projectId": pid, "mode": "test"})
	rcv := newReceiver(t, 500)
	wantOK(t, ts.do("POST", "/api/v1/webhooks", key, map[string]any{"url": rcv.URL, "eventTypes": []string{"user.registered"}}))
	wantOK(t, ts.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "gone@example.com"}))
	code := ts.lastMail("gone@example.com").Code
	wantOK(t, ts.do("POST", "/api/v1/otp/verify", key, map[string]any{"email": "gone@example.com", "code": code}))
	ts.deliver()
	if n := len(rcv.deliveries()); n != 1 {
		t.Fatalf("deliveries=%d, want 1", n)
	}
	wantOK(t, ts.admin("DELETE", "/api/v1/admin/projects/"+pid, nil))
	ts.Clock.Advance(time.Hour)
	ts.deliver()
	if n := len(rcv.deliveries()); n != 1 {
		t.Fatalf("a deleted project's webhook was retried: %d deliveries", n)
	}
	var jobs int
	ts.DB.View(ctx, func(tx store.Tx) (err error) { jobs, err = tx.JobCount(); return err })
	if jobs != 0 {
		t.Fatalf("%d deliveries still queued", jobs)
	}
}
