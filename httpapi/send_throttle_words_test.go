package httpapi_test

import (
	"strings"
	"testing"
)

// TestSendThrottleWords: the per-address send throttle's 429 names what
// was sent, codes for otp/send and links for magic/send, under the same
// wire code.
func TestSendThrottleWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, want, not string }{
		{"/api/v1/otp/send", "Too many codes sent to this address", "link"},
		{"/api/v1/magic/send", "Too many sign-in links sent to this address", "code"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ts := newTestServer(t)
			send := func() *response {
				return ts.do("POST", tc.path, ts.Key, map[string]any{"email": "words@example.com"})
			}
			wantOK(t, send())
			r := send()
			wantRetryAfter(t, r, "TOO_MANY_REQUESTS", "30")
			if msg := str(t, r.Body, "error"); !strings.Contains(msg, tc.want) || strings.Contains(msg, tc.not) {
				t.Fatalf("message %q, want it to say %q and not %q", msg, tc.want, tc.not)
			}
		})
	}
}
