package auth_test

import (
	"testing"

	"latchkey/auth"
)

// TestDashSessionBoundToAdminToken: a dashboard session is known only
// while the admin token that opened it is in force. A service over the
// same store with another configured token, or with the stored
// (generated) token instead of the configured one, does not know it, and
// cannot flash into it or end it; the first token's service still does.
func TestDashSessionBoundToAdminToken(t *testing.T) {
	t.Parallel()
	ts := newTestService(t) // admin token configured: adm_usecase_test_token_0123
	other := func(token string) *auth.Service {
		t.Helper()
		s, err := auth.New(ts.db, ts.keys, auth.Config{BaseURL: "https://auth.example.com", AdminToken: token, Now: ts.clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	known := func(s *auth.Service, id string) bool {
		t.Helper()
		_, ok, err := s.DashSession(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	id, err := ts.StartDashSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !known(ts.Service, id) {
		t.Fatal("a new dashboard session is unknown to its own service")
	}
	if !known(other("adm_usecase_test_token_0123"), id) {
		t.Fatal("the same admin token, another process: the session is unknown")
	}

	rotated := other("adm_another_configured_token_456")
	if known(rotated, id) {
		t.Fatal("a session opened with the old admin token is known once another is configured")
	}
	if err := rotated.UpdateDashFlash(ctx, id, func(f *auth.DashFlash) bool { f.Notice = "planted"; return true }); err != nil {
		t.Fatal(err)
	}
	if err := rotated.EndDashSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	s, ok, err := ts.DashSession(ctx, id)
	if err != nil || !ok || s.Flash.Notice != "" {
		t.Fatalf("the first token's session after the other token's calls: %+v %v %v, want it untouched", s, ok, err)
	}

	// Back to the stored token (generated, as a start without one does).
	stored := other("")
	if tok, err := stored.EnsureAdminToken(ctx); err != nil || tok == "" {
		t.Fatalf("EnsureAdminToken: %q %v", tok, err)
	}
	if known(stored, id) {
		t.Fatal("a session of the configured admin token is known under the stored one")
	}
	id2, err := stored.StartDashSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !known(stored, id2) || known(ts.Service, id2) || known(rotated, id2) {
		t.Fatal("a session of the stored admin token: want it known under that token alone")
	}
}
