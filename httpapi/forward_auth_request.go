package httpapi

import (
	"net/http"
	"net/textproto"
	"strings"
)

// What the forward-auth check reads of the proxy's request, without
// allocating: every request to a protected app passes through it.

// Canonical keys of the headers the check reads (http.Header.Get
// canonicalizes a key such as X-Original-URL anew on every call).
const (
	hdrOriginalURL    = "X-Original-Url"
	hdrForwardedProto = "X-Forwarded-Proto"
	hdrForwardedHost  = "X-Forwarded-Host"
	hdrForwardedURI   = "X-Forwarded-Uri"
)

// headerValue returns h's first value of key, a canonical key.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// cookieValue returns the value of h's cookie prefix+id as
// Request.Cookie(prefix+id) reads it (the first such cookie whose value
// is valid, without its double quotes), without building the name or
// the request's other cookies; false when there is none.
func cookieValue(h http.Header, prefix, id string) (string, bool) {
	for _, line := range h["Cookie"] {
		for len(line) > 0 {
			var part string
			part, line, _ = strings.Cut(line, ";")
			name, val, _ := strings.Cut(textproto.TrimString(part), "=")
			name = textproto.TrimString(name)
			if len(name) != len(prefix)+len(id) || !strings.HasPrefix(name, prefix) || name[len(prefix):] != id {
				continue
			}
			if len(val) > 1 && val[0] == '"' && val[len(val)-1] == '"' {
				val = val[1 : len(val)-1]
			}
			if validCookieValue(val) {
				return val, true
			}
		}
	}
	return "", false
}

// validCookieValue reports whether every byte of v may stand in a
// cookie's value (net/http's rule: printable ASCII but '"', ';' and
// '\').
func validCookieValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; b < 0x20 || b >= 0x7f || b == '"' || b == ';' || b == '\\' {
			return false
		}
	}
	return true
}
