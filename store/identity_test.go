package store_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

var idT0 = time.Date(2026, 11, 28, 9, 30, 0, 123456789, time.UTC)

// identityKeys returns the "user issuer subject" of ids, in order.
func identityKeys(ids []*store.Identity) []string {
	out := []string{}
	for _, id := range ids {
		out = append(out, id.UserID+" "+id.Issuer+" "+id.Subject)
	}
	return out
}

// putIdentities writes users and links: p has u1 (two links) and u2
// (one); p2 has u3 (one, under an issuer p also uses, with u1's
// subject), so keys differ only by project.
func putIdentities(t *testing.T, db store.DB) {
	t.Helper()
	err := db.Update(ctx, func(tx store.Tx) error {
		for _, p := range []string{"p", "p2"} {
			if err := tx.PutProject(&store.Project{ID: p, Name: p, CreatedAt: idT0}); err != nil {
				return err
			}
		}
		for _, u := range []*store.User{{ID: "u1", ProjectID: "p", Email: "a@example.com"}, {ID: "u2", ProjectID: "p", Email: "b@example.com"},
			{ID: "u3", ProjectID: "p2", Email: "a@example.com"}} {
			u.CreatedAt, u.UpdatedAt = idT0, idT0
			if err := tx.PutUser(u); err != nil {
				return err
			}
		}
		for _, id := range []*store.Identity{
			{ProjectID: "p", Issuer: "https://accounts.google.com", Subject: "1077", UserID: "u1", Provider: "google"},
			{ProjectID: "p", Issuer: "https://github.com", Subject: "4242", UserID: "u1", Provider: "gh"},
			{ProjectID: "p", Issuer: "https://accounts.google.com", Subject: "2088", UserID: "u2", Provider: "google"},
			{ProjectID: "p2", Issuer: "https://accounts.google.com", Subject: "1077", UserID: "u3", Provider: "google"},
		} {
			id.CreatedAt = idT0
			if err := tx.PutIdentity(id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestIdentities: links to provider accounts round-trip exactly, are
// found by (project, issuer, subject) only, list under their user in
// key order, move whole to another user when replaced, refuse keys that
// are not text, and go with their user and with their project.
func TestIdentities(t *testing.T) {
	t.Parallel()
	db := storetest.Open(t)
	putIdentities(t, db)
	err := db.Update(ctx, func(tx store.Tx) error {
		got, err := tx.Identity("p", "https://github.com", "4242")
		if err != nil {
			return err
		}
		want := store.Identity{ProjectID: "p", Issuer: "https://github.com", Subject: "4242", UserID: "u1", Provider: "gh", CreatedAt: idT0}
		if !got.CreatedAt.Equal(idT0) {
			t.Errorf("CreatedAt=%v, want %v", got.CreatedAt, idT0)
		}
		got.CreatedAt = idT0
		if *got != want {
			t.Errorf("Identity=%+v, want %+v", *got, want)
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
			{ProjectID: "p", Issuer: "https://x", Subject: "s", UserID: ""},
			{ProjectID: "p", Issuer: "https://x", Subject: "s", UserID: "u1", Provider: "\x00"},
		} {
			if err := tx.PutIdentity(bad); !errors.Is(err, store.ErrBadIdentity) {
				t.Errorf("PutIdentity(%q)=%v, want ErrBadIdentity", *bad, err)
			}
		}
		// Replaced: the link moves to u2.
		return tx.PutIdentity(&store.Identity{ProjectID: "p", Issuer: "https://github.com", Subject: "4242", UserID: "u2", Provider: "github", CreatedAt: idT0.Add(time.Hour)})
	})
	if err != nil {
		t.Fatal(err)
	}
	lists := func() map[string][]string {
		out := map[string][]string{}
		db.View(ctx, func(tx store.Tx) error {
			for _, u := range []string{"u1", "u2", "u3", "gone"} {
				list, err := tx.UserIdentities(u)
				if err != nil {
					t.Fatal(err)
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
	check(t, db)

	// DeleteUser takes u2's links, not u1's nor another project's.
	err = db.Update(ctx, func(tx store.Tx) error {
		u, err := tx.User("u2")
		if err != nil {
			return err
		}
		if err := tx.DeleteUser(u); err != nil {
			return err
		}
		_, err = tx.Identity("p", "https://github.com", "4242")
		if !errors.Is(err, store.ErrNotFound) {
			t.Errorf("a deleted user's link: %v, want ErrNotFound", err)
		}
		// A link whose user is gone (left by an older release), for
		// DeleteProject to find.
		return tx.PutIdentity(&store.Identity{ProjectID: "p", Issuer: "https://idp.example", Subject: "orphan", UserID: "gone", CreatedAt: idT0})
	})
	if err != nil {
		t.Fatal(err)
	}
	want["u2"], want["gone"] = []string{}, []string{"gone https://idp.example orphan"}
	if got := lists(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after DeleteUser: %q, want %q", got, want)
	}

	// DeleteProject takes the project's links, the orphan's too.
	if err := db.Update(ctx, func(tx store.Tx) error { _, err := tx.DeleteProject("p"); return err }); err != nil {
		t.Fatal(err)
	}
	want["u1"], want["gone"] = []string{}, []string{}
	if got := lists(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after DeleteProject: %q, want %q", got, want)
	}
	db.View(ctx, func(tx store.Tx) error {
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

// TestIdentitiesCopy: latchkey copy carries every link exactly, out of
// the backend under test into a data file and from there into a new
// store of that backend (bbolt → bbolt → bbolt on the bolt pass,
// PostgreSQL → bbolt → PostgreSQL on the postgres pass).
func TestIdentitiesCopy(t *testing.T) {
	t.Parallel()
	src := storetest.Open(t)
	putIdentities(t, src)
	long := strings.Repeat("ß", 100) + "|" + strings.Repeat("z", 55)
	err := src.Update(ctx, func(tx store.Tx) error {
		return tx.PutIdentity(&store.Identity{ProjectID: "p", Issuer: "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0",
			Subject: long, UserID: "u2", Provider: "", CreatedAt: time.Time{}})
	})
	if err != nil {
		t.Fatal(err)
	}
	all := func(db store.DB) []string {
		t.Helper()
		var out []string
		db.View(ctx, func(tx store.Tx) error {
			for _, u := range []string{"u1", "u2", "u3"} {
				list, err := tx.UserIdentities(u)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range list {
					out = append(out, fmt.Sprintf("%q %q %q %q %q %s %v", id.ProjectID, id.Issuer, id.Subject, id.UserID, id.Provider,
						id.CreatedAt.UTC().Format(time.RFC3339Nano), id.CreatedAt.IsZero()))
				}
			}
			return nil
		})
		return out
	}
	want := all(src)
	if len(want) != 5 {
		t.Fatalf("the source holds %d links, want 5: %q", len(want), want)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	file, _, err := store.Open(ctx, path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	counts, err := store.Copy(ctx, src, file)
	if err != nil {
		t.Fatal(err)
	}
	if counts["Identity"] != 5 {
		t.Fatalf("copied %v, want 5 Identity", counts)
	}
	if got := all(file); !reflect.DeepEqual(got, want) {
		t.Fatalf("in the data file:\n %q\nwant\n %q", got, want)
	}
	back := storetest.Open(t)
	if _, err := store.Copy(ctx, file, back); err != nil {
		t.Fatal(err)
	}
	if got := all(back); !reflect.DeepEqual(got, want) {
		t.Fatalf("copied back:\n %q\nwant\n %q", got, want)
	}
	check(t, file)
	check(t, back)
}
