package auth

import (
	"testing"

	"latchkey/internal/testkit"
)

// TestReturnHost: what the consent page of a self-registered client
// names as where its answer goes: the redirect URI's host name without
// the port (a loopback URI matches on any port), an app's own scheme
// with its colon, whatever follows it.
func TestReturnHost(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "parses URIs")
	for _, c := range []struct{ uri, want string }{
		{"https://app.example.net/cb", "app.example.net"},
		{"https://app.example.net:8443/cb?x=1", "app.example.net"},
		{"http://127.0.0.1:9/callback", "127.0.0.1"},
		{"http://[::1]:8080/callback", "::1"},
		{"com.example.app:/callback", "com.example.app:"},
		{"com.example.app://callback", "com.example.app:"},
	} {
		if got := returnHost(c.uri); got != c.want {
			t.Errorf("returnHost(%q) = %q, want %q", c.uri, got, c.want)
		}
	}
}
