package auth

import "strings"

// The forward-auth check's cheap parses. Every request to a protected
// app passes through the check, and what a proxy sends is nearly always
// plain: nginx's X-Original-URL an http or https URL of a host name and
// a path of letters, digits and -._~/ (a query of any printable
// characters), and a path already clean. For those, these read the same
// as url.Parse and path.Clean do, without allocating; anything else
// takes the general parse. FuzzForwardAuthParse holds them to it.

// originalURLPlain splits raw, when it is a plain http or https URL
// (see above), into scheme, host and request URI as url.Parse and
// URL.RequestURI would; false for anything else (the caller parses it
// with url.Parse).
func originalURLPlain(raw string) (scheme, host, uri string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(raw, "https://"):
		scheme, rest = "https", raw[len("https://"):]
	case strings.HasPrefix(raw, "http://"):
		scheme, rest = "http", raw[len("http://"):]
	default:
		return "", "", "", false
	}
	// The host: a name of letters, digits, '-' and '.', with a port of
	// one to five digits, maybe.
	i, colon := 0, -1
	for ; i < len(rest); i++ {
		c := rest[i]
		if c == '/' || c == '?' {
			break
		}
		switch {
		case c == ':' && colon < 0:
			colon = i
		case '0' <= c && c <= '9':
		case colon < 0 && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '.'):
		default:
			return "", "", "", false
		}
	}
	if i == 0 || colon == 0 || (colon > 0 && (i-colon-1 < 1 || i-colon-1 > 5)) {
		return "", "", "", false
	}
	host, rest = rest[:i], rest[i:]
	if rest != "" && rest[0] != '/' {
		// A '?' right after the host: no request target starts so
		// (nginx's $request_uri starts with /), but a Host header
		// may end with one (ParseOriginalURL).
		return "", "", "", false
	}
	// The path, then the query as it comes (url.Parse keeps it as is).
	j := 0
	for ; j < len(rest) && rest[j] != '?'; j++ {
		if !plainPathByte(rest[j]) {
			return "", "", "", false
		}
	}
	for k := j; k < len(rest); k++ {
		if c := rest[k]; c <= ' ' || c >= 0x7f || c == '#' {
			return "", "", "", false
		}
	}
	if j == 0 {
		return scheme, host, "/" + rest, true
	}
	return scheme, host, rest, true
}

// plainPathByte reports whether c stands for itself in a URL's path:
// a letter, a digit, or one of -._~/.
func plainPathByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '/'
}

// isCleanPath reports whether cleanPath(p) is p: p starts with /, and
// has no empty segment (but a final one: a final slash) and no . or ..
// segment.
func isCleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for rest := p[1:]; ; {
		seg, next, more := strings.Cut(rest, "/")
		if seg == "" {
			return !more
		}
		if seg == "." || seg == ".." {
			return false
		}
		if !more {
			return true
		}
		rest = next
	}
}
