package auth

import (
	"errors"
	"testing"
	"time"

	"latchkey/store"
)

// TestReplicasRefresh: a session's refresh tokens live in the store, so
// two replicas on one PostgreSQL database take turns: a token issued by
// one is refreshed on the other, and back; the reuse of an old one on
// either ends the session, which the other replica (which had the
// session in its memory) refuses within a second. On bbolt one process
// owns the file: skipped.
func TestReplicasRefresh(t *testing.T) {
	t.Parallel()
	a, b := twoReplicas(t)
	boot, err := a.Init(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := boot.Project
	u := &store.User{ID: newID(), ProjectID: p.ID, Email: "replicas@example.com", CreatedAt: time.Now().UTC()}
	var l *Login
	if err := a.db.Update(ctx, func(tx store.Tx) error {
		if err := tx.PutUser(u); err != nil {
			return err
		}
		l, err = a.startLogin(tx, p, u, "email_otp", Meta{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if l, err = a.finish(l); err != nil {
		t.Fatal(err)
	}
	rf1, err := b.RefreshSession(ctx, p, l.RefreshToken, Meta{})
	if err != nil {
		t.Fatalf("refresh on the other replica: %v", err)
	}
	rf2, err := a.RefreshSession(ctx, p, rf1.RefreshToken, Meta{})
	if err != nil {
		t.Fatalf("refresh back on the first: %v", err)
	}
	for _, s := range []*Service{a, b} {
		for _, tok := range []string{rf1.Token, rf2.Token} {
			pr, err := s.AuthenticateSession(ctx, "Bearer "+tok)
			if err != nil || pr.SessionID != l.Session.ID {
				t.Fatalf("a refreshed token: %+v, %v; want session %s", pr, err, l.Session.ID)
			}
		}
	}
	if _, err := b.RefreshSession(ctx, p, l.RefreshToken, Meta{}); !errors.Is(err, ErrInvalidSession) || AsError(err).Category != CatAlreadyUsed {
		t.Fatalf("reuse of the first refresh token: %v, want INVALID_SESSION (already_used)", err)
	}
	start := time.Now()
	for {
		_, err := a.AuthenticateSession(ctx, "Bearer "+rf2.Token)
		if errors.Is(err, ErrInvalidSession) {
			break
		}
		if time.Since(start) > time.Second {
			t.Fatalf("the replica that did not see the reuse still accepts the session after 1 s: %v", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("the session's end seen by the other replica after %v (poll interval 20 ms)", time.Since(start))
	if _, err := a.RefreshSession(ctx, p, rf2.RefreshToken, Meta{}); !errors.Is(err, ErrInvalidSession) {
		t.Fatalf("the newest refresh token after the reuse: %v", err)
	}
}
