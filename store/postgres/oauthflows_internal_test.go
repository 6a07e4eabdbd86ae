package postgres

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"latchkey/store"
)

// TestMigrationMovesOAuthFlows: on a database at the version before
// oauth_flows, the sign-ins with providers in flight are rows of
// challenges (kinds "oauth_state" and "oauth_code", as PutChallenge
// wrote them); the migration moves each to oauth_flows with its id,
// project, payload (the session's bytes) and expiry (a row without
// session or expiry too), leaves the WebAuthn ceremonies in challenges,
// and the moved flows are found, swept and deleted with their project
// as any other.
func TestMigrationMovesOAuthFlows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := NewTestDatabase(t, false)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	at := slices.IndexFunc(ms, func(m migration) bool { return m.name == "oauth_flows" })
	if at < 0 {
		t.Fatal("no migration named oauth_flows")
	}
	pool, err := connect(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	old := &DB{pool: pool, log: slog.New(slog.DiscardHandler)}
	if _, err := old.apply(ctx, ms[:at]); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	stateSession := []byte("{\"providerId\":\"g1\", \"provider\":\"google\",\n \"redirectUrl\":\"https://app.example.com/in\",\"verifier\":\"v\"}")
	codeSession := []byte(`{"provider":"google","subject":"108","email":"a@example.com","emailVerified":true}`)
	_, err = pool.Exec(ctx, `INSERT INTO challenges (id, project_id, kind, user_id, email, session, expires_at) VALUES
		('3f9a', 'q', 'oauth_state', '', '', $1, $2),
		('b21c', 'p', 'oauth_code', '', 'a@example.com', $3, $4),
		('00ff', 'p', 'oauth_code', '', '', NULL, NULL),
		('c0de', 'p', 'login', 'u1', '', '\x7b7d', $4)`,
		stateSession, t0.Add(10*time.Minute).UnixNano(), codeSession, t0.Add(5*time.Minute).UnixNano())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.migrate(ctx); err != nil {
		t.Fatal(err)
	}

	db, _, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := []*store.OAuthFlow{
		{ID: "3f9a", ProjectID: "q", Kind: store.OAuthFlowState, Payload: stateSession, ExpiresAt: t0.Add(10 * time.Minute)},
		{ID: "b21c", ProjectID: "p", Kind: store.OAuthFlowCode, Payload: codeSession, ExpiresAt: t0.Add(5 * time.Minute)},
		{ID: "00ff", ProjectID: "p", Kind: store.OAuthFlowCode},
	}
	err = db.View(ctx, func(tx store.Tx) error {
		for _, w := range want {
			got, err := tx.OAuthFlow(w.ID)
			if err != nil {
				t.Fatalf("flow %s: %v", w.ID, err)
			}
			if got.ID != w.ID || got.ProjectID != w.ProjectID || got.Kind != w.Kind || !bytes.Equal(got.Payload, w.Payload) ||
				(got.Payload == nil) != (w.Payload == nil) || !got.ExpiresAt.Equal(w.ExpiresAt) {
				t.Errorf("flow %s reads %+v (payload %q), want %+v (payload %q)", w.ID, got, got.Payload, w, w.Payload)
			}
			if _, err := tx.Challenge(w.ID); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("challenge %s left behind: %v", w.ID, err)
			}
		}
		c, err := tx.Challenge("c0de")
		if err != nil || c.Kind != "login" || string(c.Session) != "{}" || c.UserID != "u1" {
			t.Errorf("the WebAuthn ceremony reads %+v, %v", c, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The row without an expiry is due at once; the code at its time.
	// Project q goes with its state (DeleteProject knows no project row
	// here: the rows' own statement is the one it runs).
	err = db.Update(ctx, func(tx store.Tx) error {
		if err := tx.(*txn).deleteProjectAuthRows("q", nil); err != nil {
			return err
		}
		if n, err := tx.SweepExpired(store.ExpiringOAuthFlows, t0.Add(5*time.Minute), 100); err != nil || n != 2 {
			t.Errorf("swept %d flows at the code's time, %v; want 2", n, err)
		}
		if n, err := tx.ExpiringCount(store.ExpiringOAuthFlows); err != nil || n != 0 {
			t.Errorf("%d flows left, %v", n, err)
		}
		if n, err := tx.ExpiringCount(store.ExpiringChallenges); err != nil || n != 1 {
			t.Errorf("%d challenges left, %v; want the ceremony", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
