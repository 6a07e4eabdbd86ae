package webhook

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"latchkey/internal/netguard"
	"latchkey/internal/netguard/netguardtest"
)

func TestValidateURL(t *testing.T) {
	tests := []struct {
		raw  string
		want error
	}{
		{"https://example.com/hooks", nil},
		{"http://example.com:8080/a?b=c", nil},
		{"HTTPS://Example.COM/", nil},
		{"http://[2001:db8::1]:443/", nil},
		{"http://127.0.0.1/", nil}, // private targets are CheckTarget's business
		{"https://example.com/" + strings.Repeat("a", MaxURLLen-20), nil},
		{"", ErrURLRequired},
		{"https://example.com/" + strings.Repeat("a", MaxURLLen-19), ErrURLTooLong},
		{"https://example.com/a b", ErrURLCharacters},
		{"https://example.com/\x00", ErrURLCharacters},
		{" https://example.com/", ErrURLCharacters},
		{"https://example.com/#top", ErrURLFragment},
		{"https://example.com/#", ErrURLFragment},
		{"https://exa%mple.com/", ErrURLInvalid},
		{"ftp://example.com/", ErrURLScheme},
		{"javascript:alert(1)", ErrURLScheme},
		{"//example.com/", ErrURLScheme},
		{"example.com", ErrURLScheme},
		{"https://", ErrURLHost},
		{"https:///path", ErrURLHost},
		{"http:example.com", ErrURLHost},
		{"https://:443/", ErrURLHost},
		{"https://example.com:0/", ErrURLPort},
		{"https://example.com:65536/", ErrURLPort},
		{"https://user:secret@example.com/", ErrURLUserinfo},
		{"https://token@example.com/", ErrURLUserinfo},
		// Shorthand IPv4 forms that could hide a private address.
		{"http://127.1/", ErrURLNumericHost},
		{"http://2130706433/", ErrURLNumericHost},
		{"http://0x7f000001/", ErrURLNumericHost},
		{"http://0x7f.0.0.1/", ErrURLNumericHost},
		{"http://0177.0.0.1/", ErrURLNumericHost},
		{"http://010.0.0.1/", ErrURLNumericHost},
		{"http://169.254.169.254./", ErrURLNumericHost},
		{"http://1.2.3.4.5/", ErrURLNumericHost},
		{"http://example.0x1f/", ErrURLNumericHost},
		{"http://8.8.8.8/", nil},
		{"http://./", ErrURLHost},
		{"http://[::g]/", ErrURLInvalid},
		{"http://[fe80::1%25eth0]/", nil},
		{"http://../", ErrURLHost},
		{"http://.example.com/", ErrURLHost},
		{"http://a..example.com/", ErrURLHost},
		{"http://example.com./", nil},
		{"http://a1.example.com/", nil},
		{"http://123.example/", nil},
		{"http://0xcafe.example/", nil},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			u, err := ValidateURL(tt.raw)
			if err != tt.want {
				t.Fatalf("err=%v, want %v", err, tt.want)
			}
			if err == nil && u == nil {
				t.Fatal("nil URL without error")
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Fatalf("error %q repeats the URL", err)
			}
		})
	}
}

// TestReachFor: live mode reaches public addresses, test mode loopback
// too, and --webhook-allow-private every address in both (the addresses
// each reach allows are netguard's, tested there).
func TestReachFor(t *testing.T) {
	for _, c := range []struct {
		mode  string
		allow bool
		want  Reach
	}{{"live", false, ReachPublic}, {"test", false, ReachLoopback}, {"", false, ReachPublic}, {"live", true, ReachPrivate}, {"test", true, ReachPrivate}} {
		if got := ReachFor(c.mode, c.allow); got != c.want {
			t.Errorf("ReachFor(%q, %v)=%d, want %d", c.mode, c.allow, got, c.want)
		}
	}
}

func TestCheckTarget(t *testing.T) {
	dns := netguardtest.NewDNS(t, map[string]string{
		"intranet.test":  "10.0.0.7",
		"loop.test":      "127.0.0.1",
		"loop6.test":     "::1",
		"metadata.test":  "169.254.169.254",
		"public.test":    "93.184.216.34",
		"public6.test":   "2606:4700:4700::1111",
		"teredo.test":    "2001:0:a00:1::",
		"sixtofour.test": "2002:a9fe:a9fe::1",
	})
	tests := []struct {
		url      string
		public   error // under ReachPublic (live mode)
		loopback error // under ReachLoopback (test mode)
	}{
		{"http://127.0.0.1:8080/", ErrPrivateAddress, nil},
		{"http://[::1]/", ErrPrivateAddress, nil},
		{"http://[::ffff:127.0.0.1]/", ErrPrivateAddress, nil},
		{"http://169.254.169.254/latest/meta-data/", ErrPrivateAddress, ErrNotLoopback},
		{"http://10.1.2.3/", ErrPrivateAddress, ErrNotLoopback},
		{"http://192.168.0.1/", ErrPrivateAddress, ErrNotLoopback},
		{"http://[fe80::1%25eth0]/", ErrPrivateAddress, ErrNotLoopback},
		{"http://[::ffff:10.1.2.3]/", ErrPrivateAddress, ErrNotLoopback},
		{"http://[64:ff9b::7f00:1]/", ErrPrivateAddress, ErrNotLoopback},
		{"http://[2002:7f00:1::]/", ErrPrivateAddress, ErrNotLoopback},
		{"http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", ErrPrivateAddress, ErrNotLoopback},
		{"http://localhost:3000/hook", ErrPrivateAddress, nil},
		{"http://LOCALHOST./hook", ErrPrivateAddress, nil},
		{"http://intranet.test/", ErrPrivateAddress, ErrNotLoopback},
		{"http://loop.test/", ErrPrivateAddress, nil},
		{"http://loop6.test/", ErrPrivateAddress, nil},
		{"http://metadata.test/", ErrPrivateAddress, ErrNotLoopback},
		{"http://teredo.test/", ErrPrivateAddress, ErrNotLoopback},
		{"http://sixtofour.test/", ErrPrivateAddress, ErrNotLoopback},
		{"https://93.184.216.34/", nil, nil},
		{"https://public.test/", nil, nil},
		{"https://public6.test/", nil, nil},
		// The dial-time check is the guard: a name that does not
		// resolve now is accepted.
		{"https://nowhere.test/", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			u, err := ValidateURL(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckTarget(context.Background(), u, ReachPublic, dns); err != tt.public {
				t.Errorf("CheckTarget(ReachPublic)=%v, want %v", err, tt.public)
			}
			if err := CheckTarget(context.Background(), u, ReachLoopback, dns); err != tt.loopback {
				t.Errorf("CheckTarget(ReachLoopback)=%v, want %v", err, tt.loopback)
			}
			if err := CheckTarget(context.Background(), u, ReachPrivate, dns); err != nil {
				t.Errorf("CheckTarget(ReachPrivate)=%v, want nil", err)
			}
		})
	}
}

// TestCheckTargetSlowDNS: a resolver that never answers does not hold a
// registration past lookupTimeout; the name is accepted.
func TestCheckTargetSlowDNS(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0") // never answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	silent := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	defer func(d time.Duration) { lookupTimeout = d }(lookupTimeout)
	lookupTimeout = 200 * time.Millisecond
	u, _ := ValidateURL("https://slow.test/hook")
	start := time.Now()
	if err := CheckTarget(context.Background(), u, ReachPublic, silent); err != nil {
		t.Fatalf("CheckTarget=%v, want nil", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("CheckTarget took %v, want about %v", took, lookupTimeout)
	}
}

// TestCheckTargetLocalhost uses the system resolver: localhost is refused
// whatever the resolver, and resolving it must give loopback addresses.
func TestCheckTargetLocalhost(t *testing.T) {
	u, _ := ValidateURL("http://localhost/")
	if err := CheckTarget(context.Background(), u, ReachPublic, nil); err != ErrPrivateAddress {
		t.Fatalf("CheckTarget(localhost)=%v, want ErrPrivateAddress", err)
	}
	ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "localhost")
	if err != nil {
		t.Skipf("no localhost here: %v", err)
	}
	for _, ip := range ips {
		if !netguard.IsPrivate(ip) {
			t.Errorf("localhost resolves to %v, which is not private", ip)
		}
	}
}
