package httpapi

import (
	"net/http"
	"testing"

	"latchkey/internal/testkit"
)

// TestForwardAuthCookieValue: the check reads its cookie as
// Request.Cookie does (the first valid one of that exact name, quotes
// dropped), from any of the request's Cookie headers.
func TestForwardAuthCookieValue(t *testing.T) {
	testkit.EngineFree(t, "parses headers")
	const id = "prj_1"
	for _, lines := range [][]string{
		nil,
		{""},
		{"lk_fa_prj_1=tok"},
		{"a=b; lk_fa_prj_1=tok; c=d"},
		{"  lk_fa_prj_1 = tok ;"},
		{`lk_fa_prj_1="tok"`},
		{`lk_fa_prj_1="`},
		{`lk_fa_prj_1=bad\value; lk_fa_prj_1=good`},
		{"lk_fa_prj_1=bad value", "lk_fa_prj_1=second"},
		{"lk_fa_prj_12=other; lk_fa_prj_=x; LK_FA_PRJ_1=upper"},
		{"lk_fa_prj_1"},
		{"lk_fa_prj_1="},
		{"lk_fa_prj_1=a=b"},
		{";;lk_fa_prj_1=x;;"},
		{"lk_fa_prj_1=\x7f"},
		{"x=1", "y=2; lk_fa_prj_1=late"},
	} {
		r := &http.Request{Header: http.Header{"Cookie": lines}}
		want, werr := "", http.ErrNoCookie
		if c, err := r.Cookie(fwdCookie + id); err == nil {
			want, werr = c.Value, nil
		}
		got, ok := cookieValue(r.Header, fwdCookie, id)
		if got != want || ok != (werr == nil) {
			t.Errorf("Cookie %q: read %q %v, Request.Cookie %q %v", lines, got, ok, want, werr)
		}
	}
}

// FuzzForwardAuthCookie holds cookieValue to Request.Cookie on any
// Cookie header.
func FuzzForwardAuthCookie(f *testing.F) {
	for _, s := range []string{"lk_fa_p=t", `a=b; lk_fa_p="t"`, "lk_fa_p=\\; lk_fa_p=u", " lk_fa_p =t ;"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r := &http.Request{Header: http.Header{"Cookie": {line}}}
		want, werr := "", http.ErrNoCookie
		if c, err := r.Cookie(fwdCookie + "p"); err == nil {
			want, werr = c.Value, nil
		}
		if got, ok := cookieValue(r.Header, fwdCookie, "p"); got != want || ok != (werr == nil) {
			t.Fatalf("Cookie %q: read %q %v, Request.Cookie %q %v", line, got, ok, want, werr)
		}
	})
}
