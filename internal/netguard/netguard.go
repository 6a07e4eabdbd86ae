// Package netguard keeps latchkey's outgoing HTTP calls (webhook
// deliveries, calls to sign-in providers) away from the network the
// server runs in: it classifies addresses (IsPrivate), says which a call
// may reach (Reach), and refuses the others in a net.Dialer's Control
// function, which sees the address actually dialled after name
// resolution, so a name that resolves to a public address when it is
// checked and to a private one when it is dialled (DNS rebinding) is
// refused all the same.
//
// It imports nothing of latchkey's; package webhook and package
// auth/social each build their clients on it, with their own errors.
package netguard

import (
	"net"
	"net/netip"
	"syscall"
	"time"
)

// Reach says which addresses a connection may be opened to.
type Reach int

// The reaches, from the narrowest. The zero value is ReachPublic.
const (
	// ReachPublic allows public addresses only.
	ReachPublic Reach = iota
	// ReachLoopback also allows loopback: 127.0.0.0/8, ::1 and their
	// IPv4-mapped forms. Private, link-local, metadata and reserved
	// addresses stay refused, and so does a loopback address embedded in
	// a NAT64, 6to4 or Teredo address, which the host would not dial as
	// loopback.
	ReachLoopback
	// ReachPrivate allows every address (an operator's explicit leave).
	ReachPrivate
)

// Allows reports whether ip may be dialled under r; an invalid address
// never may.
func (r Reach) Allows(ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	switch {
	case r >= ReachPrivate || !IsPrivate(ip):
		return true
	case r == ReachLoopback:
		return ip.Unmap().IsLoopback()
	}
	return false
}

// Control returns a net.Dialer Control function that refuses, with
// refusal, every address r does not allow (and an address it cannot
// parse). The function sees the address being connected to after name
// resolution, once per address tried.
func (r Reach) Control(refusal error) func(network, address string, c syscall.RawConn) error {
	return func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !r.Allows(ap.Addr()) {
			return refusal
		}
		return nil
	}
}

// Dialer returns a dialer that connects within timeout and refuses, with
// refusal, the addresses r does not allow (none under ReachPrivate). A
// nil resolver means the system's. Its error for a refused address
// wraps refusal (a *net.OpError around it).
func Dialer(timeout time.Duration, r Reach, refusal error, resolver *net.Resolver) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second, Resolver: resolver}
	if r < ReachPrivate {
		d.Control = r.Control(refusal)
	}
	return d
}

// Special-purpose ranges that netip.Addr's own predicates do not cover.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("::/96"),           // unspecified, loopback, IPv4-compatible
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
	teredo = netip.MustParsePrefix("2001::/32")
	// IPv4-translated (RFC 2765), not to be confused with IPv4-mapped
	// ::ffff:0:0/96, which Unmap handles.
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// IsPrivate reports whether ip is not a public address: an invalid
// address, or one that is unspecified, loopback, private (RFC 1918,
// fc00::/7), link-local (the cloud metadata address 169.254.169.254
// among them), multicast, carrier-grade NAT, or otherwise reserved.
// Addresses that carry an IPv4 address count as that address:
// IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), NAT64
// (64:ff9b::/96) and 6to4 (2002::/16); a Teredo address (2001::/32) is
// private when either its server or its (obfuscated) client IPv4
// address is.
func IsPrivate(ip netip.Addr) bool {
	if !ip.IsValid() {
		return true
	}
	ip = ip.Unmap().WithZone("")
	if ip.IsUnspecified() || ip.IsLoopback() || ip.IsPrivate() ||
		ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() {
		return true
	}
	for _, p := range reserved {
		if p.Contains(ip) {
			return true
		}
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip), translated.Contains(ip):
		return IsPrivate(netip.AddrFrom4([4]byte(b[12:16])))
	case sixTo4.Contains(ip):
		return IsPrivate(netip.AddrFrom4([4]byte(b[2:6])))
	case teredo.Contains(ip):
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return IsPrivate(netip.AddrFrom4([4]byte(b[4:8]))) || IsPrivate(netip.AddrFrom4(client))
	}
	return false
}
