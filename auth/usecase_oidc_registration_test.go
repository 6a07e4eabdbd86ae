package auth_test

import (
	"errors"
	"testing"
	"time"

	"latchkey/auth"
	"latchkey/store"
)

// TestRegisterClientUseCase: dynamic registration without HTTP: refused
// while the project is closed, then a public, third-party client
// marked registered; the hour's limit counts registrations from the
// store (the clock), and each refusal is a *RegistrationError that
// creates nothing.
func TestRegisterClientUseCase(t *testing.T) {
	t.Parallel()
	ts := newTestService(t)
	pid := ts.project.ID
	in := auth.Registration{RedirectURIs: []string{"http://127.0.0.1/cb"}}
	regCode := func(err error) string {
		t.Helper()
		var re *auth.RegistrationError
		if !errors.As(err, &re) {
			t.Fatalf("error %v, want a *RegistrationError", err)
		}
		return re.Code
	}
	if _, err := ts.RegisterClient(ctx, pid, in); regCode(err) != auth.RegClosed {
		t.Fatalf("closed: %v", err)
	}
	if _, err := ts.RegisterClient(ctx, "no-such-project", in); !errors.Is(err, auth.ErrProjectNotFound) {
		t.Fatalf("unknown project: %v", err)
	}
	if _, err := ts.UpdateProject(ctx, pid, auth.ProjectInput{ClientRegistration: ptr(auth.ClientRegistrationOpen)}); err != nil {
		t.Fatal(err)
	}
	c, err := ts.RegisterClient(ctx, pid, in)
	if err != nil {
		t.Fatal(err)
	}
	var row *store.OIDCClient
	if err := ts.db.View(ctx, func(tx store.Tx) (err error) { row, err = tx.OIDCClient(pid, c.ClientID); return err }); err != nil {
		t.Fatal(err)
	}
	if row.Type != auth.ClientPublic || row.FirstParty || !row.Registered || len(row.SecretHash) != 0 || row.Name != "Unnamed app" {
		t.Fatalf("registered row %+v", row)
	}
	if _, err := ts.RegisterClient(ctx, pid, auth.Registration{RedirectURIs: []string{"http://example.com/cb"}}); regCode(err) != auth.RegInvalidRedirectURI {
		t.Fatalf("http off loopback: %v", err)
	}
	for range auth.MaxRegistrationsPerHour - 1 {
		if _, err := ts.RegisterClient(ctx, pid, in); err != nil {
			t.Fatal(err)
		}
	}
	_, err = ts.RegisterClient(ctx, pid, in)
	var re *auth.RegistrationError
	if !errors.As(err, &re) || re.Code != auth.RegTooMany || re.RetryAfter != time.Hour {
		t.Fatalf("101st: %v", err)
	}
	ts.clock.Advance(time.Hour)
	if _, err := ts.RegisterClient(ctx, pid, in); err != nil {
		t.Fatalf("an hour later: %v", err)
	}
}
