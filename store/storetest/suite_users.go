package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"latchkey/store"
)

// Users tests the accounts (store.Users): exact round trips, the unique
// address and external id per project, writers racing for one address,
// pages in byte order, DeleteUser with what it takes and leaves, and
// FactorSummaries.
func (s Suite) Users(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.usersRoundTrip},
		{"Conflict", s.usersConflict},
		{"Race", s.usersRace},
		{"Pages", s.usersPages},
		{"Delete", s.usersDelete},
		{"FactorSummaries", s.usersFactorSummaries},
	})
}

// usersRoundTrip: every field comes back exactly; a pointer to false is
// not nil; groups and metadata come back byte for byte, and empty ones
// ([] and {}) stay empty, not absent (nil), nor absent ones empty; the
// lookups by address (read for itself or ahead) and external id, and
// the pages, find the user as written.
func (s Suite) usersRoundTrip(t *testing.T) {
	db := s.open(t, store.Options{})
	yes, no := true, false
	users := []*store.User{
		{ID: "u-full", ProjectID: "p-full", Email: "ada@example.com", ExternalUserID: "ext-1", FirstName: "Ada ✓",
			CompanyID: "co", Disabled: true, CreatedAt: t0, UpdatedAt: t0.Add(time.Nanosecond), EmailVerified: &yes, Vouched: &yes,
			Groups: []string{"admins", "ops.eu-1", "z"},
			// Not as encoding/json writes it: spaces, key order, an
			// escape and a number with a trailing zero stay.
			Metadata: json.RawMessage(`{"role": "admin", "a":{"n":[1, 2.50, "\u00e9<é>"]}, "role2":null}`)},
		{ID: "u-false", ProjectID: "p-full", Email: "bob@example.com", EmailVerified: &no, Vouched: &no},
		{ID: "u-nil", ProjectID: "p-full", Email: "cy@example.com"},
		{ID: "u-empty", ProjectID: "p-full", Email: "dee@example.com", Groups: []string{}, Metadata: json.RawMessage(`{}`)},
	}
	complete(t, users[0])
	update(t, db, func(tx store.Tx) error {
		for _, u := range users {
			if err := tx.PutUser(u); err != nil {
				return fmt.Errorf("user %s: %w", u.ID, err)
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		for _, want := range users {
			got, err := tx.User(want.ID)
			if err != nil {
				return err
			}
			if err := diff("user "+want.ID, got, want); err != nil {
				return err
			}
			got, err = tx.UserByEmail(want.ProjectID, want.Email)
			if err != nil {
				return err
			}
			if err := diff("user by email "+want.ID, got, want); err != nil {
				return err
			}
			if err := sameGroupsAndMetadata("user by email "+want.ID, got, want); err != nil {
				return err
			}
		}
		got, err := tx.UserByExternalID("p-full", "ext-1")
		if err != nil {
			return err
		}
		return diff("user by external id", got, users[0])
	})
	view(t, db, func(tx store.Tx) error {
		emails := make([]string, len(users))
		for i, u := range users {
			emails[i] = u.Email
		}
		tx.PrefetchUsers("p-full", emails)
		for _, want := range users {
			got, err := tx.UserByEmail(want.ProjectID, want.Email)
			if err != nil {
				return err
			}
			if err := sameGroupsAndMetadata("user read ahead "+want.ID, got, want); err != nil {
				return err
			}
		}
		page, _, err := tx.Users("p-full", "", "", 0)
		if err != nil {
			return err
		}
		if len(page) != len(users) {
			return fmt.Errorf("Users: %d users, want %d", len(page), len(users))
		}
		for i, want := range users { // written in address order
			if err := sameGroupsAndMetadata("user of a page "+want.ID, page[i], want); err != nil {
				return err
			}
		}
		return nil
	})
	// Groups and metadata are replaced whole, and cleared by nil.
	update(t, db, func(tx store.Tx) error {
		u, err := tx.User("u-full")
		if err != nil {
			return err
		}
		u.Groups, u.Metadata = nil, nil
		if err := tx.PutUser(u); err != nil {
			return err
		}
		if u, err = tx.User("u-empty"); err != nil {
			return err
		}
		u.Groups, u.Metadata = []string{"one"}, json.RawMessage(`{"k":"v"}`)
		return tx.PutUser(u)
	})
	view(t, db, func(tx store.Tx) error {
		for id, want := range map[string]*store.User{
			"u-full":  {},
			"u-empty": {Groups: []string{"one"}, Metadata: json.RawMessage(`{"k":"v"}`)},
		} {
			got, err := tx.User(id)
			if err != nil {
				return err
			}
			if err := sameGroupsAndMetadata(id+" rewritten", got, want); err != nil {
				return err
			}
		}
		return nil
	})
}

// sameGroupsAndMetadata compares what diff does not tell apart: an empty
// list or object and none (nil), and metadata's bytes.
func sameGroupsAndMetadata(what string, got, want *store.User) error {
	if (got.Groups == nil) != (want.Groups == nil) || !slices.Equal(got.Groups, want.Groups) {
		return fmt.Errorf("%s: groups %#v, want %#v", what, got.Groups, want.Groups)
	}
	if (got.Metadata == nil) != (want.Metadata == nil) || !bytes.Equal(got.Metadata, want.Metadata) {
		return fmt.Errorf("%s: metadata %q (nil %v), want %q (nil %v)", what, got.Metadata, got.Metadata == nil, want.Metadata, want.Metadata == nil)
	}
	return nil
}

// usersConflict: another user's address or external id is ErrConflict,
// changing nothing, and the transaction goes on; an address or external
// id a user gave up is free again; many users have no external id;
// lookups by ids that cannot be text find nothing without an error.
func (s Suite) usersConflict(t *testing.T) {
	db := s.open(t, store.Options{})
	ada := &store.User{ID: "u1", ProjectID: "p", Email: "ada@example.com", ExternalUserID: "x1", CreatedAt: t0}
	update(t, db, func(tx store.Tx) error {
		for _, u := range []*store.User{ada,
			{ID: "u2", ProjectID: "p", Email: "bob@example.com"},
			{ID: "u3", ProjectID: "p", Email: "cy@example.com"},
			{ID: "u4", ProjectID: "q", Email: "ada@example.com", ExternalUserID: "x1"}, // another project
		} {
			if err := tx.PutUser(u); err != nil {
				return fmt.Errorf("%s: %w", u.ID, err)
			}
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		for _, u := range []*store.User{
			{ID: "u2", ProjectID: "p", Email: "ada@example.com"},                       // the address
			{ID: "u2", ProjectID: "p", Email: "bob@example.com", ExternalUserID: "x1"}, // the external id
			{ID: "u9", ProjectID: "p", Email: "ada@example.com"},                       // a new user
		} {
			if err := tx.PutUser(u); !errors.Is(err, store.ErrConflict) {
				t.Errorf("PutUser(%s, %s, %q) = %v, want ErrConflict", u.ID, u.Email, u.ExternalUserID, err)
			}
		}
		// The transaction still works, and writes.
		return tx.PutUser(&store.User{ID: "u5", ProjectID: "p", Email: "dee@example.com"})
	})
	view(t, db, func(tx store.Tx) error {
		if u, err := tx.User("u2"); err != nil || u.Email != "bob@example.com" || u.ExternalUserID != "" {
			return fmt.Errorf("u2 after conflicts: %+v, %v", u, err)
		}
		if u, err := tx.UserByEmail("p", "bob@example.com"); err != nil || u.ID != "u2" {
			return fmt.Errorf("u2's address after conflicts: %+v, %v", u, err)
		}
		if _, err := tx.User("u9"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("u9 after a conflict: %v", err)
		}
		if _, err := tx.User("u5"); err != nil {
			return fmt.Errorf("u5, written after the conflicts: %v", err)
		}
		return nil
	})
	// Ada changes address and external id: the old ones are free, the
	// lookups follow.
	update(t, db, func(tx store.Tx) error {
		moved := *ada
		moved.Email, moved.ExternalUserID = "ada@new.example", "x2"
		if err := tx.PutUser(&moved); err != nil {
			return err
		}
		if err := tx.PutUser(&store.User{ID: "u6", ProjectID: "p", Email: "ada@example.com", ExternalUserID: "x1"}); err != nil {
			return fmt.Errorf("the freed address and external id: %w", err)
		}
		// Its own address and external id are no conflict.
		return tx.PutUser(&moved)
	})
	view(t, db, func(tx store.Tx) error {
		for _, c := range []struct{ email, ext, want string }{
			{"ada@new.example", "x2", "u1"}, {"ada@example.com", "x1", "u6"},
		} {
			u, err := tx.UserByEmail("p", c.email)
			if err != nil || u.ID != c.want {
				return fmt.Errorf("UserByEmail(%s) = %+v, %v; want %s", c.email, u, err, c.want)
			}
			u, err = tx.UserByExternalID("p", c.ext)
			if err != nil || u.ID != c.want {
				return fmt.Errorf("UserByExternalID(%s) = %+v, %v; want %s", c.ext, u, err, c.want)
			}
		}
		if u, err := tx.UserByExternalID("q", "x1"); err != nil || u.ID != "u4" {
			return fmt.Errorf("another project's external id: %+v, %v", u, err)
		}
		for name, err := range map[string]error{
			"UserByExternalID(p, \"\")":    wantNotFound(tx.UserByExternalID("p", "")),
			"UserByEmail(q, bob)":          wantNotFound(tx.UserByEmail("q", "bob@example.com")),
			"UserByEmail(p, ADA)":          wantNotFound(tx.UserByEmail("p", "ADA@example.com")),
			"UserByExternalID(p, x1 of q)": wantNotFound(tx.UserByExternalID("r", "x1")),
		} {
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	})
	noRowFor(t, db, func(tx store.Tx) error { return second(tx.User("u1")) }, func(tx store.Tx, bad string) map[string]error {
		return map[string]error{
			"User":                     wantNotFound(tx.User(bad)),
			"UserByEmail":              wantNotFound(tx.UserByEmail("p", bad)),
			"UserByEmail/project":      wantNotFound(tx.UserByEmail(bad, "ada@new.example")),
			"UserByExternalID":         wantNotFound(tx.UserByExternalID("p", bad)),
			"UserByExternalID/project": wantNotFound(tx.UserByExternalID(bad, "x")),
			"Users":                    wantNone(page(tx.Users(bad, "", "", 0))),
			"FactorSummaries":          second(tx.FactorSummaries(bad, []string{bad})),
		}
	})
}

// usersRace: transactions that give one address to a user at once (new
// users, or existing users changing theirs): exactly one commits, the
// others answer ErrConflict, whether they looked the address up first
// (as auth's login does) or PutUser's own check is the only read.
func (s Suite) usersRace(t *testing.T) {
	for _, mode := range []string{"lookFirst", "insert", "update"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			db := s.open(t, store.Options{})
			const n = 8
			if mode == "update" {
				update(t, db, func(tx store.Tx) error {
					for i := range n {
						if err := tx.PutUser(&store.User{ID: fmt.Sprint("u", i), ProjectID: "p", Email: fmt.Sprint(i, "@example.com")}); err != nil {
							return err
						}
					}
					return nil
				})
			}
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = db.Update(ctx, func(tx store.Tx) error {
						if mode == "lookFirst" {
							if _, err := tx.UserByEmail("p", "race@example.com"); !errors.Is(err, store.ErrNotFound) {
								return store.ErrConflict
							}
						}
						return tx.PutUser(&store.User{ID: fmt.Sprint("u", i), ProjectID: "p", Email: "race@example.com", ExternalUserID: fmt.Sprint("x", i)})
					})
				}()
			}
			wg.Wait()
			won := 0
			for i, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, store.ErrConflict):
					t.Errorf("writer %d: %v", i, err)
				}
			}
			if won != 1 {
				t.Fatalf("%d writers gave themselves the address, want 1", won)
			}
		})
	}
}

// usersPages: listings in email byte order (not a language's
// collation), by prefix and after a cursor, with more, match a reference
// computed in Go, for cursors and prefixes of any bytes too.
func (s Suite) usersPages(t *testing.T) {
	db := s.open(t, store.Options{})
	emails := []string{"a@x.io", "A@x.io", "ab@x.io", "ab.c@x.io", "abc@x.io", "b@x.io", "B@x.io", "_@x.io",
		"é@x.io", "e@x.io", "z@x.io", "\u00ff@x.io", "\U0010ffff@x.io", "\U0010ffffa@x.io", "ab\u00e9@x.io", "ab\u00ea@x.io"}
	update(t, db, func(tx store.Tx) error {
		for i, e := range emails {
			if err := tx.PutUser(&store.User{ID: fmt.Sprintf("u%02d", i), ProjectID: "p", Email: e}); err != nil {
				return err
			}
		}
		return tx.PutUser(&store.User{ID: "other", ProjectID: "q", Email: "a@x.io"})
	})
	sorted := append([]string(nil), emails...)
	sort.Strings(sorted) // byte order
	reference := func(prefix, after string, limit int) ([]string, bool) {
		var out []string
		for _, e := range sorted {
			if strings.HasPrefix(e, prefix) && (after == "" || e > after) {
				out = append(out, e)
			}
		}
		if limit > 0 && len(out) > limit {
			return out[:limit], true
		}
		return out, false
	}
	prefixes := []string{"", "a", "ab", "ab\xc3", "\xf4\x8f\xbf\xbf", "\xff", "a\x00", "é", "\xc3"}
	afters := []string{"", "a@x.io", "ab", "ab\xc3", "ab\xc3\xff", "\xff", "a\x00", "Z", "\xf4\x8f\xbf\xbf@x.io", "\xe9"}
	view(t, db, func(tx store.Tx) error {
		for _, prefix := range prefixes {
			for _, after := range afters {
				for _, limit := range []int{0, 1, 3, 100} {
					got, more, err := tx.Users("p", prefix, after, limit)
					if err != nil {
						return fmt.Errorf("Users(%q, %q, %d): %v", prefix, after, limit, err)
					}
					var gotEmails []string
					for _, u := range got {
						gotEmails = append(gotEmails, u.Email)
					}
					want, wantMore := reference(prefix, after, limit)
					if fmt.Sprintf("%q", gotEmails) != fmt.Sprintf("%q", want) || more != wantMore {
						t.Errorf("Users(%q, %q, %d) = %q more=%v, want %q more=%v", prefix, after, limit, gotEmails, more, want, wantMore)
					}
				}
			}
		}
		// Paging with the cursor walks every user once.
		var walked []string
		after := ""
		for {
			page, more, err := tx.Users("p", "", after, 4)
			if err != nil {
				return err
			}
			for _, u := range page {
				walked = append(walked, u.Email)
			}
			if !more {
				break
			}
			after = page[len(page)-1].Email
		}
		if fmt.Sprintf("%q", walked) != fmt.Sprintf("%q", sorted) {
			return fmt.Errorf("paging walked %q, want %q", walked, sorted)
		}
		if us, more, err := tx.Users("none", "", "", 10); us != nil || more || err != nil {
			return fmt.Errorf("Users of a project without any = %v, %v, %v; want nil", us, more, err)
		}
		return nil
	})
}

// usersDelete: DeleteUser removes the user, its lookups, sessions,
// factors, backup codes, passkeys and provider links (projectRows says
// which), and frees its address and external id; the rows that name it
// otherwise (devices, codes, histories, events) and another user's stay.
func (s Suite) usersDelete(t *testing.T) {
	db := s.open(t, store.Options{})
	update(t, db, func(tx store.Tx) error {
		if err := fillProject(tx, "a"); err != nil {
			return err
		}
		return fillProject(tx, "b")
	})
	update(t, db, func(tx store.Tx) error {
		u, err := tx.User("u-a")
		if err != nil {
			return err
		}
		if err := tx.DeleteUser(u); err != nil {
			return err
		}
		return tx.DeleteUser(u) // already gone: nil
	})
	view(t, db, func(tx store.Tx) error {
		for _, r := range projectRows {
			for _, n := range []string{"a", "b"} {
				ok, err := r.there(tx, n)
				if err != nil {
					return fmt.Errorf("%s of %s: %w", r.what, n, err)
				}
				if want := n == "b" || r.keptByUser; ok != want {
					t.Errorf("after DeleteUser(u-a): %s of %s there: %v, want %v", r.what, n, ok, want)
				}
			}
		}
		return nil
	})
	update(t, db, func(tx store.Tx) error {
		return tx.PutUser(&store.User{ID: "u-a3", ProjectID: "p-a", Email: "a@example.com", ExternalUserID: "ext-a"})
	})
	check(t, db)
}

// usersFactorSummaries: one call reports each user's factors with their
// statuses, its passkeys in the project and its backup codes; a user
// without any, or unknown, has the zero summary; never nil.
func (s Suite) usersFactorSummaries(t *testing.T) {
	db := s.open(t, store.Options{})
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	update(t, db, func(tx store.Tx) error {
		if err := tx.PutProject(&store.Project{ID: "p", Name: "p", CreatedAt: at}); err != nil {
			return err
		}
		for _, id := range []string{"u1", "u2", "u3", "u4"} {
			if err := tx.PutUser(&store.User{ID: id, ProjectID: "p", Email: id + "@example.com", CreatedAt: at}); err != nil {
				return err
			}
		}
		for _, err := range []error{
			tx.PutFactor(&store.Factor{UserID: "u1", ProjectID: "p", Kind: "totp", Status: "enrolled", CreatedAt: at}),
			tx.PutFactor(&store.Factor{UserID: "u1", ProjectID: "p", Kind: "sms", Status: "pending", Phone: "+15550100", CreatedAt: at}),
			tx.PutBackupCodes(&store.BackupCodes{UserID: "u1", ProjectID: "p", CreatedAt: at}),
			tx.PutPasskey(&store.Passkey{ProjectID: "p", ID: "cred", UserID: "u2", CreatedAt: at}),
			// A passkey in another project is not one of p's.
			tx.PutPasskey(&store.Passkey{ProjectID: "q", ID: "cred", UserID: "u4", CreatedAt: at}),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
	view(t, db, func(tx store.Tx) error {
		got, err := tx.FactorSummaries("p", []string{"u1", "u2", "u3", "u4", "nope"})
		if err != nil {
			return err
		}
		u1 := got["u1"]
		if u1.Factors["totp"] != "enrolled" || u1.Factors["sms"] != "pending" || len(u1.Factors) != 2 || u1.Passkeys || !u1.BackupCodes {
			t.Errorf("u1=%+v", u1)
		}
		if u2 := got["u2"]; len(u2.Factors) != 0 || !u2.Passkeys || u2.BackupCodes {
			t.Errorf("u2=%+v", u2)
		}
		for _, id := range []string{"u3", "u4", "nope"} {
			if u := got[id]; len(u.Factors) != 0 || u.Passkeys || u.BackupCodes {
				t.Errorf("%s=%+v, want the zero summary", id, u)
			}
		}
		if none, err := tx.FactorSummaries("p", nil); err != nil || none == nil {
			t.Errorf("FactorSummaries(none)=%v %v, want empty, non-nil", none, err)
		}
		return nil
	})
}
