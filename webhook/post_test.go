package webhook

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"latchkey/internal/netguard"
)

// newReceiver starts a webhook receiver on loopback, closed at cleanup.
func newReceiver(tb testing.TB, h http.HandlerFunc) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// private is a context that lets the client reach the loopback receivers.
var private = WithAllowPrivate(context.Background(), true)

func TestPostSigned(t *testing.T) {
	type seen struct {
		verified, standard bool
		header             http.Header
		body               string
	}
	got := make(chan seen, 1)
	srv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		got <- seen{
			verified: Verify(testSecret, body, r.Header.Get("X-Service-Signature")),
			standard: VerifyStandard(StandardKey(testSecret), r.Header, body, time.Now(), time.Minute) == nil,
			header:   r.Header,
			body:     string(body),
		}
		w.WriteHeader(http.StatusNoContent)
	})

	// Byte for byte: spacing and key order a re-encoding would change.
	body := []byte(`{"id":"evt_7", "type":"user.registered","created_at":"2025-01-02T03:04:05.000Z","data":{"user_id":"u1","email":"a@b.c"}}`)
	r := Post(private, NewClient(0), srv.URL+"/hooks?x=1", Headers(testSecret, "evt_7", 1, time.Now(), body), body)
	if !r.OK() || r.Status != http.StatusNoContent || r.Err != nil {
		t.Fatalf("Post=%+v, want OK 204", r)
	}
	s := <-got
	if !s.verified || !s.standard {
		t.Fatalf("receiver: X-Service-Signature verified=%v, webhook-signature verified=%v", s.verified, s.standard)
	}
	if s.body != string(body) {
		t.Fatalf("receiver body=%s, want %s", s.body, body)
	}
	for name, want := range map[string]string{
		"Content-Type":               "application/json",
		"User-Agent":                 UserAgent,
		"X-Service-Event-Id":         "evt_7",
		"X-Service-Delivery-Attempt": "1",
		"Webhook-Id":                 "evt_7",
	} {
		if got := s.header.Get(name); got != want {
			t.Errorf("receiver %s=%q, want %q", name, got, want)
		}
	}
}

func TestPostRetryThenSucceed(t *testing.T) {
	var calls atomic.Int32
	srv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, strings.Repeat("x", 200<<10), http.StatusInternalServerError) // more than is read
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	c := NewClient(0)
	body := []byte(`{"id":"evt_8"}`)

	r := Post(private, c, srv.URL, Headers(testSecret, "evt_8", 1, time.Now(), body), body)
	if r.OK() || r.Status != http.StatusInternalServerError || r.Err == nil {
		t.Fatalf("first Post=%+v, want failed 500", r)
	}
	if d, ok := NextDelay(1, r.RetryAfter); !ok || d != 30*time.Second {
		t.Fatalf("NextDelay(1)=%v %v, want 30s true", d, ok)
	}
	r = Post(private, c, srv.URL, Headers(testSecret, "evt_8", 2, time.Now(), body), body)
	if !r.OK() || r.Status != http.StatusOK {
		t.Fatalf("second Post=%+v, want OK 200", r)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("receiver calls=%d, want 2", n)
	}
}

func TestPostRedirectNotFollowed(t *testing.T) {
	var landed atomic.Int32
	srv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/landed" {
			landed.Add(1)
			return
		}
		http.Redirect(w, r, "/landed", http.StatusFound)
	})
	r := Post(private, NewClient(0), srv.URL+"/hook", nil, []byte(`{}`))
	if r.OK() || r.Status != http.StatusFound || r.Err == nil {
		t.Fatalf("Post=%+v, want failed 302", r)
	}
	if n := landed.Load(); n != 0 {
		t.Fatalf("redirect followed %d times", n)
	}
}

func TestPostTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(release) }) // before srv.Close, which waits for handlers

	const timeout = 200 * time.Millisecond
	r := Post(private, NewClient(timeout), srv.URL, nil, []byte(`{}`))
	var ne net.Error
	if r.OK() || r.Status != 0 || !errors.As(r.Err, &ne) || !ne.Timeout() {
		t.Fatalf("Post=%+v, want a timeout", r)
	}
	if r.Duration < timeout || r.Duration > 5*time.Second {
		t.Fatalf("Duration=%v, want about %v", r.Duration, timeout)
	}
	if strings.Contains(r.Err.Error(), srv.URL) {
		t.Fatalf("error %q holds the URL", r.Err)
	}
}

func TestPostRetryAfter(t *testing.T) {
	srv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if v := r.URL.Query().Get("ra"); v != "" {
			w.Header().Set("Retry-After", v)
		}
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		w.WriteHeader(status)
	})
	c := NewClient(0)
	tests := []struct {
		name     string
		status   int
		ra       string
		min, max time.Duration
	}{
		{"429 seconds", 429, "120", 2 * time.Minute, 2 * time.Minute},
		{"503 seconds", 503, "7", 7 * time.Second, 7 * time.Second},
		{"503 date", 503, time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat), 88 * time.Second, 90 * time.Second},
		{"429 garbage", 429, "soon", 0, 0},
		{"429 none", 429, "", 0, 0},
		{"500 ignored", 500, "120", 0, 0},
		{"200 ignored", 200, "120", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := url.Values{"status": {strconv.Itoa(tt.status)}, "ra": {tt.ra}}
			r := Post(private, c, srv.URL+"/?"+q.Encode(), nil, []byte(`{}`))
			if r.Status != tt.status {
				t.Fatalf("Status=%d, want %d", r.Status, tt.status)
			}
			if r.RetryAfter < tt.min || r.RetryAfter > tt.max {
				t.Fatalf("RetryAfter=%v, want %v..%v", r.RetryAfter, tt.min, tt.max)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	date := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	tests := []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"120", 2 * time.Minute},
		{" 30 ", 30 * time.Second},
		{"86400", 24 * time.Hour},
		{"86401", 24 * time.Hour},
		{"99999999999999999999999", 24 * time.Hour},
		{"-5", 0},
		{"1.5", 0},
		{"soon", 0},
		{date(time.Hour), time.Hour},
		{date(-time.Hour), 0},
		{date(48 * time.Hour), 24 * time.Hour},
		{now.Add(time.Minute).Format(time.RFC850), time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.v, func(t *testing.T) {
			if got := retryAfter(tt.v, now); got != tt.want {
				t.Fatalf("retryAfter=%v, want %v", got, tt.want)
			}
		})
	}
}

func TestNextDelay(t *testing.T) {
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		want       time.Duration
		wantOK     bool
	}{
		{0, 0, 30 * time.Second, true},
		{1, 0, 30 * time.Second, true},
		{2, 0, 2 * time.Minute, true},
		{3, 0, 10 * time.Minute, true},
		{4, 0, 30 * time.Minute, true},
		{5, 0, time.Hour, true},
		{6, 0, 3 * time.Hour, true},
		{7, 0, 6 * time.Hour, true},
		{8, 0, 12 * time.Hour, true},
		{9, 0, 0, false},
		{10, 0, 0, false},
		{1, 5 * time.Minute, 5 * time.Minute, true},
		{3, 5 * time.Minute, 10 * time.Minute, true},
		{8, 24 * time.Hour, 24 * time.Hour, true},
		{9, time.Minute, 0, false},
	}
	for _, tt := range tests {
		got, ok := NextDelay(tt.attempt, tt.retryAfter)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("NextDelay(%d, %v)=%v %v, want %v %v", tt.attempt, tt.retryAfter, got, ok, tt.want, tt.wantOK)
		}
	}
	if MaxAttempts != 9 {
		t.Errorf("MaxAttempts=%d, want 9", MaxAttempts)
	}
}

// TestDialGuard proves the client checks the address it connects to, not
// only the URL given at registration, and that a connection pooled for a
// request allowed private addresses never serves one that is not.
func TestDialGuard(t *testing.T) {
	var calls atomic.Int32
	srv := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
	})
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	byName := "http://localhost:" + port + "/"
	c := NewClient(2 * time.Second)
	bg := context.Background()
	refuse := WithAllowPrivate(bg, false)

	tests := []struct {
		name   string
		ctx    context.Context
		url    string
		wantOK bool
	}{
		{"no policy", bg, srv.URL, false},
		{"refused", refuse, srv.URL, false},
		{"refused by name", refuse, byName, false},
		{"allowed", private, srv.URL, true},
		{"allowed by name", private, byName, true},
		{"refused after a pooled allowed connection", refuse, srv.URL, false},
		{"refused by name after a pooled allowed connection", bg, byName, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := calls.Load()
			r := Post(tt.ctx, c, tt.url, nil, []byte(`{}`))
			if r.OK() != tt.wantOK {
				t.Fatalf("Post=%+v, want OK=%v", r, tt.wantOK)
			}
			reached := calls.Load() > before
			if reached != tt.wantOK {
				t.Fatalf("receiver reached=%v, want %v", reached, tt.wantOK)
			}
			if !tt.wantOK && !errors.Is(r.Err, ErrPrivateAddress) {
				t.Fatalf("Err=%v, want ErrPrivateAddress", r.Err)
			}
		})
	}
}

// TestDialGuardLoopbackReach: at dial time a test-mode webhook (reach
// loopback) reaches a loopback receiver, directly or by an IPv4-mapped
// address, but not one on this host's private interface address, nor
// loopback dressed as NAT64, 6to4, IPv4-translated or Teredo.
func TestDialGuardLoopbackReach(t *testing.T) {
	var calls atomic.Int32
	h := func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }
	srv := newReceiver(t, h)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	c := NewClient(2 * time.Second)
	loop := WithReach(context.Background(), ReachLoopback)
	tests := []struct {
		name   string
		url    string
		wantOK bool
	}{
		{"loopback", srv.URL, true},
		{"localhost", "http://localhost:" + port + "/", true},
		{"mapped loopback", "http://[::ffff:127.0.0.1]:" + port + "/", true},
		{"NAT64 loopback", "http://[64:ff9b::7f00:1]:" + port + "/", false},
		{"6to4 loopback", "http://[2002:7f00:1::1]:" + port + "/", false},
		{"translated loopback", "http://[::ffff:0:7f00:1]:" + port + "/", false},
		{"Teredo loopback client", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:" + port + "/", false},
		{"Teredo private server", "http://[2001:0:a00:1::1]:" + port + "/", false},
		{"metadata", "http://169.254.169.254:" + port + "/", false},
		{"unspecified", "http://0.0.0.0:" + port + "/", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := calls.Load()
			r := Post(loop, c, tt.url, nil, []byte(`{}`))
			if r.OK() != tt.wantOK || (calls.Load() > before) != tt.wantOK {
				t.Fatalf("Post=%+v reached=%v, want OK=%v", r, calls.Load() > before, tt.wantOK)
			}
			if !tt.wantOK && !errors.Is(r.Err, ErrNotLoopback) {
				t.Fatalf("Err=%v, want ErrNotLoopback", r.Err)
			}
		})
	}

	// A real receiver on this host's private (non-loopback) address: the
	// test-mode reach refuses it at dial time, --webhook-allow-private
	// reaches it.
	var lan *httptest.Server
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil || pfx.Addr().IsLoopback() || pfx.Addr().IsLinkLocalUnicast() || !netguard.IsPrivate(pfx.Addr()) {
			continue
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(pfx.Addr(), 0).String())
		if err != nil {
			continue
		}
		lan = httptest.NewUnstartedServer(http.HandlerFunc(h))
		lan.Listener.Close()
		lan.Listener = ln
		lan.Start()
		t.Cleanup(lan.Close)
		break
	}
	if lan == nil {
		t.Skip("this host has no private non-loopback address to listen on")
	}
	before := calls.Load()
	if r := Post(loop, c, lan.URL, nil, []byte(`{}`)); r.OK() || !errors.Is(r.Err, ErrNotLoopback) || calls.Load() != before {
		t.Fatalf("test-mode reach to %s: %+v, want refused at dial time", lan.URL, r)
	}
	if r := Post(private, c, lan.URL, nil, []byte(`{}`)); !r.OK() || calls.Load() != before+1 {
		t.Fatalf("private reach to %s: %+v, want delivered", lan.URL, r)
	}
}

// TestDescribe: failure texts are stored and shown to the project, so
// they name no address: neither the one the host resolved to nor the
// resolver's.
func TestDescribe(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 8080}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"private", &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: ErrPrivateAddress}, "private"},
		{"no such host", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "db.internal", Server: "10.0.0.2:53", IsNotFound: true}}, "does not resolve"},
		{"dns timeout", &net.DNSError{Err: "i/o timeout", Name: "db.internal", Server: "10.0.0.2:53", IsTimeout: true}, "could not be resolved"},
		{"refused", &url.Error{Op: "Post", URL: "http://10.1.2.3:8080/x", Err: &net.OpError{Op: "dial", Net: "tcp", Addr: addr, Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}, "connection refused"},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Addr: addr, Err: syscall.ECONNRESET}, "closed"},
		{"eof", &url.Error{Op: "Post", URL: "http://10.1.2.3:8080/x", Err: io.EOF}, "closed"},
		{"other op", &net.OpError{Op: "write", Net: "tcp", Addr: addr, Err: syscall.EPIPE}, "write failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describe(tt.err)
			if !strings.Contains(got, tt.want) {
				t.Fatalf("describe=%q, want it to say %q", got, tt.want)
			}
			for _, leak := range []string{"10.1.2.3", "10.0.0.2", "8080"} {
				if strings.Contains(got, leak) {
					t.Fatalf("describe=%q names %s", got, leak)
				}
			}
		})
	}
}

// TestPostRefused: a closed port is a failed attempt whose text names no
// address.
func TestPostRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := "http://" + ln.Addr().String() + "/"
	ln.Close()
	r := Post(private, NewClient(time.Second), target, nil, []byte(`{}`))
	if r.OK() || r.Status != 0 || r.Err == nil || !errors.Is(r.Err, syscall.ECONNREFUSED) {
		t.Fatalf("Post=%+v, want connection refused", r)
	}
	if strings.Contains(r.Err.Error(), "127.0.0.1") {
		t.Fatalf("error %q names the address", r.Err)
	}
}
