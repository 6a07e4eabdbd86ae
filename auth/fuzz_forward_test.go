package auth

import (
	"net/url"
	"path"
	"strings"
	"testing"

	"latchkey/internal/testkit"
)

// FuzzForwardAuthParse holds the forward-auth check's cheap parses
// (forward_auth_parse.go) to the general ones: an X-Original-URL that
// originalURLPlain reads is read by url.Parse and RequestURI as the same
// scheme, host and request URI, without credentials or an opaque part;
// a path isCleanPath calls clean is what path.Clean makes of it (as
// cleanPath did before the shortcut). The check's answers are the same
// either way.
func FuzzForwardAuthParse(f *testing.F) {
	seeds(f, "forward_parse.txt")
	f.Fuzz(func(t *testing.T, raw string) {
		if scheme, host, uri, ok := originalURLPlain(raw); ok {
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatalf("plain %q, which url.Parse refuses: %v", raw, err)
			}
			if u.User != nil || u.Opaque != "" || u.Scheme != scheme || u.Host != host || u.RequestURI() != uri {
				t.Fatalf("plain %q reads as %s %s %s, url.Parse as %s %s %s (user %v, opaque %q)",
					raw, scheme, host, uri, u.Scheme, u.Host, u.RequestURI(), u.User, u.Opaque)
			}
		}
		for _, p := range []string{raw, "/" + raw} {
			if isCleanPath(p) {
				c := path.Clean("/" + p)
				if strings.HasSuffix(p, "/") && c != "/" {
					c += "/"
				}
				if c != p {
					t.Fatalf("clean %q, which path.Clean makes %q", p, c)
				}
			}
		}
	})
}

// TestForwardAuthParsePlain: the cheap parses take what proxies send
// (so the check allocates nothing for it) and leave the rest to the
// general parse.
func TestForwardAuthParsePlain(t *testing.T) {
	testkit.EngineFree(t, "parses strings")
	for _, c := range []struct {
		raw   string
		plain bool
	}{
		{"https://app.example.com/page", true},
		{"http://app.example.com:8080/a/b?x=1&y=%20", true},
		{"https://App.Example.COM", true},
		{"https://app.example.com?x", false},
		{"https://app.example.com?/admin/x", false},
		{"https://app.example.com/p%20q", false},
		{"https://user@app.example.com/", false},
		{"https://[::1]/", false},
		{"HTTPS://app.example.com/", false},
		{"https://app.example.com/#frag", false},
		{"https://app.example.com/public/#/../../admin", false},
		{"https://app.example.com?x#y", false},
		{"https://app.example.com#x/y", false},
		{"https://app.example.com:/", false},
		{"https://app.example.com:123456/", false},
		{"ftp://app.example.com/", false},
	} {
		_, _, _, ok := originalURLPlain(c.raw)
		if ok != c.plain {
			t.Errorf("%q: plain %v, want %v", c.raw, ok, c.plain)
		}
		// The request URI is url.Parse's, and a '#' and all after it
		// are kept: no fragment, but the path the app is asked for. A
		// host followed by '?' or '#' (a Host header that ends so) is
		// refused.
		f, err := ParseOriginalURL(c.raw)
		if host, _, _ := strings.Cut(strings.SplitN(c.raw, "://", 2)[1], "/"); strings.ContainsAny(host, "?#") && err == nil {
			t.Errorf("%q: read as %+v, want it refused", c.raw, f)
		}
		if u, uerr := url.Parse(c.raw); uerr == nil && err == nil {
			want := u.RequestURI()
			if i := strings.IndexByte(c.raw, '#'); i >= 0 {
				want += c.raw[i:]
			}
			if f.URI != want || f.Host != strings.ToLower(u.Host) {
				t.Errorf("%q: read as %+v, want host %s, URI %s", c.raw, f, u.Host, want)
			}
		}
	}
	for _, c := range []struct {
		p     string
		clean bool
	}{
		{"/", true}, {"/a", true}, {"/a/", true}, {"/a/b.c/..d", true},
		{"", false}, {"a", false}, {"//a", false}, {"/a//b", false}, {"/a/.", false}, {"/../a", false}, {"/a/./", false},
	} {
		if got := isCleanPath(c.p); got != c.clean {
			t.Errorf("isCleanPath(%q) = %v, want %v", c.p, got, c.clean)
		}
	}
}
