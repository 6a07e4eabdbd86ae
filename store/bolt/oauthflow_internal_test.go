package bolt

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// TestMigrateOAuthFlows: a version 4 file keeps the sign-ins with
// providers in flight among the WebAuthn challenges (kinds "oauth_state"
// and "oauth_code", in both the rows challengeRow writes and those
// written before it); opening it moves each to bucketOAuthFlows with its
// id, project, payload (the session's bytes) and expiry, and its expiry
// index entry, leaves the WebAuthn ceremonies where they are, and sweeps
// and project deletion find the flows afterwards.
func TestMigrateOAuthFlows(t *testing.T) {
	t.Parallel()
	state := &store.Challenge{ID: "3f9a", ProjectID: "q", Kind: "oauth_state", ExpiresAt: t0.Add(10 * time.Minute),
		Session: json.RawMessage("{\"providerId\":\"g1\", \"provider\":\"google\",\n \"redirectUrl\":\"https://app.example.com/in\",\"verifier\":\"v\"}")}
	code := &store.Challenge{ID: "b21c", ProjectID: "p", Kind: "oauth_code", Email: "a@example.com", ExpiresAt: t0.Add(5 * time.Minute),
		Session: json.RawMessage(`{"provider":"google","subject":"108","email":"a@example.com","emailVerified":true}`)}
	ceremony := &store.Challenge{ID: "c0de", ProjectID: "p", Kind: "login", Session: json.RawMessage(`{"challenge":"x"}`),
		ExpiresAt: t0.Add(5 * time.Minute)}
	// Version 4 had neither.
	db := upgraded(t, 4, [][]byte{bucketOAuthFlows, bucketOAuthFlowsExpiry}, func(btx *bbolt.Tx) error {
		raw, _ := json.Marshal(store.Project{ID: "q", Name: "q"})
		btx.Bucket(bucketProjects).Put([]byte("q"), raw)
		for _, c := range []*store.Challenge{code, ceremony} {
			v, err := json.Marshal((*challengeRow)(c))
			if err != nil {
				return err
			}
			btx.Bucket(bucketChallenges).Put([]byte(c.ID), v)
			btx.Bucket(bucketChallengesExpiry).Put(dueKey(c.ExpiresAt, []byte(c.ID)), nil)
		}
		// Written before challengeRow: the session as JSON in the row.
		v, _ := json.Marshal(state)
		btx.Bucket(bucketChallenges).Put([]byte(state.ID), v)
		return btx.Bucket(bucketChallengesExpiry).Put(dueKey(state.ExpiresAt, []byte(state.ID)), nil)
	})
	// The old row's session was JSON: it comes back compacted, as
	// challengeRow always read it.
	var stateSession bytes.Buffer
	json.Compact(&stateSession, state.Session)
	want := map[string]*store.OAuthFlow{
		state.ID: {ID: state.ID, ProjectID: "q", Kind: store.OAuthFlowState, Payload: stateSession.Bytes(), ExpiresAt: state.ExpiresAt},
		code.ID:  {ID: code.ID, ProjectID: "p", Kind: store.OAuthFlowCode, Payload: []byte(code.Session), ExpiresAt: code.ExpiresAt},
	}
	db.viewTx(func(tx txn) error {
		if v := getU64(tx.bucket(bucketMeta).Get(keySchema)); v != SchemaVersion {
			t.Fatalf("schema %d after the upgrade, want %d", v, SchemaVersion)
		}
		for id, w := range want {
			got, err := tx.OAuthFlow(id)
			if err != nil {
				t.Fatalf("flow %s: %v", id, err)
			}
			if got.ID != w.ID || got.ProjectID != w.ProjectID || got.Kind != w.Kind || !bytes.Equal(got.Payload, w.Payload) ||
				!got.ExpiresAt.Equal(w.ExpiresAt) {
				t.Errorf("flow %s reads %+v (payload %q), want %+v (payload %q)", id, got, got.Payload, w, w.Payload)
			}
			if _, err := tx.Challenge(id); err != store.ErrNotFound {
				t.Errorf("challenge %s left behind: %v", id, err)
			}
		}
		got, err := tx.Challenge(ceremony.ID)
		if err != nil || !reflect.DeepEqual(got.Session, ceremony.Session) || got.Kind != "login" {
			t.Errorf("the WebAuthn ceremony reads %+v, %v", got, err)
		}
		return nil
	})
	if n := count(db, bucketChallengesExpiry); n != 1 {
		t.Errorf("%d challenge index entries, want the ceremony's", n)
	}
	if n := count(db, bucketOAuthFlowsExpiry); n != 2 {
		t.Errorf("%d flow index entries, want 2", n)
	}
	// Project q goes with its state; the sweep then finds p's code at
	// its time, and the ceremony's sweep its ceremony.
	mustTx(t, db, func(tx txn) error { _, err := tx.DeleteProject("q"); return err })
	if got := sweepAll(t, db, store.ExpiringOAuthFlows, code.ExpiresAt, 100); len(got) != 1 || got[0] != 1 {
		t.Fatalf("swept %v flows at the code's time, want [1]", got)
	}
	if got := sweepAll(t, db, store.ExpiringChallenges, ceremony.ExpiresAt, 100); len(got) != 1 || got[0] != 1 {
		t.Fatalf("swept %v challenges at the ceremony's time, want [1]", got)
	}
	if n := count(db, bucketOAuthFlows) + count(db, bucketChallenges); n != 0 {
		t.Fatalf("%d rows left", n)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}
