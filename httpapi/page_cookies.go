package httpapi

import (
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// The hosted pages' cookies and where their forms may come from. With
// forward-auth, latchkey and the apps it protects share a parent domain
// (auth.example.com beside app.example.com), and any of those hosts may
// set a cookie for the whole domain. A neighbour's cookie of the same
// name as one of the pages', with a longer path, is sent first, and
// would be read as the pages' own: a CSRF secret the neighbour knows,
// or its own session for single sign-on. Two rules keep a neighbour out
// (docs/security.md, "Hosts under the same domain"):
//
//   - on an https issuer the pages' cookies are __Host- cookies, which a
//     browser takes only from this host, over HTTPS, without a Domain;
//   - a posted form counts only when the browser says it came from a
//     page of the issuer's own origin (postedFromOrigin): same-site is
//     not enough, as every host under the parent domain is same-site.

// pageCookies is how a project's page cookies are named and scoped.
type pageCookies struct {
	// prefix is "__Host-" on an https issuer, else "".
	prefix string
	// path is "/" for __Host- cookies (the prefix requires it), else the
	// issuer's path.
	path string
	// secure is false only for an http issuer on loopback (development).
	secure bool
}

// pageCookiesOf returns the page cookies of issuer.
func pageCookiesOf(issuer string) pageCookies {
	u, err := url.Parse(issuer)
	if err != nil {
		return pageCookies{path: "/", secure: true}
	}
	if u.Scheme == "https" {
		return pageCookies{prefix: "__Host-", path: "/", secure: true}
	}
	a, err := netip.ParseAddr(u.Hostname())
	return pageCookies{path: u.Path + "/", secure: !(err == nil && a.Unmap().IsLoopback())}
}

// cookieName returns the name of the project's cookie name (ssoCookie,
// csrfCookie, oauthCookie; fwdCookie, which has the cookie domain, is
// never a __Host- cookie).
func (p *projectOP) cookieName(name string) string {
	if name == fwdCookie {
		return name + p.id
	}
	return p.cookies.prefix + name + p.id
}

// originOf returns the origin of issuer (scheme://host[:port], the port
// only when it is not the scheme's default), as a browser's Origin
// header writes it.
func originOf(issuer string) string {
	u, err := url.Parse(issuer)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Host)
	switch {
	case u.Scheme == "https" && strings.HasSuffix(host, ":443"):
		host = strings.TrimSuffix(host, ":443")
	case u.Scheme == "http" && strings.HasSuffix(host, ":80"):
		host = strings.TrimSuffix(host, ":80")
	}
	return u.Scheme + "://" + host
}

// postedFromOrigin reports whether posted form r may have come from a
// page of origin. A browser's Sec-Fetch-Site decides: only
// "same-origin" (a neighbour under the same parent domain is
// "same-site"). A browser that sends none says where the form came from
// by its Origin, which must then be origin. Without either (a client
// that is no browser, or a browser that hides the origin as "null") the
// form's CSRF token decides alone.
func postedFromOrigin(r *http.Request, origin string) bool {
	switch headerValue(r.Header, "Sec-Fetch-Site") {
	case "same-origin":
		return true
	case "":
	default:
		return false
	}
	o := headerValue(r.Header, "Origin")
	return o == "" || o == "null" || strings.EqualFold(o, origin)
}
