package webhook

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
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

func TestIsPrivate(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"100.64.0.1", true},
		{"100.127.255.255", true},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"255.255.255.255", true},
		{"240.0.0.1", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"192.0.0.8", true},
		{"198.18.0.1", true},
		{"::", true},
		{"::1", true},
		{"fc00::1", true},
		{"fd12:3456::1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"ff02::1", true},
		{"fec0::1", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:10.0.0.1", true},
		{"::127.0.0.1", true},
		{"64:ff9b::10.0.0.1", true},
		{"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b:1::1", true},
		{"2002:7f00:1::", true},
		{"2002:c0a8:101::1", true},
		{"2001:db8::1", true},
		// Teredo: server IPv4 in bits 32-63, client IPv4 inverted in the
		// last 32 bits; private when either is.
		{"2001:0:a00:1::", true},                        // server 10.0.0.1
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", true},  // client ^0x80fffffe = 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:5601:56fe", true},  // client 169.254.169.1
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", false}, // server 65.54.227.120, client 8.8.8.8
		{"::ffff:0:7f00:1", true},                       // IPv4-translated 127.0.0.1
		{"::ffff:0:808:808", false},                     // IPv4-translated 8.8.8.8
		{"::ffff:c0a8:101", true},                       // mapped 192.168.1.1
		{"64:ff9b::7f00:1", true},                       // NAT64 of 127.0.0.1
		{"2002:a9fe:a9fe::1", true},                     // 6to4 of 169.254.169.254

		{"93.184.216.34", false},
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"172.32.0.1", false},
		{"100.128.0.1", false},
		{"169.255.0.1", false},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::8.8.8.8", false},
		{"2002:808:808::1", false},
		{"2606:4700:4700::1111", false},
		{"2a00:1450:4001:80b::200e", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := IsPrivate(netip.MustParseAddr(tt.addr)); got != tt.want {
				t.Fatalf("IsPrivate=%v, want %v", got, tt.want)
			}
		})
	}
	if !IsPrivate(netip.Addr{}) {
		t.Fatal("IsPrivate(zero Addr)=false, want true")
	}
}

// TestReachAllows: public addresses for every reach; loopback (direct or
// IPv4-mapped) from ReachLoopback on; every other non-public address,
// including loopback embedded in NAT64, 6to4 or Teredo, only under
// ReachPrivate.
func TestReachAllows(t *testing.T) {
	tests := []struct {
		addr                     string
		public, loopback, anyone bool
	}{
		{"93.184.216.34", true, true, true},
		{"2606:4700:4700::1111", true, true, true},
		{"127.0.0.1", false, true, true},
		{"127.9.9.9", false, true, true},
		{"::1", false, true, true},
		{"::ffff:127.0.0.1", false, true, true},
		{"10.1.2.3", false, false, true},
		{"172.16.0.1", false, false, true},
		{"192.168.1.1", false, false, true},
		{"169.254.169.254", false, false, true},
		{"fe80::1", false, false, true},
		{"fd00::1", false, false, true},
		{"0.0.0.0", false, false, true},
		{"::", false, false, true},
		{"100.64.0.1", false, false, true},
		{"::ffff:10.0.0.1", false, false, true},
		{"::ffff:169.254.169.254", false, false, true},
		{"64:ff9b::7f00:1", false, false, true},
		{"64:ff9b::a9fe:a9fe", false, false, true},
		{"2002:7f00:1::", false, false, true},
		{"2002:a00:1::", false, false, true},
		{"2001:0:a00:1::", false, false, true},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.addr)
			for _, c := range []struct {
				r    Reach
				want bool
			}{{ReachPublic, tt.public}, {ReachLoopback, tt.loopback}, {ReachPrivate, tt.anyone}} {
				if got := c.r.Allows(ip); got != c.want {
					t.Errorf("Reach(%d).Allows=%v, want %v", c.r, got, c.want)
				}
			}
		})
	}
	for _, r := range []Reach{ReachPublic, ReachLoopback, ReachPrivate} {
		if r.Allows(netip.Addr{}) {
			t.Errorf("Reach(%d) allows the zero Addr", r)
		}
	}
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
	dns := newDNS(t, map[string]string{
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
		if !IsPrivate(ip) {
			t.Errorf("localhost resolves to %v, which is not private", ip)
		}
	}
}

// newDNS starts a DNS server on loopback UDP that answers A and AAAA
// queries from names, and NXDOMAIN for other names, and returns a resolver
// that asks only it.
func newDNS(tb testing.TB, names map[string]string) *net.Resolver {
	tb.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := dnsReply(buf[:n], names); reply != nil {
				pc.WriteTo(reply, from)
			}
		}
	}()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", pc.LocalAddr().String())
		},
	}
}

// dnsReply answers a one-question DNS query, or returns nil if q is not one.
func dnsReply(q []byte, names map[string]string) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil
	}
	// The question: labels, then type and class.
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		n := int(q[i])
		if i+1+n > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+n]))
		i += 1 + n
	}
	i++ // the root label
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i:])
	question := q[12 : i+4]

	name := strings.ToLower(strings.Join(labels, "."))
	addr, known := names[name]
	var rdata []byte
	if ip, err := netip.ParseAddr(addr); err == nil {
		switch {
		case qtype == 1 && ip.Is4(): // A
			rdata = ip.AsSlice()
		case qtype == 28 && ip.Is6(): // AAAA
			rdata = ip.AsSlice()
		}
	}

	flags := uint16(0x8180) // response, recursion desired and available
	if !known {
		flags |= 3 // NXDOMAIN
	}
	r := binary.BigEndian.AppendUint16(nil, binary.BigEndian.Uint16(q)) // id
	r = binary.BigEndian.AppendUint16(r, flags)
	r = binary.BigEndian.AppendUint16(r, 1) // questions
	if rdata != nil {
		r = binary.BigEndian.AppendUint16(r, 1) // answers
	} else {
		r = binary.BigEndian.AppendUint16(r, 0)
	}
	r = append(r, 0, 0, 0, 0) // authority, additional
	r = append(r, question...)
	if rdata != nil {
		r = append(r, 0xc0, 12) // the name, by pointer to the question
		r = binary.BigEndian.AppendUint16(r, qtype)
		r = binary.BigEndian.AppendUint16(r, 1)  // class IN
		r = binary.BigEndian.AppendUint32(r, 60) // TTL
		r = binary.BigEndian.AppendUint16(r, uint16(len(rdata)))
		r = append(r, rdata...)
	}
	return r
}
