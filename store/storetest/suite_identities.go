package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"latchkey/store"
)

// Identities tests the links of users to their accounts at sign-in
// providers (store.Identities).
func (s Suite) Identities(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.identitiesRoundTrip}})
}

// identitiesRoundTrip: links round-trip exactly, are found by (project,
// issuer, subject) only, list under their user in key order (never nil),
// move whole to another user when replaced, refuse keys and fields that
// are not text, and go with their user and with their project (a link
// whose user is gone too).
func (s Suite) identitiesRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	update(t, db, func(tx store.Tx) error {
		for _, p := range []string{"p", "p2"} {
			if err := tx.PutProject(&store.Project{ID: p, Name: p, CreatedAt: t0}); err != nil {
				return err
			}
		}
		for _, u := range []*store.User{{ID: "u1", ProjectID: "p", Email: "a@example.com"}, {ID: "u2", ProjectID: "p", Email: "b@example.com"},
			{ID: "u3", ProjectID: "p2", Email: "a@example.com"}} {
			if err := tx.PutUser(u); err != nil {
				return err
			}
		}
		// u1 has two links, u2 one; u3, of p2, one under an issuer p
		// uses too, with u1's subject: keys that differ by project only.
		for _, id := range []*store.Identity{
			{ProjectID: "p", Issuer: "https://accounts.google.com", Subject: "1077", UserID: "u1", Provider: "google", CreatedAt: t0},
			{ProjectID: "p", Issuer: "https://github.com", Subject: "4242", UserID: "u1", Provider: "gh", CreatedAt: t0},
			{ProjectID: "p", Issuer: "https://accounts.google.com", Subject: "2088", UserID: "u2", Provider: "google"},
			{ProjectID: "p2", Issuer: "https://accounts.google.com", Subject: "1077", UserID: "u3", Provider: "google", CreatedAt: t0},
		} {
			if err := tx.PutIdentity(id); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		want := &store.Identity{ProjectID: "p", Issuer: "https://github.com", Subject: "4242", UserID: "u1", Provider: "gh", CreatedAt: t0}
		complete(t, want)
		got, err := tx.Identity("p", "https://github.com", "4242")
		if err != nil {
			return err
		}
		if err := diff("identity", got, want); err != nil {
			return err
		}
		got, err = tx.Identity("p", "https://accounts.google.com", "2088")
		if err != nil {
			return err
		}
		if err := diff("identity without a time", got, &store.Identity{ProjectID: "p", Issuer: "https://accounts.google.com", Subject: "2088", UserID: "u2", Provider: "google"}); err != nil {
			return err
		}
		for _, k := range [][3]string{{"p", "https://github.com", "4243"}, {"p", "https://github.co", "4242"}, {"p3", "https://github.com", "4242"},
			{"p", "https://github.com", ""}, {"p", "", "4242"}, {"", "https://github.com", "4242"}, {"p", "https://github.com", "4242\x00"},
			{"p", "https://github.com\x00", "4242"}, {"p", "https://github.com", "\xff"}} {
			if _, err := tx.Identity(k[0], k[1], k[2]); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Identity(%q)=%v, want ErrNotFound", k, err)
			}
		}
		list, err := tx.UserIdentities("u1")
		if err != nil {
			return err
		}
		if got, want := identityKeys(list), []string{"u1 https://accounts.google.com 1077", "u1 https://github.com 4242"}; !reflect.DeepEqual(got, want) {
			t.Errorf("UserIdentities(u1)=%q, want %q", got, want)
		}
		if list, err := tx.UserIdentities("nobody"); err != nil || list == nil || len(list) != 0 {
			t.Errorf("UserIdentities(nobody)=%v, %v: want empty, not nil", list, err)
		}
		// Keys and fields that are not text are refused, changing
		// nothing; the transaction goes on.
		for _, bad := range []*store.Identity{
			{ProjectID: "p", Issuer: "https://x", Subject: "a\x00b", UserID: "u1"},
			{ProjectID: "p", Issuer: "https://x", Subject: "\xc3", UserID: "u1"},
			{ProjectID: "p", Issuer: "https://x", Subject: "", UserID: "u1"},
			{ProjectID: "p", Issuer: "", Subject: "s", UserID: "u1"},
			{ProjectID: "", Issuer: "https://x", Subject: "s", UserID: "u1"},
			{ProjectID: "p", Issuer: "https://x", Subject: "s", UserID: ""},
			{ProjectID: "p", Issuer: "https://x", Subject: "s", UserID: "u1", Provider: "\x00"},
		} {
			if err := tx.PutIdentity(bad); !errors.Is(err, store.ErrBadIdentity) {
				t.Errorf("PutIdentity(%q)=%v, want ErrBadIdentity", *bad, err)
			}
		}
		// Replaced: the link moves to u2.
		return tx.PutIdentity(&store.Identity{ProjectID: "p", Issuer: "https://github.com", Subject: "4242", UserID: "u2", Provider: "github", CreatedAt: t0.Add(time.Hour)})
	})
	lists := func() map[string][]string {
		out := map[string][]string{}
		view(t, db, func(tx store.Tx) error {
			for _, u := range []string{"u1", "u2", "u3", "gone"} {
				list, err := tx.UserIdentities(u)
				if err != nil {
					return err
				}
				out[u] = identityKeys(list)
			}
			return nil
		})
		return out
	}
	want := map[string][]string{
		"u1":   {"u1 https://accounts.google.com 1077"},
		"u2":   {"u2 https://accounts.google.com 2088", "u2 https://github.com 4242"},
		"u3":   {"u3 https://accounts.google.com 1077"},
		"gone": {},
	}
	if got := lists(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the move: %q, want %q", got, want)
	}
	view(t, db, func(tx store.Tx) error {
		got, err := tx.Identity("p", "https://github.com", "4242")
		if err != nil {
			return err
		}
		return diff("moved identity", got, &store.Identity{ProjectID: "p", Issuer: "https://github.com", Subject: "4242", UserID: "u2", Provider: "github", CreatedAt: t0.Add(time.Hour)})
	})
	check(t, db)

	// DeleteUser takes u2's links, not u1's nor another project's.
	update(t, db, func(tx store.Tx) error {
		u, err := tx.User("u2")
		if err != nil {
			return err
		}
		if err := tx.DeleteUser(u); err != nil {
			return err
		}
		if _, err := tx.Identity("p", "https://github.com", "4242"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a deleted user's link: %v, want ErrNotFound", err)
		}
		// A link whose user is gone (left by an older release), for
		// DeleteProject to find.
		return tx.PutIdentity(&store.Identity{ProjectID: "p", Issuer: "https://idp.example", Subject: "orphan", UserID: "gone", CreatedAt: t0})
	})
	want["u2"], want["gone"] = []string{}, []string{"gone https://idp.example orphan"}
	if got := lists(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after DeleteUser: %q, want %q", got, want)
	}

	// DeleteProject takes the project's links, the orphan's too.
	update(t, db, func(tx store.Tx) error { _, err := tx.DeleteProject("p"); return err })
	want["u1"], want["gone"] = []string{}, []string{}
	if got := lists(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after DeleteProject: %q, want %q", got, want)
	}
	view(t, db, func(tx store.Tx) error {
		for _, k := range [][3]string{{"p", "https://accounts.google.com", "1077"}, {"p", "https://idp.example", "orphan"}} {
			if _, err := tx.Identity(k[0], k[1], k[2]); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Identity(%q) after DeleteProject: %v", k, err)
			}
		}
		if _, err := tx.Identity("p2", "https://accounts.google.com", "1077"); err != nil {
			t.Errorf("another project's link after DeleteProject: %v", err)
		}
		return nil
	})
	check(t, db)
}

// identityKeys returns the "user issuer subject" of ids, in order.
func identityKeys(ids []*store.Identity) []string {
	out := []string{}
	for _, id := range ids {
		out = append(out, fmt.Sprint(id.UserID, " ", id.Issuer, " ", id.Subject))
	}
	return out
}
