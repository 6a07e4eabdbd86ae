package main

import (
	"testing"
	"time"

	"latchkey/internal/background"
)

// TestBackgroundTasks: serve runs the sweep of expired codes, links and
// sessions, and the last-seen flush, every minute (not at start); the
// mail queue and the webhook worker run on their own and are woken after
// commits: a code sent is in the outbox well within their minute
// (TestWebhookFirstDeliveryIsRegistration shows the same of webhooks).
// The loop itself is tested in internal/background.
func TestBackgroundTasks(t *testing.T) {
	t.Parallel()
	m, out := startMain(t, Config{})
	got := map[string]*background.Task{}
	for _, tk := range m.tasks {
		got[tk.Name] = tk
	}
	for _, name := range []string{"sweep", "last-seen"} {
		if tk := got[name]; tk == nil || tk.Interval != time.Minute || tk.AtStart {
			t.Fatalf("%s task %+v, want one every minute", name, tk)
		}
	}
	key := match(t, keyLine, out.String())
	c := client{t, "http://" + m.Addr()}
	if st, body := c.do("POST", "/api/v1/otp/send", key, map[string]any{"email": "woken@example.com"}); st != 200 {
		t.Fatalf("send: %d %v", st, body)
	}
	codeFor(t, m.outboxDir(), "woken@example.com") // fails after 10 s
}
