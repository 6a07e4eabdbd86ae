package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"latchkey/store"
)

// Passkeys tests the WebAuthn credentials and the ceremonies in progress
// (store.Passkeys): exact round trips, a user's credentials in order,
// moves and deletions.
func (s Suite) Passkeys(t *testing.T) {
	parallel(t, []subtest{
		{"Passkeys", s.passkeysPasskeys},
		{"Challenges", s.passkeysChallenges},
	})
}

// passkeysPasskeys: every field comes back, the credential's bytes as
// given (whitespace too, which a JSON column would lose); a credential
// is found by (project, id); a user's list is oldest first, equal times
// in id order, the zero time first, never nil; a credential rewritten
// for another user moves to that user's list; deleting twice is no
// error.
func (s Suite) passkeysPasskeys(t *testing.T) {
	db := s.open(t, store.Options{})
	cred := json.RawMessage("{ \"publicKey\" : \"AQID\",\n \"signCount\": 1 }")
	keys := []*store.Passkey{
		{ID: "c", UserID: "u1", ProjectID: "p1", Credential: cred, CreatedAt: t0, LastUsedAt: ptrTo(t0.Add(time.Hour))},
		{ID: "b", UserID: "u1", ProjectID: "p1", Credential: cred, CreatedAt: t0},
		{ID: "a", UserID: "u1", ProjectID: "p1", Credential: cred, CreatedAt: t0.Add(time.Nanosecond), LastUsedAt: ptrTo(time.Time{})},
		{ID: "z", UserID: "u1", ProjectID: "p1"}, // the zero time sorts first
		{ID: "a", UserID: "u1", ProjectID: "p2", Credential: cred, CreatedAt: t0},
		{ID: "d", UserID: "u2", ProjectID: "p1", Credential: json.RawMessage{}, CreatedAt: t0},
	}
	complete(t, keys[0])
	update(t, db, func(tx store.Tx) error {
		for _, pk := range keys {
			if err := tx.PutPasskey(pk); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range keys {
			got, err := tx.Passkey(want.ProjectID, want.ID)
			if err != nil {
				return err
			}
			if err := diff("passkey", got, want); err != nil {
				return err
			}
		}
		list, err := tx.UserPasskeys("p1", "u1")
		if err != nil {
			return err
		}
		var ids []string
		for _, pk := range list {
			ids = append(ids, pk.ID)
		}
		if err := diff("u1's passkeys in p1", ids, []string{"z", "b", "c", "a"}); err != nil {
			return err
		}
		if err := diff("first listed", list[2], keys[0]); err != nil {
			return err
		}
		none, err := tx.UserPasskeys("p1", "u3")
		if err != nil || none == nil || len(none) != 0 {
			return fmt.Errorf("UserPasskeys of a user without any = %#v, %v; want an empty non-nil slice", none, err)
		}
		return wantNotFound(tx.Passkey("p3", "a"))
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.Passkey("p1", "c")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"Passkey":           wantNotFound(tx.Passkey(bad, "a")),
			"Passkey/id":        wantNotFound(tx.Passkey("p1", bad)),
			"UserPasskeys":      wantNone(tx.UserPasskeys(bad, "u1")),
			"UserPasskeys/user": wantNone(tx.UserPasskeys("p1", bad)),
			"DeletePasskey":     tx.DeletePasskey(&store.Passkey{ID: bad, UserID: bad, ProjectID: bad}),
			"Challenge":         wantNotFound(tx.Challenge(bad)),
			"DeleteChallenge":   tx.DeleteChallenge(bad),
		}
	})
	update(t, db, func(tx store.Tx) error {
		// Moved to another user: listed under that one only.
		moved := *keys[1]
		moved.UserID = "u2"
		if err := tx.PutPasskey(&moved); err != nil {
			return err
		}
		if err := tx.DeletePasskey(keys[0]); err != nil {
			return err
		}
		if err := tx.DeletePasskey(keys[0]); err != nil {
			return fmt.Errorf("deleting a deleted passkey: %v", err)
		}
		if _, err := tx.Passkey("p1", "c"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleted passkey: err=%v", err)
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		for _, c := range []struct{ project, user, want string }{
			{"p1", "u1", "[z a]"}, {"p1", "u2", "[b d]"}, {"p2", "u1", "[a]"},
		} {
			list, err := tx.UserPasskeys(c.project, c.user)
			if err != nil {
				return err
			}
			var ids []string
			for _, pk := range list {
				ids = append(ids, pk.ID)
			}
			if fmt.Sprint(ids) != c.want {
				return fmt.Errorf("after the move and the delete: %s's passkeys in %s: %v, want %s", c.user, c.project, ids, c.want)
			}
		}
		return nil
	})
}

// passkeysChallenges: every field comes back, the session's bytes as
// given; deleting twice is no error.
func (s Suite) passkeysChallenges(t *testing.T) {
	db := s.open(t, store.Options{})
	chs := []*store.Challenge{
		{ID: "c1", ProjectID: "p1", Kind: "register", UserID: "u1", Email: "a@example.com", Session: json.RawMessage(`{"challenge":"x", "a": [1, 2]}`), ExpiresAt: t0},
		{ID: "c2", ProjectID: "p1", Kind: "login"},
	}
	complete(t, chs[0])
	update(t, db, func(tx store.Tx) error {
		for _, c := range chs {
			if err := tx.PutChallenge(c); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		for _, want := range chs {
			got, err := tx.Challenge(want.ID)
			if err != nil {
				return err
			}
			if err := diff("challenge", got, want); err != nil {
				return err
			}
		}
		if err := tx.DeleteChallenge("c1"); err != nil {
			return err
		}
		if err := tx.DeleteChallenge("c1"); err != nil {
			return fmt.Errorf("deleting a deleted challenge: %v", err)
		}
		if _, err := tx.Challenge("c1"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleted challenge: err=%v", err)
		}
		_, err := tx.Challenge("c2")
		return err
	})
}
