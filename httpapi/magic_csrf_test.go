package httpapi_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestMagicConfirmCrossSite is finding 10 (login CSRF): a foreign page
// auto-submits the confirm form with the attacker's own link, signing
// the victim's browser into the attacker's account. The confirm POST now
// takes only a same-origin form (Origin equal to the base URL's origin,
// or Sec-Fetch-Site: same-origin), or a request with neither header (not
// a browser); anything else is 403 FORBIDDEN and the link stays unused.
func TestMagicConfirmCrossSite(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cases := []struct {
		name    string
		headers map[string]string
		allowed bool
	}{
		{"foreign origin", map[string]string{"Origin": "https://evil.example"}, false},
		{"null origin", map[string]string{"Origin": "null"}, false},
		{"allowed app origin is still another site", map[string]string{"Origin": "http://localhost:3000"}, false},
		{"cross-site fetch metadata", map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		{"same-site is not same-origin", map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		{"foreign origin, cross-site", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, false},
		{"null origin, cross-site", map[string]string{"Origin": "null", "Sec-Fetch-Site": "cross-site"}, false},
		{"own origin", map[string]string{"Origin": ts.URL}, true},
		{"own origin in capitals", map[string]string{"Origin": strings.ToUpper(ts.URL)}, true},
		{"same-origin fetch metadata", map[string]string{"Sec-Fetch-Site": "same-origin"}, true},
		{"browser form from the page", map[string]string{"Origin": ts.URL, "Sec-Fetch-Site": "same-origin"}, true},
		{"no browser headers", nil, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok := ts.magicToken(fmt.Sprintf("csrf%d@example.com", i), nil)
			post := func(headers map[string]string) *response {
				req, _ := http.NewRequest("POST", ts.URL+"/api/v1/magic/verify", strings.NewReader(url.Values{"token": {tok}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				for k, v := range headers {
					req.Header.Set(k, v)
				}
				return ts.send(req)
			}
			r := post(c.headers)
			if c.allowed {
				if r.Status != 200 || !strings.Contains(string(r.Raw), "signed in") {
					t.Fatalf("status=%d body=%s, want the signed-in page", r.Status, r.Raw)
				}
				return
			}
			wantError(t, r, 403, "FORBIDDEN")
			// The link is unused: the page's own POST still signs in.
			if r := post(map[string]string{"Origin": ts.URL}); r.Status != 200 {
				t.Fatalf("the link was spent by the refused POST: status=%d body=%s", r.Status, r.Raw)
			}
		})
	}
	// A JSON POST with a foreign Origin is refused the same way.
	tok := ts.magicToken("csrf-json@example.com", nil)
	req, _ := http.NewRequest("POST", ts.URL+"/api/v1/magic/verify", strings.NewReader(`{"token":"`+tok+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	wantError(t, ts.send(req), 403, "FORBIDDEN")
	wantOK(t, ts.do("POST", "/api/v1/magic/verify", "", map[string]any{"token": tok}))
}
