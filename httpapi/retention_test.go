package httpapi_test

import (
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// loginWithDevice signs addr in by email OTP presenting deviceToken
// (empty: none) and returns the device token of the answer.
func (ts *testServer) loginWithDevice(addr, deviceToken string) string {
	ts.t.Helper()
	wantOK(ts.t, ts.do("POST", "/api/v1/otp/send", ts.Key, map[string]any{"email": addr}))
	code := ts.lastMail(strings.ToLower(addr)).Code
	r := ts.do("POST", "/api/v1/otp/verify", ts.Key, map[string]any{"email": addr, "code": code, "deviceToken": deviceToken})
	wantOK(ts.t, r)
	ts.Clock.Advance(31 * time.Second) // past the send throttle
	return str(ts.t, r.Body, "deviceToken")
}

// devices counts the remembered-device rows.
func (ts *testServer) devices() int {
	ts.t.Helper()
	n := 0
	ts.DB.View(ctx, func(tx store.Tx) (err error) { n, err = tx.ExpiringCount(store.ExpiringDevices); return err })
	return n
}

// TestDeviceRetention: a remembered device lasts 90 days after its last
// sign-in; presenting it at a sign-in extends it; once unused for 90 days
// it is unknown (the next sign-in gets a new token) and the sweep deletes
// its row.
func TestDeviceRetention(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const day = 24 * time.Hour
	tok := ts.loginWithDevice("dev@example.com", "")
	if ts.devices() != 1 {
		t.Fatalf("%d device rows after one sign-in", ts.devices())
	}
	ts.Clock.Advance(60 * day)
	lastUse := ts.Clock.Now()
	if got := ts.loginWithDevice("dev@example.com", tok); got != tok {
		t.Fatal("a known device token was replaced")
	}
	// 90 days after the first sign-in the device is still known: the
	// second one extended it.
	ts.Clock.Advance(89 * day)
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if ts.devices() != 1 {
		t.Fatal("a device used 89 days ago was swept")
	}
	ts.Clock.Advance(lastUse.Add(store.DeviceLifetime).Sub(ts.Clock.Now()))
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := ts.devices(); n != 0 {
		t.Fatalf("%d device rows 90 days after the last use, want 0", n)
	}
	if got := ts.loginWithDevice("dev@example.com", tok); got == tok {
		t.Fatal("an expired device token was still accepted")
	}
}

// TestDeviceUnusedIsUnknown: a device unused for 90 days is unknown at
// once, before any sweep.
func TestDeviceUnusedIsUnknown(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.loginWithDevice("old@example.com", "")
	ts.Clock.Advance(store.DeviceLifetime)
	if got := ts.loginWithDevice("old@example.com", tok); got == tok {
		t.Fatal("a device unused for 90 days was still accepted")
	}
}

// TestDeliveryRetention: webhook delivery records are kept 30 days and
// then swept; younger ones stay.
func TestDeliveryRetention(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rcv := newReceiver(t, 200, 200)
	id, _ := ts.createWebhook(rcv.URL, []string{"user.registered"})
	ts.login("first@example.com")
	ts.deliver()
	ts.Clock.Advance(10 * 24 * time.Hour)
	ts.login("second@example.com")
	ts.deliver()
	if n := len(ts.history(ts.Key, id)); n != 2 {
		t.Fatalf("%d delivery records, want 2", n)
	}
	ts.Clock.Advance(20*24*time.Hour - time.Minute)
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(ts.history(ts.Key, id)); n != 2 {
		t.Fatalf("%d delivery records a minute before the first is 30 days old, want 2", n)
	}
	ts.Clock.Advance(2 * time.Minute)
	if err := ts.Svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(ts.history(ts.Key, id)); n != 1 {
		t.Fatalf("%d delivery records once the first is 30 days old, want 1", n)
	}
}
