package httpapi_test

import (
	"testing"
	"time"
)

// TestOAuthDiscoveryCache: a provider's discovery document is read at
// its first use and kept for an hour by the service's clock; a provider
// removed and added again is discovered anew.
func TestOAuthDiscoveryCache(t *testing.T) {
	t.Parallel()
	ts, o := oauthSetup(t)
	want := func(n int32, when string) {
		t.Helper()
		if got := o.discoveries.Load(); got != n {
			t.Fatalf("%s: %d reads of the discovery document, want %d", when, got, n)
		}
	}
	want(0, "adding the provider")
	ts.oauthStart(t)
	want(1, "the first start")
	ts.oauthStart(t)
	ts.Clock.Advance(59 * time.Minute)
	ts.oauthStart(t)
	want(1, "starts within the hour")
	ts.Clock.Advance(2 * time.Minute)
	authURL := ts.oauthStart(t)
	want(2, "a start after the hour")
	// The sign-in started with the document read again completes (its
	// callback uses the same entry).
	code := appQuery(t, o.browse(t, authURL, "alice")).Get("code")
	wantOK(t, ts.do("POST", "/api/v1/oauth/exchange", ts.Key, map[string]any{"code": code}))
	want(2, "the callback")

	base := "/api/v1/admin/projects/" + ts.Project.ID + "/providers"
	wantOK(t, ts.admin("DELETE", base+"/corp", nil))
	wantOK(t, ts.admin("POST", base, map[string]any{"name": "corp", "type": "oidc", "clientId": o.ClientID, "clientSecret": "op-secret", "issuer": o.URL}))
	ts.oauthStart(t)
	want(3, "a start with the provider added again")
	ts.oauthStart(t)
	want(3, "the next start")
}
