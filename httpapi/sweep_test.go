package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// TestSweep: the scheduler's sweep deletes expired codes, sessions and
// events older than 30 days, and keeps what is still live.
func TestSweep(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("old@example.com").Body, "token")
	sid := str(t, obj(t, ts.do("GET", "/api/v1/session", tok, nil).Body, "session"), "id")
	wantOK(t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": "pending@example.com"}))
	wantError(t, ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "pending@example.com", "code": "000000"}), 401, "INVALID_CODE")
	events := func() int {
		return len(ts.admin("GET", "/api/v1/admin/events?limit=1000", nil).Body["events"].([]any))
	}
	if events() == 0 {
		t.Fatal("no events recorded")
	}

	ts.Clock.Advance(29 * 24 * time.Hour)
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if events() == 0 {
		t.Fatal("events younger than 30 days swept")
	}
	ts.Clock.Advance(24*time.Hour + time.Second)
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := events(); n != 0 {
		t.Fatalf("%d events older than 30 days kept", n)
	}
	var live bool
	ts.DB.View(ctx, func(tx store.Tx) (err error) { live, err = tx.SessionExists(sid); return err })
	if live {
		t.Fatal("expired session row not swept")
	}
	// The expired code is gone, not merely expired.
	r := ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": "pending@example.com", "code": "000000"})
	wantError(t, r, 401, "INVALID_CODE")
	if msg, _ := r.Body["error"].(string); !strings.Contains(msg, "No code is pending") {
		t.Fatalf("error %q, want the no-pending-code text", msg)
	}
	// A fresh login after the sweep is untouched by the next sweep.
	tok = str(t, ts.login("new@example.com").Body, "token")
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	wantOK(t, ts.do("GET", "/api/v1/session", tok, nil))
}
