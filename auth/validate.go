package auth

import (
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxEmailLength is the longest address accepted (RFC 5321 path limit).
const MaxEmailLength = 254

// The refusals of an address NormalizeEmail makes.
var (
	errEmailRequired = Invalid("email is required.")
	errEmailNotASCII = Invalid("email must be an ASCII address.")
	errEmailTooLong  = Invalid("email is too long.")
	errEmailInvalid  = Invalid("email is not a valid address.")
)

// NormalizeEmail trims and lowercases an address and checks it is a plain
// ASCII addr-spec (local@domain, the domain with a dot), as sign-in codes
// must reach a mailbox. Errors are 400 VALIDATION_ERROR.
func NormalizeEmail(raw string) (string, error) {
	e := strings.TrimSpace(raw)
	if e == "" {
		return "", errEmailRequired
	}
	// Check for ASCII before lowercasing: strings.ToLower folds some
	// non-ASCII letters (U+0130 İ) to ASCII ones.
	for i := 0; i < len(e); i++ {
		if e[i] >= 0x80 {
			return "", errEmailNotASCII
		}
	}
	e = strings.ToLower(e)
	if len(e) > MaxEmailLength {
		return "", errEmailTooLong
	}
	for i := 0; i < len(e); i++ {
		c := e[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '(' || c == ')' || c == ',' || c == ':' || c == ';' || c == '<' || c == '>' || c == '[' || c == ']' || c == '\\' {
			return "", errEmailInvalid
		}
	}
	at := strings.LastIndexByte(e, '@')
	if at <= 0 || at == len(e)-1 || strings.Count(e, "@") != 1 || at > 64 {
		return "", errEmailInvalid
	}
	domain := e[at+1:]
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") || strings.Contains(domain, "..") {
		return "", errEmailInvalid
	}
	for _, label := range strings.Split(domain, ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return "", errEmailInvalid
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", errEmailInvalid
			}
		}
	}
	local := e[:at]
	if strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
		return "", errEmailInvalid
	}
	if a, err := mail.ParseAddress(e); err != nil || a.Address != e {
		return "", errEmailInvalid
	}
	return e, nil
}

// NormalizeOrigin checks that raw is an origin, scheme://host[:port] with
// no path, query, fragment or userinfo, and returns its canonical form
// (lowercase, default port dropped).
func NormalizeOrigin(raw string) (string, error) {
	if len(raw) > 2048 || raw == "" {
		return "", Invalid("origin %q is not scheme://host[:port].", clip(raw))
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return "", Invalid("origin %q is not scheme://host[:port].", clip(raw))
	}
	o, ok := canonicalOrigin(u)
	if !ok {
		return "", Invalid("origin %q is not scheme://host[:port].", clip(raw))
	}
	return o, nil
}

// canonicalOrigin returns u's origin, or false when u has no usable
// http(s) scheme and host.
func canonicalOrigin(u *url.URL) (string, bool) {
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if host == "" || strings.ContainsAny(host, "%@\\ ") || !utf8.ValidString(host) {
		return "", false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':' || c == '[' || c == ']') {
			return "", false
		}
	}
	port := u.Port()
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strings.HasPrefix(port, "0") {
			return "", false
		}
		if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
			port = ""
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "", false
	}
	if strings.Contains(host, ":") {
		if _, err := netip.ParseAddr(host); err != nil {
			return "", false
		}
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + host + ":" + port, true
	}
	return scheme + "://" + host, true
}

// CheckRedirect reports whether raw is an absolute http(s) URL whose
// origin (scheme, host and port) equals one of allowed, which are
// canonical origins. It refuses userinfo, backslashes, control
// characters and anything url.Parse would read differently from a browser.
func CheckRedirect(raw string, allowed []string) bool {
	if raw == "" || len(raw) > 2048 {
		return false
	}
	for i := 0; i < len(raw); i++ {
		if c := raw[i]; c <= 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" || u.User != nil || !u.IsAbs() || u.Host == "" {
		return false
	}
	if strings.Contains(u.Host, "%") {
		return false
	}
	origin, ok := canonicalOrigin(u)
	if !ok {
		return false
	}
	for _, a := range allowed {
		if a == origin {
			return true
		}
	}
	return false
}

// hostOfOrigin returns the host name of a canonical origin.
func hostOfOrigin(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// parseCIDRs checks and canonicalises a deny list.
func parseCIDRs(in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, c := range in {
		if !strings.Contains(c, "/") {
			if a, err := netip.ParseAddr(c); err == nil {
				c = netip.PrefixFrom(a, a.BitLen()).String()
			}
		}
		_, n, err := net.ParseCIDR(c)
		if err != nil {
			return nil, Invalid("denyCidrs: %q is not a CIDR.", clip(c))
		}
		out = append(out, n.String())
	}
	return out, nil
}

// clip shortens user input echoed in an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
