package httpapi

import (
	"errors"
	"fmt"
	"latchkey/internal/testkit"
	"testing"

	"latchkey/auth"
	"latchkey/store"
)

// TestStatusOfUnavailable: a database out of reach is 503 with its
// Retry-After even when it interrupts a failure otherwise answered
// 401 (a key check, a passkey sign-in); those failures' other causes
// stay 401.
func TestStatusOfUnavailable(t *testing.T) {
	t.Parallel()
	testkit.EngineFree(t, "maps errors to statuses")
	down := fmt.Errorf("%w: the database system is starting up", store.ErrUnavailable)
	for _, tc := range []struct {
		name   string
		err    error
		status int
		code   string
	}{
		{"key check, database down", auth.ErrKeyInternal.Because(down), 503, "SERVICE_UNAVAILABLE"},
		{"passkey sign-in, database down", auth.ErrPasskeyLoginInternal.Because(down), 503, "SERVICE_UNAVAILABLE"},
		{"plain, database down", down, 503, "SERVICE_UNAVAILABLE"},
		{"key check, another failure", auth.ErrKeyInternal.Because(errors.New("cannot decrypt")), 401, "INTERNAL_ERROR"},
		{"passkey sign-in, another failure", auth.ErrPasskeyLoginInternal.Because(errors.New("bad state")), 401, "INTERNAL_ERROR"},
	} {
		e := auth.AsError(tc.err)
		if got := statusOf(e); got != tc.status || e.Code != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, got, e.Code, tc.status, tc.code)
		}
		if tc.status == 503 && e.RetryAfter != auth.UnavailableRetry {
			t.Errorf("%s: Retry-After %v, want %v", tc.name, e.RetryAfter, auth.UnavailableRetry)
		}
	}
}
