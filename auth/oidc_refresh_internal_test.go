package auth

import (
	"latchkey/internal/testkit"
	"strconv"
	"strings"
	"testing"
	"time"

	"latchkey/store"
)

// FuzzParseJTI: parseJTI never panics; what it accepts has three parts,
// a non-empty grant id without a dot, a positive expiry, and is the
// string it was given, rebuilt.
func FuzzParseJTI(f *testing.F) {
	for _, s := range []string{"g.1790000000.abc", "", "..", "g..x", "g.-1.x", "g.0.x", "a.b.c.d", "g.1e9.x", "g.99999999999999999999.x", "g.+5.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gid, exp, ok := parseJTI(s)
		if !ok {
			return
		}
		parts := strings.Split(s, ".")
		if len(parts) != 3 || gid != parts[0] || gid == "" || exp.Unix() <= 0 || parts[2] == "" {
			t.Fatalf("parseJTI(%q) = %q %v", s, gid, exp)
		}
		if n, err := strconv.ParseInt(parts[1], 10, 64); err != nil || n != exp.Unix() {
			t.Fatalf("parseJTI(%q): exp %v", s, exp)
		}
	})
}

// TestParseJTI: the jti mintAccessToken makes is read back.
func TestParseJTI(t *testing.T) {
	testkit.EngineFree(t, "parses token ids")
	exp := time.Unix(1790000000, 0)
	gid, got, ok := parseJTI("0195f3a0-0000-7000-8000-000000000091." + strconv.FormatInt(exp.Unix(), 10) + ".abcdefghijkl")
	if !ok || gid != "0195f3a0-0000-7000-8000-000000000091" || !got.Equal(exp) {
		t.Fatalf("parseJTI: %q %v %v", gid, got, ok)
	}
	for _, bad := range []string{"", "g", "g.1", ".1.x", "g.1.", "g.x.y", "g.0.x", "g.-5.x", "g.1.x.y"} {
		if _, _, ok := parseJTI(bad); ok {
			t.Errorf("parseJTI(%q) accepted", bad)
		}
	}
}

// FuzzIsOIDCRefreshToken: what is taken for a refresh token is the
// prefix and 43 base62 characters, and every token newOIDCRefreshToken
// makes is taken.
func FuzzIsOIDCRefreshToken(f *testing.F) {
	f.Add(oidcRefreshPrefix + randomString(base62, oidcRefreshRandom))
	for _, s := range []string{"", "lkrt_", "lkrt_" + strings.Repeat("a", 42), "lkrt_" + strings.Repeat("-", 43), "LKRT_" + strings.Repeat("a", 43)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !isOIDCRefreshToken(s) {
			return
		}
		rest, ok := strings.CutPrefix(s, oidcRefreshPrefix)
		if !ok || len(rest) != oidcRefreshRandom || strings.Trim(rest, base62) != "" {
			t.Fatalf("isOIDCRefreshToken(%q) accepted", s)
		}
	})
}

// TestRequestScopes: offline_access only for a client with the refresh
// grant, always for a first-party one with it; openid always; the
// client's scopes only; each once, in order.
func TestRequestScopes(t *testing.T) {
	testkit.EngineFree(t, "parses scopes")
	for _, c := range []struct {
		name   string
		grants []string
		first  bool
		asked  string
		want   string
	}{
		{"no refresh grant", []string{GrantAuthorizationCode}, false, "openid offline_access email", "openid email"},
		{"no refresh grant, first party", []string{GrantAuthorizationCode}, true, "openid offline_access", "openid"},
		{"refresh grant, asked", []string{GrantAuthorizationCode, GrantRefreshToken}, false, "offline_access openid email", "offline_access openid email"},
		{"refresh grant, not asked", []string{GrantAuthorizationCode, GrantRefreshToken}, false, "openid", "openid"},
		{"first party, not asked", []string{GrantAuthorizationCode, GrantRefreshToken}, true, "openid email email", "openid email offline_access"},
		{"unknown scope", []string{GrantAuthorizationCode}, false, "openid api:write", "openid"},
	} {
		cl := testClient(c.grants, c.first)
		if got := strings.Join(requestScopes(cl, strings.Fields(c.asked)), " "); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// testClient is a client with grants, first party or not, and the
// default scopes.
func testClient(grants []string, first bool) *store.OIDCClient {
	return &store.OIDCClient{ID: "c", GrantTypes: grants, FirstParty: first, Scopes: ProviderScopes}
}
