package auth

import "testing"

// TestForwardedPath: the path rules see, and the servlet containers'
// reading of it when that differs (";parameters" dropped, a backslash a
// separator, before . and .. are resolved).
func TestForwardedPath(t *testing.T) {
	for _, c := range []struct {
		uri, path, alt string
	}{
		{"/page?x=1", "/page", ""},
		{"/public/../admin/", "/admin/", ""},
		{"/public/..%2fadmin/", "/admin/", ""},
		{"/public/..;/admin/", "/public/..;/admin/", "/admin/"},
		{"/public/.%2e;x=1/admin", "/public/..;x=1/admin", "/admin"},
		{"/public/..%5cadmin/", "/public/..\\admin/", "/admin/"},
		{"/public;v=1/style.css", "/public;v=1/style.css", "/public/style.css"},
		{"/page;jsessionid=1", "/page;jsessionid=1", "/page"},
		{"/a;b/../c", "/c", ""},
	} {
		p, alt, ok := forwardedPath(c.uri)
		if !ok || p != c.path || alt != c.alt {
			t.Errorf("forwardedPath(%q) = %q, %q, %v; want %q, %q", c.uri, p, alt, ok, c.path, c.alt)
		}
	}
	if _, _, ok := forwardedPath("/bad%zz"); ok {
		t.Error("forwardedPath read a path that is not percent-encoded")
	}
}

// TestHeaderText: a user's name reaches Remote-Name with each control
// character, line separator or bidirectional override a space, and a
// plain name (a Persian one's zero-width non-joiner included) as it is,
// without allocating.
func TestHeaderText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Ada", "Ada"},
		{"Zoë Lovelace", "Zoë Lovelace"},
		{"a\tb\vc", "a b c"},
		{"a\u0085b\u2028c\u2029d", "a b c d"},
		{"Eve\u202egnp.exe", "Eve gnp.exe"},
		{"a\u2066b\u2069c\u202ad", "a b c d"},
		{"مریم\u200cاحمدی", "مریم\u200cاحمدی"}, // a zero-width non-joiner belongs to the name
		{"\x00\x1f\x7f", "   "},
		{"", ""},
	} {
		if got := headerText(c.in); got != c.want {
			t.Errorf("headerText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { headerText("Zoë Lovelace") }); n != 0 {
		t.Errorf("a plain name allocates %v times", n)
	}
}
