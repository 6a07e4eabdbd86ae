package httpapi_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// TestWebhookSignupOrder: a sign-up emits user.registered and then
// session.created in one transaction; a webhook registered for every
// event receives them in that order. Repeated, because with deliveries
// of one webhook running at once the order would be a coin toss.
func TestWebhookSignupOrder(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rcv := newReceiver(t)
	for i := range 50 {
		path := fmt.Sprintf("/hook%d", i)
		id, _ := ts.createWebhook(rcv.URL+path, nil)
		addr := fmt.Sprintf("order%d@example.com", i)
		ts.login(addr)
		ts.deliver()
		var got []map[string]any
		for _, d := range rcv.deliveries() {
			if d.path != path {
				continue
			}
			var env map[string]any
			if err := json.Unmarshal(d.body, &env); err != nil {
				t.Fatal(err)
			}
			got = append(got, env)
		}
		if len(got) != 2 {
			t.Fatalf("sign-up %d: %d deliveries, want 2", i, len(got))
		}
		if got[0]["type"] != "user.registered" || got[1]["type"] != "session.created" {
			t.Fatalf("sign-up %d: received %v then %v, want user.registered then session.created", i, got[0]["type"], got[1]["type"])
		}
		if d := got[0]["data"].(map[string]any); d["email"] != addr {
			t.Fatalf("sign-up %d: user.registered for %v, want %s", i, d["email"], addr)
		}
		wantOK(t, ts.do("DELETE", "/api/v1/webhooks/"+id, ts.Key, nil)) // stay under 20 per project
	}
}
