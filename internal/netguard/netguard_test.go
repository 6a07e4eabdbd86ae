package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"latchkey/internal/netguard/netguardtest"
)

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
}

var errRefused = errors.New("refused")

// TestDialerChecksTheDialledAddress: the dialer judges the address it
// connects to, after resolution, not the name it was given: a name that
// resolves to loopback (as a rebinding name would at dial time) is
// refused under ReachPublic and no connection reaches the listener; the
// wider reaches connect. A private address is refused under
// ReachLoopback.
func TestDialerChecksTheDialledAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- struct{}{}
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	dns := netguardtest.NewDNS(t, map[string]string{
		"rebind.test":   "127.0.0.1",
		"intranet.test": "10.0.0.1",
		"metadata.test": "169.254.169.254",
	})
	tests := []struct {
		host  string
		reach Reach
		ok    bool
	}{
		{"127.0.0.1", ReachPublic, false},
		{"rebind.test", ReachPublic, false},
		{"rebind.test", ReachLoopback, true},
		{"rebind.test", ReachPrivate, true},
		{"127.0.0.1", ReachLoopback, true},
		{"intranet.test", ReachLoopback, false},
		{"metadata.test", ReachLoopback, false},
		{"10.0.0.1", ReachPublic, false},
		{"169.254.169.254", ReachLoopback, false},
	}
	for _, tt := range tests {
		d := Dialer(time.Second, tt.reach, errRefused, dns)
		c, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort(tt.host, port))
		if tt.ok {
			if err != nil {
				t.Errorf("%s under %d: %v, want a connection", tt.host, tt.reach, err)
				continue
			}
			c.Close()
			<-accepted
			continue
		}
		if err == nil {
			c.Close()
			t.Errorf("%s under %d: connected, want refused", tt.host, tt.reach)
			continue
		}
		if !errors.Is(err, errRefused) {
			t.Errorf("%s under %d: %v, want the refusal", tt.host, tt.reach, err)
		}
	}
	select {
	case <-accepted:
		t.Fatal("a refused dial reached the listener")
	case <-time.After(50 * time.Millisecond):
	}
}

// FuzzReach: the reaches are nested (what ReachPublic allows,
// ReachLoopback allows, and ReachPrivate allows everything valid), an
// address and its IPv4-mapped form are judged alike, and a public
// address is one IsPrivate says is not private.
func FuzzReach(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "10.0.0.1", "169.254.169.254", "8.8.8.8", "::1", "64:ff9b::a00:1",
		"2002:a9fe:a9fe::1", "2001:0:4136:e378:8000:63bf:80ff:fffe", "::ffff:0:7f00:1", "fe80::1", "2606:4700:4700::1111"} {
		f.Add(netip.MustParseAddr(s).AsSlice())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ip, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		pub, loop, all := ReachPublic.Allows(ip), ReachLoopback.Allows(ip), ReachPrivate.Allows(ip)
		if pub && !loop || loop && !all || !all {
			t.Fatalf("%v: public %v, loopback %v, private %v", ip, pub, loop, all)
		}
		if pub == IsPrivate(ip) {
			t.Fatalf("%v: ReachPublic allows %v but IsPrivate says %v", ip, pub, IsPrivate(ip))
		}
		if ip.Is4() {
			m := netip.AddrFrom16(ip.As16())
			if ReachPublic.Allows(m) != pub || ReachLoopback.Allows(m) != loop {
				t.Fatalf("%v and %v are judged apart", ip, m)
			}
		}
	})
}
