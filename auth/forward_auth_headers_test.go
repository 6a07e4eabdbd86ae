package auth_test

import (
	"latchkey/internal/testkit"
	"strings"
	"testing"

	"latchkey/auth"
)

// TestParseForwardedHeaders: which request a trusted proxy asks about.
// nginx's X-Original-URL alone, or the X-Forwarded-* headers alone
// (Caddy, Traefik), name it; both may come together only when they
// name the same request, since a proxy passes the browser's other
// headers on: a forged X-Original-URL behind Caddy, or forged
// X-Forwarded-* behind nginx, are refused (400), never believed.
func TestParseForwardedHeaders(t *testing.T) {
	testkit.EngineFree(t, "parses a proxy's headers")
	const app = "https://app.example.com/page?x=1"
	for _, c := range []struct {
		name             string
		original         string
		proto, host, uri string
		want             string // the URL read; "" for a refusal
		nginx            bool
		says             string // in the refusal's message
	}{
		{"nginx", app, "", "", "", app, true, ""},
		{"Caddy or Traefik", "", "https", "App.Example.com", "/page?x=1", app, false, ""},
		{"both, the same request", app, "https", "app.example.com", "/page?x=1", app, true, ""},
		{"nginx, a browser's partial X-Forwarded-* without a URI", app, "http", "evil.example", "", app, true, ""},
		{"Caddy, a browser's X-Original-URL for a bypass path", "https://app.example.com/public/", "https", "app.example.com", "/page?x=1", "", true, "name different requests"},
		{"nginx, a browser's X-Forwarded-* for a bypass path", app, "https", "app.example.com", "/public/", "", true, "name different requests"},
		{"another host", app, "https", "other.example.com", "/page?x=1", "", true, "name different requests"},
		{"another scheme", app, "http", "app.example.com", "/page?x=1", "", true, "name different requests"},
		{"nginx, a browser's X-Forwarded-Uri alone", app, "", "", "/public/", "", true, "did not send X-Forwarded-Proto, X-Forwarded-Host"},
		{"a bad X-Original-URL", "/relative", "https", "app.example.com", "/page", "", true, "X-Original-URL"},
		{"nothing", "", "", "", "", "", false, "did not send X-Forwarded-Proto, X-Forwarded-Host, X-Forwarded-Uri"},
	} {
		f, nginx, err := auth.ParseForwardedHeaders(c.original, c.proto, c.host, c.uri)
		if c.want != "" {
			if err != nil || f.URL() != c.want || nginx != c.nginx {
				t.Errorf("%s: %q nginx=%v %v, want %q nginx=%v", c.name, f.URL(), nginx, err, c.want, c.nginx)
			}
			continue
		}
		e := auth.AsError(err)
		if err == nil || e.Code != "FORWARDED_HEADERS_MISSING" || !strings.Contains(e.Message, c.says) || nginx != c.nginx {
			t.Errorf("%s: %+v nginx=%v %v, want FORWARDED_HEADERS_MISSING saying %q (nginx=%v)", c.name, f, nginx, err, c.says, c.nginx)
		}
	}
}
