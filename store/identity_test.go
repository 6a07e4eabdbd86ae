package store_test

import (
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
