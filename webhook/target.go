package webhook

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"latchkey/internal/netguard"
)

// MaxURLLen is the length of the longest webhook URL accepted.
const MaxURLLen = 2048

// DefaultTimeout bounds one delivery attempt when NewClient is given no
// timeout: dial, TLS, request, response headers and the read of the body.
const DefaultTimeout = 10 * time.Second

// TargetError explains why a webhook URL or its address is refused. Its
// message is short and safe to show to the caller: it never repeats the URL,
// which may carry credentials in its path or query.
type TargetError struct {
	Reason string
}

// Error returns the reason.
func (e *TargetError) Error() string { return e.Reason }

// Errors returned by ValidateURL, CheckTarget and, wrapped, by a NewClient
// client dialing a private address. Use errors.Is to test for them.
var (
	ErrURLRequired    = &TargetError{"url is required."}
	ErrURLTooLong     = &TargetError{"url must be at most " + strconv.Itoa(MaxURLLen) + " characters."}
	ErrURLCharacters  = &TargetError{"url must be UTF-8 without spaces or control characters."}
	ErrURLInvalid     = &TargetError{"url is not a valid URL."}
	ErrURLScheme      = &TargetError{"url must use http or https."}
	ErrURLHost        = &TargetError{"url must have a host."}
	ErrURLNumericHost = &TargetError{"url host must be a name or an IP address in standard form."}
	ErrURLPort        = &TargetError{"url has an invalid port."}
	ErrURLUserinfo    = &TargetError{"url must not contain credentials."}
	ErrURLFragment    = &TargetError{"url must not contain a fragment."}
	ErrPrivateAddress = &TargetError{"url must not point to a private, loopback or link-local address."}
	// ErrNotLoopback refuses a test-mode webhook's private, link-local or
	// reserved target: of the non-public addresses, test mode may use
	// loopback only.
	ErrNotLoopback = &TargetError{"url must not point to a private, link-local or reserved address (test-mode webhooks may target loopback)."}
)

// Reach says which addresses a webhook may be delivered to: the
// reaches of package netguard, which classifies the addresses and guards
// the dial (see there).
type Reach = netguard.Reach

// The reaches, from the narrowest. The zero value is ReachPublic.
const (
	// ReachPublic allows public addresses only (live-mode webhooks).
	ReachPublic = netguard.ReachPublic
	// ReachLoopback also allows loopback: 127.0.0.0/8, ::1 and their
	// IPv4-mapped forms (test-mode webhooks). Private, link-local, metadata
	// and reserved addresses stay refused, and so does a loopback address
	// embedded in a NAT64, 6to4 or Teredo address, which the host would not
	// dial as loopback.
	ReachLoopback = netguard.ReachLoopback
	// ReachPrivate allows every address (--webhook-allow-private).
	ReachPrivate = netguard.ReachPrivate
)

// ReachFor returns the reach of a webhook of mode ("live" or "test"):
// ReachPrivate when allowPrivate, else ReachLoopback for test mode and
// ReachPublic for anything else.
func ReachFor(mode string, allowPrivate bool) Reach {
	switch {
	case allowPrivate:
		return ReachPrivate
	case mode == "test":
		return ReachLoopback
	}
	return ReachPublic
}

// refusal is the error for an address r does not allow.
func refusal(r Reach) error {
	if r == ReachLoopback {
		return ErrNotLoopback
	}
	return ErrPrivateAddress
}

// ValidateURL parses raw as a webhook URL: http or https, at most
// MaxURLLen characters, with a host and a valid port if any, and without
// userinfo or fragment. A host that looks numeric must be an IP address in
// standard form: the shorthand IPv4 forms some libraries accept
// ("127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1") are refused, since
// they could hide a private address and the delivery client could not
// dial them anyway. Its errors are the ErrURL values above. It does not
// look at the address the host names; CheckTarget does.
func ValidateURL(raw string) (*url.URL, error) {
	switch {
	case raw == "":
		return nil, ErrURLRequired
	case len(raw) > MaxURLLen:
		return nil, ErrURLTooLong
	case !utf8.ValidString(raw) || strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return nil, ErrURLCharacters
	case strings.Contains(raw, "#"):
		return nil, ErrURLFragment
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, ErrURLInvalid
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, ErrURLScheme
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, ErrURLHost
	}
	if u.User != nil {
		return nil, ErrURLUserinfo
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, ErrURLPort
		}
	}
	host := u.Hostname()
	if _, err := netip.ParseAddr(host); err != nil {
		// A name (not a malformed IPv6 literal): no empty label (one
		// trailing dot is the DNS root), and not a shorthand IPv4 address.
		name := strings.TrimSuffix(host, ".")
		if name == "" || strings.HasPrefix(name, ".") || strings.Contains(name, "..") || strings.Contains(name, ":") {
			return nil, ErrURLHost
		}
		if looksNumeric(name) {
			return nil, ErrURLNumericHost
		}
	}
	return u, nil
}

// looksNumeric reports whether name, a host name without its trailing
// dot, ends in a label that is a number, decimal or 0x hex: no top-level
// domain is numeric, so such a host is meant as an IPv4 address.
func looksNumeric(name string) bool {
	last := strings.ToLower(name[strings.LastIndexByte(name, '.')+1:])
	if hex, ok := strings.CutPrefix(last, "0x"); ok {
		return strings.Trim(hex, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// CheckTarget refuses a URL whose host is or resolves to an address that
// reach does not allow: ErrPrivateAddress under ReachPublic, ErrNotLoopback
// under ReachLoopback; ReachPrivate allows everything. It is the
// registration-time check; the client from NewClient checks again at every
// dial, since the name may resolve elsewhere later. That dial-time check is
// the guard, so a name that does not resolve now (no DNS where the server
// runs, a record not yet published, a lookup slower than lookupTimeout) is
// accepted: its deliveries fail, or are refused at dial time, and the
// delivery history says why. A nil resolver means net.DefaultResolver.
func CheckTarget(ctx context.Context, u *url.URL, reach Reach, resolver *net.Resolver) error {
	if reach >= ReachPrivate {
		return nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if !reach.Allows(ip) {
			return refusal(reach)
		}
		return nil
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if (name == "localhost" || strings.HasSuffix(name, ".localhost")) && reach < ReachLoopback {
		return ErrPrivateAddress // RFC 6761, whatever the resolver says
	}
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ips, _ := resolver.LookupNetIP(ctx, "ip", host)
	for _, ip := range ips {
		if !reach.Allows(ip) {
			return refusal(reach)
		}
	}
	return nil
}

// lookupTimeout bounds the name lookup of CheckTarget (a variable so
// tests can shorten it).
var lookupTimeout = 3 * time.Second

type policyKey struct{}

// WithReach returns a copy of ctx that tells a NewClient client which
// addresses a request made with it may reach. Without it, only public
// addresses (ReachPublic).
func WithReach(ctx context.Context, r Reach) context.Context {
	return context.WithValue(ctx, policyKey{}, r)
}

// WithAllowPrivate is WithReach with ReachPrivate when allow, else
// ReachPublic.
func WithAllowPrivate(ctx context.Context, allow bool) context.Context {
	if allow {
		return WithReach(ctx, ReachPrivate)
	}
	return WithReach(ctx, ReachPublic)
}

func reachOf(ctx context.Context) Reach {
	r, _ := ctx.Value(policyKey{}).(Reach)
	return r
}

// NewClient returns the HTTP client that delivers webhooks. It is safe for
// concurrent use and meant to be shared by every webhook.
//
// Each request is bounded by timeout (DefaultTimeout if not positive),
// ignores proxy settings, and does not follow redirects: a 3xx comes back
// as the response. The client checks the address of every connection it
// opens against the request context's reach (WithReach; ReachPublic when
// none) and refuses one the reach does not allow, with an error wrapping
// ErrPrivateAddress (or ErrNotLoopback under ReachLoopback); that check at
// dial time defeats DNS rebinding. Each reach has its own connection pool,
// so a request never reuses a connection opened under a wider reach.
func NewClient(timeout time.Duration) *http.Client {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &http.Client{
		Transport: &transport{pools: [3]*http.Transport{
			ReachPublic:   newTransport(timeout, ReachPublic),
			ReachLoopback: newTransport(timeout, ReachLoopback),
			ReachPrivate:  newTransport(timeout, ReachPrivate),
		}},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
		Timeout: timeout,
	}
}

func newTransport(timeout time.Duration, r Reach) *http.Transport {
	d := netguard.Dialer(timeout, r, refusal(r), nil)
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           256,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
}

// transport sends each request through the pool of its context's reach.
type transport struct {
	pools [3]*http.Transport
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := reachOf(req.Context())
	if r < ReachPublic || r > ReachPrivate {
		r = ReachPublic
	}
	return t.pools[r].RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of every pool; the
// http.Client method of the same name calls it.
func (t *transport) CloseIdleConnections() {
	for _, p := range t.pools {
		p.CloseIdleConnections()
	}
}
