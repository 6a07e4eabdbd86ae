package httpapi_test

import (
	"testing"
	"time"
)

// wantRetryAfter fails unless r is the 429 envelope with code and a
// Retry-After header of want seconds.
func wantRetryAfter(t testing.TB, r *response, code, want string) {
	t.Helper()
	wantError(t, r, 429, code)
	if got := r.Header.Get("Retry-After"); got != want {
		t.Fatalf("Retry-After=%q, want %q (body %s)", got, want, r.Raw)
	}
}

// TestSendThrottleRetryAfter: otp/send and magic/send refused by the
// per-address throttle say when the next send is allowed, in whole
// seconds rounded up: the 30-second interval, then the hourly limit.
func TestSendThrottleRetryAfter(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/api/v1/otp/send", "/api/v1/magic/send"} {
		t.Run(path, func(t *testing.T) {
			ts := newTestServer(t)
			send := func() *response {
				return ts.do("POST", path, ts.Key, map[string]any{"email": "wait@example.com"})
			}
			wantOK(t, send())
			wantRetryAfter(t, send(), "TOO_MANY_REQUESTS", "30")
			ts.Clock.Advance(10*time.Second + 500*time.Millisecond)
			wantRetryAfter(t, send(), "TOO_MANY_REQUESTS", "20") // 19.5 s rounded up
			ts.Clock.Advance(19*time.Second + 500*time.Millisecond)
			// Nine more sends 30 s apart: ten in the hour, the first at 0 s.
			for i := 0; i < 9; i++ {
				wantOK(t, send())
				ts.Clock.Advance(30 * time.Second)
			}
			// Now at 300 s: the interval has passed but the hour holds ten
			// sends; the first leaves it at 3,600 s.
			wantRetryAfter(t, send(), "TOO_MANY_REQUESTS", "3300")
			ts.Clock.Advance(3299 * time.Second)
			wantRetryAfter(t, send(), "TOO_MANY_REQUESTS", "1")
			ts.Clock.Advance(time.Second)
			wantOK(t, send())
		})
	}
}

// TestBackupLockoutRetryAfter: the backup-code lockout (429
// TOO_MANY_ATTEMPTS) says when the oldest failure leaves the 15-minute
// window.
func TestBackupLockoutRetryAfter(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := str(t, ts.login("locked@example.com").Body, "token")
	codes := ts.backupCodes(tok)
	verify := func(code string) *response {
		return ts.do("POST", "/api/v1/backup-codes/verify", ts.Key, map[string]any{"email": "locked@example.com", "code": code})
	}
	for i := 0; i < 5; i++ {
		r := verify("AAAAA-AAAAA")
		wantError(t, r, 401, "INVALID_CODE")
		if ra := r.Header.Get("Retry-After"); ra != "" {
			t.Fatalf("Retry-After=%q on a 401", ra)
		}
		ts.Clock.Advance(time.Minute)
	}
	// Failures at 0 to 240 s; now 300 s: the first leaves at 900 s.
	wantRetryAfter(t, verify(codes[0]), "TOO_MANY_ATTEMPTS", "600")
	ts.Clock.Advance(599*time.Second + 100*time.Millisecond)
	wantRetryAfter(t, verify(codes[0]), "TOO_MANY_ATTEMPTS", "1") // 0.9 s rounded up
	ts.Clock.Advance(time.Second)
	wantOK(t, verify(codes[0]))
}
