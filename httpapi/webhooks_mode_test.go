package httpapi_test

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"latchkey/internal/netguard"
	"latchkey/store"
)

// privateListener listens on one of this host's private, non-loopback
// addresses (a LAN address such as 10.x or fd00::), or skips the test.
func privateListener(t *testing.T) net.Listener {
	t.Helper()
	if ln := listenPrivate(); ln != nil {
		return ln
	}
	t.Skip("this host has no private non-loopback address to listen on")
	return nil
}

// listenPrivate listens on one of this host's private, non-loopback
// addresses; nil when it has none.
func listenPrivate() net.Listener {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil || pfx.Addr().IsLoopback() || pfx.Addr().IsLinkLocalUnicast() || !netguard.IsPrivate(pfx.Addr()) {
			continue
		}
		if ln, err := net.Listen("tcp", netip.AddrPortFrom(pfx.Addr(), 0).String()); err == nil {
			return ln
		}
	}
	return nil
}

// wantWebhookNotFound asserts the webhook 404, the one without a code.
func wantWebhookNotFound(t *testing.T, r *response) {
	t.Helper()
	if r.Status != 404 || r.Body["success"] != false || r.Body["error"] != "Webhook not found" {
		t.Fatalf("status=%d body=%s, want 404 Webhook not found", r.Status, r.Raw)
	}
	if _, ok := r.Body["code"]; ok {
		t.Fatalf("body %s has a code, want none", r.Raw)
	}
}

// TestWebhooksByMode is the attack of a test-mode key on live webhooks:
// it listed them with their secrets, deleted them and read their delivery
// records. Now a webhook belongs to its creator's mode and the other
// mode's keys get 404 and do not see it; the same holds the other way.
func TestWebhooksByMode(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	live := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live"})
	test := ts.Key
	r := ts.do("POST", "/api/v1/webhooks", live, map[string]any{"url": "https://93.184.216.34/live"})
	wantOK(t, r)
	liveID := str(t, obj(t, r.Body, "webhook"), "id")
	liveSecret := str(t, obj(t, r.Body, "webhook"), "secret")
	r = ts.do("POST", "/api/v1/webhooks", test, map[string]any{"url": "http://127.0.0.1:9/test"})
	wantOK(t, r)
	testID := str(t, obj(t, r.Body, "webhook"), "id")

	list := func(key string) []map[string]any {
		t.Helper()
		r := ts.do("GET", "/api/v1/webhooks", key, nil)
		wantOK(t, r)
		var out []map[string]any
		for _, w := range r.Body["webhooks"].([]any) {
			out = append(out, w.(map[string]any))
		}
		return out
	}
	for _, c := range []struct {
		name, key, own, other string
	}{{"test key", test, testID, liveID}, {"live key", live, liveID, testID}} {
		t.Run(c.name, func(t *testing.T) {
			got := list(c.key)
			if len(got) != 1 || got[0]["id"] != c.own {
				t.Fatalf("list=%v, want only its own mode's webhook %s", got, c.own)
			}
			if strings.Contains(string(ts.do("GET", "/api/v1/webhooks", c.key, nil).Raw), c.other) {
				t.Fatal("the list names the other mode's webhook")
			}
			wantWebhookNotFound(t, ts.do("GET", "/api/v1/webhooks/"+c.other+"/deliveries", c.key, nil))
			wantWebhookNotFound(t, ts.do("DELETE", "/api/v1/webhooks/"+c.other, c.key, nil))
			wantOK(t, ts.do("GET", "/api/v1/webhooks/"+c.own+"/deliveries", c.key, nil))
		})
	}
	// The refused delete changed nothing: the live webhook and its secret
	// are intact.
	if got := list(live); len(got) != 1 || got[0]["id"] != liveID || got[0]["secret"] != liveSecret {
		t.Fatalf("live list after the test key's delete: %v", got)
	}
	if strings.Contains(string(ts.do("GET", "/api/v1/webhooks", test, nil).Raw), liveSecret) {
		t.Fatal("the test-mode key sees the live webhook's secret")
	}
	wantOK(t, ts.do("DELETE", "/api/v1/webhooks/"+liveID, live, nil))
	wantOK(t, ts.do("DELETE", "/api/v1/webhooks/"+testID, test, nil))
}

// TestWebhookWithoutMode: a webhook stored before webhooks had a mode
// belongs to live mode: test-mode keys neither see nor touch it, and its
// deliveries get live mode's reach (public addresses only).
func TestWebhookWithoutMode(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	rcv := newReceiver(t)
	live := ts.createKey(map[string]any{"projectId": ts.Project.ID, "mode": "live"})
	sealed, err := ts.Keys.Seal([]byte(strings.Repeat("ab", 32)), []byte("webhook:old-hook"))
	if err != nil {
		t.Fatal(err)
	}
	old := &store.Webhook{ID: "old-hook", ProjectID: ts.Project.ID, URL: rcv.URL, Secret: sealed, CreatedAt: ts.Clock.Now()}
	if err := ts.DB.Update(ctx, func(tx store.Tx) error { return tx.PutWebhook(old) }); err != nil {
		t.Fatal(err)
	}
	if n := len(ts.do("GET", "/api/v1/webhooks", ts.Key, nil).Body["webhooks"].([]any)); n != 0 {
		t.Fatalf("test-mode key sees %d webhooks, want 0", n)
	}
	wantWebhookNotFound(t, ts.do("DELETE", "/api/v1/webhooks/old-hook", ts.Key, nil))
	if got := ts.do("GET", "/api/v1/webhooks", live, nil).Body["webhooks"].([]any); len(got) != 1 {
		t.Fatalf("live-mode key sees %d webhooks, want the old one", len(got))
	}
	ts.login("old@example.com")
	ts.deliver()
	if n := len(rcv.deliveries()); n != 0 {
		t.Fatalf("a webhook without a mode reached loopback %d times", n)
	}
	d := ts.do("GET", "/api/v1/webhooks/old-hook/deliveries", live, nil).Body["deliveries"].([]any)
	if len(d) == 0 || !strings.Contains(d[0].(map[string]any)["error"].(string), "private") {
		t.Fatalf("deliveries=%v, want a refused attempt", d)
	}
}

// TestWebhookTestModeTargets is the attack of a test-mode key probing
// private ports through delivery records: it could register RFC 1918,
// link-local and metadata targets. Now a test-mode webhook targets public
// or loopback addresses only (400 VALIDATION_ERROR otherwise, nothing
// stored), also in their IPv4-embedding IPv6 forms, and the dial-time
// check holds the same line; --webhook-allow-private lifts it.
func TestWebhookTestModeTargets(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	for _, u := range []string{
		"http://10.1.2.3:5432/x", "http://172.16.0.1/x", "http://192.168.1.1:6379/x", "http://169.254.169.254/latest/meta-data/",
		"http://[fe80::1%25eth0]/x", "http://[fd00::1]/x", "http://100.64.0.1/x", "http://0.0.0.0:8080/x",
		"http://[::ffff:10.0.0.1]/x", "http://[::ffff:a9fe:a9fe]/x", "http://[64:ff9b::a9fe:a9fe]/x", "http://[64:ff9b::7f00:1]/x",
		"http://[2002:a00:1::1]/x", "http://[2002:7f00:1::]/x", "http://[2001:0:a00:1::1]/x",
		"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x",
	} {
		t.Run(u, func(t *testing.T) {
			r := ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": u})
			wantError(t, r, 400, "VALIDATION_ERROR")
			if msg := r.Body["error"].(string); !strings.Contains(msg, "private") || strings.Contains(msg, u) {
				t.Fatalf("error=%q, want it to say private without repeating the URL", msg)
			}
		})
	}
	if n := len(ts.do("GET", "/api/v1/webhooks", ts.Key, nil).Body["webhooks"].([]any)); n != 0 {
		t.Fatalf("refused targets stored %d webhooks", n)
	}
	for _, u := range []string{"http://127.0.0.1:9/x", "http://[::1]:9/x", "http://localhost:9/x", "http://[::ffff:127.0.0.1]:9/x", "https://93.184.216.34/x"} {
		wantOK(t, ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": u}))
	}

	// At dial time: a test-mode webhook registered while private targets
	// were allowed (or whose name now resolves to a LAN address) is
	// refused when it dials a private, non-loopback address.
	rcv := newReceiverOn(t, privateListener(t))
	ts.Hooks.AllowPrivate = true
	r := ts.do("POST", "/api/v1/webhooks", ts.Key, map[string]any{"url": rcv.URL, "eventTypes": []string{"user.registered"}})
	wantOK(t, r)
	id := str(t, obj(t, r.Body, "webhook"), "id")
	ts.login("lan@example.com")
	ts.deliver()
	if n := len(rcv.deliveries()); n != 0 {
		t.Fatalf("a test-mode webhook reached %s %d times", rcv.URL, n)
	}
	d := ts.do("GET", "/api/v1/webhooks/"+id+"/deliveries", ts.Key, nil).Body["deliveries"].([]any)[0].(map[string]any)
	host, _, _ := net.SplitHostPort(rcv.Listener.Addr().String())
	if e, _ := d["error"].(string); !strings.Contains(e, "private") || strings.Contains(e, host) {
		t.Fatalf("delivery error=%q, want refused as private without naming the address", e)
	}

	// With --webhook-allow-private the worker delivers there too.
	ts.Worker.AllowPrivate = true
	ts.Clock.Advance(time.Hour)
	ts.deliver()
	if n := len(rcv.deliveries()); n != 1 {
		t.Fatalf("with --webhook-allow-private: %d deliveries, want 1", n)
	}
}
