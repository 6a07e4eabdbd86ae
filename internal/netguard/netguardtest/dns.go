// Package netguardtest holds test helpers for code that dials through
// netguard: a DNS server on loopback that answers from a table, so a
// test can make a host name resolve to any address.
package netguardtest

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
)

// NewDNS starts a DNS server on loopback UDP that answers A and AAAA
// queries from names (host name to address), and NXDOMAIN for other
// names, and returns a resolver that asks only it. The server stops when
// the test ends.
func NewDNS(tb testing.TB, names map[string]string) *net.Resolver {
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
