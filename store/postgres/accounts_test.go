package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
)

// Tests of the accounts domain (projects, API keys, users, sessions,
// remembered devices) that are about PostgreSQL: exact round trips of
// every field through the columns, the unique constraints and a
// conflict that leaves the transaction usable, serializable races, byte
// order and arguments that are not valid text.

var accT0 = time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)

// openAccounts opens a store on a fresh database, closed at cleanup.
func openAccounts(t *testing.T) store.DB {
	t.Helper()
	db, _, err := store.Open(context.Background(), newDatabase(t), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// update runs fn in a write transaction and fails t on its error.
func accUpdate(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// view runs fn in a read transaction and fails t on its error.
func accView(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// notYet skips t when err says another domain's part of the backend is
// not written yet (the helpers of stub.go).
func notYet(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "not implemented yet") {
		t.Skip("needs another domain:", err)
	}
}

// same fails t unless got and want are deeply equal, times compared with
// Equal (the location is not part of store.Tx's promise).
func sameAccount(t *testing.T, name string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(normTimes(got), normTimes(want)) {
		t.Fatalf("%s:\n got %#v\nwant %#v", name, got, want)
	}
}

// normTimes returns a copy of the struct v points to with its times in
// UTC, so that DeepEqual compares instants.
func normTimes(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return v
	}
	c := reflect.New(rv.Elem().Type())
	c.Elem().Set(rv.Elem())
	for i := range c.Elem().NumField() {
		f := c.Elem().Field(i)
		switch x := f.Interface().(type) {
		case time.Time:
			if !x.IsZero() {
				f.Set(reflect.ValueOf(x.UTC()))
			}
		case *time.Time:
			if x != nil && !x.IsZero() {
				u := x.UTC()
				f.Set(reflect.ValueOf(&u))
			}
		}
	}
	return c.Interface()
}

// TestAccountsRoundTrip: every field of every record of the domain comes
// back exactly: times to the nanosecond and zero times as zero, nil and
// empty slices apart (JSON tells them apart on bbolt), nil pointers as
// nil, a pointer to the zero time, bytes a header brought that are not
// UTF-8.
func TestAccountsRoundTrip(t *testing.T) {
	t.Parallel()
	db := openAccounts(t)
	yes, no := true, false
	exp, zero := accT0.Add(365*24*time.Hour), time.Time{}
	projects := []*store.Project{
		{ID: "p-full", Name: "Full ✓", CompanyID: "c", AllowedOrigins: []string{"https://a.example", ""}, RPID: "a.example",
			SessionTTLSeconds: 86400, RateLimitPerMinute: 1 << 40, DenyCIDRs: []string{"10.0.0.0/8"}, CreatedAt: accT0,
			EmailChange: "direct", SigningKeyID: "kid", SigningKey: []byte{0, 1, 2, 255}, PublicKey: []byte("pub"), SessionRateLimitPerMinute: 77},
		{ID: "p-empty", AllowedOrigins: []string{}, DenyCIDRs: []string{}, SigningKey: []byte{}, PublicKey: []byte{}},
		{ID: "p-nil"},
	}
	keys := []*store.APIKey{
		{Prefix: "sk_live_a", Hash: []byte{9, 0, 9}, ProjectID: "p-full", Mode: "live", ExpiresAt: &exp, Revoked: true, CreatedAt: accT0},
		{Prefix: "sk_test_b", Hash: []byte{}, Mode: "test", ExpiresAt: &zero},
		{Prefix: "sk_test_c", Mode: "test"},
	}
	users := []*store.User{
		{ID: "u-full", ProjectID: "p-full", Email: "ada@example.com", ExternalUserID: "ext-1", FirstName: "Ada ✓",
			CompanyID: "co", Disabled: true, CreatedAt: accT0, UpdatedAt: accT0.Add(time.Nanosecond), EmailVerified: &yes, Vouched: &yes},
		{ID: "u-false", ProjectID: "p-full", Email: "bob@example.com", EmailVerified: &no, Vouched: &no},
		{ID: "u-nil", ProjectID: "p-full", Email: "cy@example.com"},
	}
	sessions := []*store.Session{
		{ID: "s-full", UserID: "u-full", ProjectID: "p-full", Method: "passkey", IssuedAt: accT0, ExpiresAt: exp,
			LastSeenAt: accT0.Add(time.Hour), IP: "2001:db8::1", UserAgent: "curl/8.5.0 é",
			Proofs: []store.Proof{{Method: "passkey", At: accT0}, {Method: "totp", At: accT0.Add(time.Minute + time.Nanosecond)}, {Method: "oauth:é", At: accT0.Add(-time.Hour)}, {Method: "mfa", At: zero}}},
		// A user agent cut inside a UTF-8 sequence, an IP header with a NUL.
		{ID: "s-bytes", UserID: "u-full", ProjectID: "p-full", IP: "1.2.3.4\x00x", UserAgent: "Mozilla \xe2\x82"},
		{ID: "s-zero"},
	}
	devices := []*store.Device{
		{Key: []byte{0, 1, 0xff}, Hash: []byte("h"), UserID: "u-full", ProjectID: "p-full", CreatedAt: accT0, LastUsedAt: accT0.Add(time.Hour)},
		{Key: []byte("k2"), Hash: []byte{}, UserID: "u", ProjectID: "p"},
	}
	accUpdate(t, db, func(tx store.Tx) error {
		for _, p := range projects {
			if err := tx.PutProject(p); err != nil {
				return fmt.Errorf("project %s: %w", p.ID, err)
			}
		}
		for _, k := range keys {
			if err := tx.PutAPIKey(k); err != nil {
				return fmt.Errorf("key %s: %w", k.Prefix, err)
			}
		}
		for _, u := range users {
			if err := tx.PutUser(u); err != nil {
				return fmt.Errorf("user %s: %w", u.ID, err)
			}
		}
		for _, s := range sessions {
			if err := tx.PutSession(s); err != nil {
				return fmt.Errorf("session %s: %w", s.ID, err)
			}
		}
		for _, d := range devices {
			if err := tx.PutDevice(d); err != nil {
				return fmt.Errorf("device %x: %w", d.Key, err)
			}
		}
		return nil
	})
	accView(t, db, func(tx store.Tx) error {
		for _, want := range projects {
			got, err := tx.Project(want.ID)
			if err != nil {
				t.Fatal(err)
			}
			sameAccount(t, "project "+want.ID, got, want)
		}
		for _, want := range keys {
			got, err := tx.APIKey(want.Prefix)
			if err != nil {
				t.Fatal(err)
			}
			sameAccount(t, "key "+want.Prefix, got, want)
		}
		for _, want := range users {
			got, err := tx.User(want.ID)
			if err != nil {
				t.Fatal(err)
			}
			sameAccount(t, "user "+want.ID, got, want)
		}
		for _, want := range sessions {
			got, err := tx.Session(want.ID)
			if err != nil {
				t.Fatal(err)
			}
			sameAccount(t, "session "+want.ID, got, want)
		}
		for _, want := range devices {
			got, err := tx.Device(want.Key)
			if err != nil {
				t.Fatal(err)
			}
			sameAccount(t, fmt.Sprintf("device %x", want.Key), got, want)
		}
		return nil
	})
	// A zero LastUsedAt became CreatedAt, in the value passed too.
	if !devices[1].LastUsedAt.Equal(devices[1].CreatedAt) {
		t.Fatalf("PutDevice left LastUsedAt %v", devices[1].LastUsedAt)
	}
}

// TestLegacySessionRows: a session row stored before sessions kept
// their proofs (both proof columns NULL) reads as store.LegacyProofs
// says, from its method, issued_at and stepped_up_at; written again, it
// keeps them and its step-up column is cleared.
func TestLegacySessionRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := newDatabase(t)
	db, _, err := store.Open(ctx, url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	stepped := accT0.Add(5 * time.Minute)
	for _, r := range []struct {
		id, method string
		stepped    any
	}{{"s-otp", "email_otp", nil}, {"s-link", "magic_link", stepped.UnixNano()}} {
		if _, err := conn.Exec(ctx, `INSERT INTO sessions (id, user_id, project_id, method, issued_at, expires_at, stepped_up_at, ip, user_agent, due)
			VALUES ($1, 'u', 'p', $2, $3, $4, $5, '', '', $4)`, r.id, r.method, accT0.UnixNano(), accT0.Add(time.Hour).UnixNano(), r.stepped); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]store.Proof{
		"s-otp":  {{Method: "otp", At: accT0}},
		"s-link": {{Method: "link", At: accT0}, {Method: "mfa", At: stepped}},
	}
	var rows []*store.Session
	accView(t, db, func(tx store.Tx) error {
		for id, w := range want {
			s, err := tx.Session(id)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Proofs, w) {
				t.Fatalf("%s: proofs %v, want %v", id, s.Proofs, w)
			}
			rows = append(rows, s)
		}
		return nil
	})
	accUpdate(t, db, func(tx store.Tx) error {
		for _, s := range rows {
			if err := tx.PutSession(s); err != nil {
				return err
			}
		}
		return nil
	})
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE stepped_up_at IS NOT NULL OR proof_methods IS NULL`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d rows still in the old form (%v)", left, err)
	}
	accView(t, db, func(tx store.Tx) error {
		for id, w := range want {
			if s, err := tx.Session(id); err != nil || !reflect.DeepEqual(s.Proofs, w) {
				t.Fatalf("%s rewritten: proofs %v, %v; want %v", id, s.Proofs, err, w)
			}
		}
		return nil
	})
}

// TestPutUserConflict: another user's address or external id is
// ErrConflict, changing nothing, and the transaction goes on (a unique
// violation would have aborted it); an address or external id a user
// gave up is free again; many users have no external id.
func TestPutUserConflict(t *testing.T) {
	t.Parallel()
	db := openAccounts(t)
	ada := &store.User{ID: "u1", ProjectID: "p", Email: "ada@example.com", ExternalUserID: "x1", CreatedAt: accT0}
	accUpdate(t, db, func(tx store.Tx) error {
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
	accUpdate(t, db, func(tx store.Tx) error {
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
	accView(t, db, func(tx store.Tx) error {
		if u, err := tx.User("u2"); err != nil || u.Email != "bob@example.com" || u.ExternalUserID != "" {
			t.Fatalf("u2 after conflicts: %+v, %v", u, err)
		}
		if _, err := tx.User("u9"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("u9 after a conflict: %v", err)
		}
		if _, err := tx.User("u5"); err != nil {
			t.Fatalf("u5, written after the conflicts: %v", err)
		}
		return nil
	})
	// Ada changes address and external id: the old ones are free, the
	// lookups follow.
	accUpdate(t, db, func(tx store.Tx) error {
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
	accView(t, db, func(tx store.Tx) error {
		for _, c := range []struct{ email, ext, want string }{
			{"ada@new.example", "x2", "u1"}, {"ada@example.com", "x1", "u6"},
		} {
			u, err := tx.UserByEmail("p", c.email)
			if err != nil || u.ID != c.want {
				t.Fatalf("UserByEmail(%s) = %+v, %v; want %s", c.email, u, err, c.want)
			}
			u, err = tx.UserByExternalID("p", c.ext)
			if err != nil || u.ID != c.want {
				t.Fatalf("UserByExternalID(%s) = %+v, %v; want %s", c.ext, u, err, c.want)
			}
		}
		if u, err := tx.UserByExternalID("q", "x1"); err != nil || u.ID != "u4" {
			t.Fatalf("another project's external id: %+v, %v", u, err)
		}
		if _, err := tx.UserByExternalID("p", ""); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("UserByExternalID of the empty id: %v, want ErrNotFound", err)
		}
		return nil
	})
}

// TestPutUserRace: transactions that give one address to a user at once
// (new users, or existing users changing theirs): exactly one commits,
// the others' reruns see it and answer ErrConflict, whether they looked
// the address up first (as auth's login does) or PutUser's own check is
// the only read.
func TestPutUserRace(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"lookFirst", "insert", "update"} {
		t.Run(mode, func(t *testing.T) {
			db := openAccounts(t)
			const n = 8
			if mode == "update" {
				accUpdate(t, db, func(tx store.Tx) error {
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
					errs[i] = db.Update(context.Background(), func(tx store.Tx) error {
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

// TestUsersPages: listings in email byte order (not a language's
// collation), by prefix and after a cursor, with more, match a reference
// computed in Go, for cursors and prefixes of any bytes too.
func TestUsersPages(t *testing.T) {
	t.Parallel()
	db := openAccounts(t)
	emails := []string{"a@x.io", "A@x.io", "ab@x.io", "ab.c@x.io", "abc@x.io", "b@x.io", "B@x.io", "_@x.io",
		"é@x.io", "e@x.io", "z@x.io", "\u00ff@x.io", "\U0010ffff@x.io", "\U0010ffffa@x.io", "ab\u00e9@x.io", "ab\u00ea@x.io"}
	accUpdate(t, db, func(tx store.Tx) error {
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
	accView(t, db, func(tx store.Tx) error {
		for _, prefix := range prefixes {
			for _, after := range afters {
				for _, limit := range []int{0, 1, 3, 100} {
					got, more, err := tx.Users("p", prefix, after, limit)
					if err != nil {
						t.Fatalf("Users(%q, %q, %d): %v", prefix, after, limit, err)
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
				t.Fatal(err)
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
			t.Fatalf("paging walked %q, want %q", walked, sorted)
		}
		return nil
	})
}

// TestNotText: lookups by ids that cannot be text (a NUL, broken UTF-8:
// from URLs and headers) find nothing without an error, and the
// transaction goes on.
func TestNotText(t *testing.T) {
	t.Parallel()
	db := openAccounts(t)
	accUpdate(t, db, func(tx store.Tx) error {
		return tx.PutUser(&store.User{ID: "u", ProjectID: "p", Email: "a@x.io"})
	})
	for _, bad := range []string{"\x00", "\xff", "a\xc3"} {
		accUpdate(t, db, func(tx store.Tx) error {
			for name, err := range map[string]error{
				"Project":          second(tx.Project(bad)),
				"APIKey":           second(tx.APIKey(bad)),
				"User":             second(tx.User(bad)),
				"UserByEmail":      second(tx.UserByEmail("p", bad)),
				"UserByExternalID": second(tx.UserByExternalID(bad, "x")),
				"Session":          second(tx.Session(bad)),
			} {
				if !errors.Is(err, store.ErrNotFound) {
					t.Errorf("%s(%q) = %v, want ErrNotFound", name, bad, err)
				}
			}
			if ok, err := tx.SessionExists(bad); ok || err != nil {
				t.Errorf("SessionExists(%q) = %v, %v", bad, ok, err)
			}
			for name, err := range map[string]error{
				"TouchSession":       tx.TouchSession(bad, accT0, 0),
				"DeleteSession":      tx.DeleteSession(&store.Session{ID: bad}),
				"DeleteUserSessions": tx.DeleteUserSessions(bad),
				"UserSessions":       second(tx.UserSessions(bad)),
				"UserSessionRows":    second(tx.UserSessionRows(bad)),
				"APIKeys":            second(tx.APIKeys(bad)),
				"Users":              third(tx.Users(bad, "", "", 0)),
			} {
				if err != nil {
					t.Errorf("%s(%q) = %v", name, bad, err)
				}
			}
			_, err := tx.User("u")
			return err
		})
	}
}

// second returns the error of a call's results.
func second[T any](_ T, err error) error { return err }

// third returns the error of a call's three results.
func third[T, U any](_ T, _ U, err error) error { return err }

// TestSessionsOfAUser: a user's sessions in id order, newest first with
// a limit, deleted one by one or all; TouchSession's grace and its
// never-backwards rule; a deleted session is not recreated by a touch.
func TestSessionsOfAUser(t *testing.T) {
	t.Parallel()
	db := openAccounts(t)
	accUpdate(t, db, func(tx store.Tx) error {
		for i := range 5 {
			for _, u := range []string{"u1", "u2"} {
				s := &store.Session{ID: fmt.Sprintf("0193-%s-%02d", u, 4-i), UserID: u, ProjectID: "p", IssuedAt: accT0, ExpiresAt: accT0.Add(time.Hour)}
				if err := tx.PutSession(s); err != nil {
					return err
				}
			}
		}
		return nil
	})
	accView(t, db, func(tx store.Tx) error {
		ids, err := tx.UserSessions("u1")
		if err != nil || fmt.Sprint(ids) != "[0193-u1-00 0193-u1-01 0193-u1-02 0193-u1-03 0193-u1-04]" {
			t.Fatalf("UserSessions = %v, %v", ids, err)
		}
		if ids, err := tx.UserSessions("nobody"); ids != nil || err != nil {
			t.Fatalf("UserSessions(nobody) = %#v, %v; want nil", ids, err)
		}
		rows, err := tx.UserSessionRows("nobody")
		if rows == nil || len(rows) != 0 || err != nil {
			t.Fatalf("UserSessionRows(nobody) = %#v, %v; want empty, not nil", rows, err)
		}
		for _, c := range []struct {
			limit int
			want  string
			more  bool
		}{{3, "[0193-u1-04 0193-u1-03 0193-u1-02]", true}, {5, "[0193-u1-04 0193-u1-03 0193-u1-02 0193-u1-01 0193-u1-00]", false}, {0, "[]", true}} {
			got, more, err := tx.RecentUserSessions("u1", c.limit)
			var ids []string
			for _, s := range got {
				ids = append(ids, s.ID)
			}
			if got == nil || err != nil || fmt.Sprint(ids) != c.want || more != c.more {
				t.Fatalf("RecentUserSessions(%d) = %v more=%v, %v; want %s more=%v", c.limit, ids, more, err, c.want, c.more)
			}
		}
		return nil
	})
	// TouchSession: within grace of the sign-in nothing is written;
	// later uses are, never backwards.
	seen := func() time.Time {
		var s *store.Session
		accView(t, db, func(tx store.Tx) (err error) { s, err = tx.Session("0193-u1-00"); return })
		return s.LastSeenAt
	}
	for _, c := range []struct {
		at, want time.Duration // want -1: never written
	}{{30 * time.Second, -1}, {time.Minute - time.Nanosecond, -1}, {time.Minute, time.Minute}, {70 * time.Second, 70 * time.Second}, {65 * time.Second, 70 * time.Second}} {
		accUpdate(t, db, func(tx store.Tx) error { return tx.TouchSession("0193-u1-00", accT0.Add(c.at), time.Minute) })
		want := time.Time{}
		if c.want >= 0 {
			want = accT0.Add(c.want)
		}
		if got := seen(); !got.Equal(want) {
			t.Fatalf("after a use at +%v: LastSeenAt %v, want %v", c.at, got, want)
		}
	}
	accUpdate(t, db, func(tx store.Tx) error {
		if err := tx.DeleteSession(&store.Session{ID: "0193-u1-00", UserID: "u1"}); err != nil {
			return err
		}
		if err := tx.DeleteSession(&store.Session{ID: "0193-u1-00", UserID: "u1"}); err != nil {
			return fmt.Errorf("deleting a deleted session: %w", err)
		}
		if err := tx.TouchSession("0193-u1-00", accT0.Add(time.Hour), 0); err != nil {
			return err
		}
		if ok, err := tx.SessionExists("0193-u1-00"); ok || err != nil {
			return fmt.Errorf("a deleted session exists after a touch: %v, %v", ok, err)
		}
		return tx.DeleteUserSessions("u2")
	})
	accView(t, db, func(tx store.Tx) error {
		if ids, _ := tx.UserSessions("u1"); len(ids) != 4 {
			t.Fatalf("u1 has %v", ids)
		}
		if ids, _ := tx.UserSessions("u2"); len(ids) != 0 {
			t.Fatalf("u2 has %v after DeleteUserSessions", ids)
		}
		return nil
	})
}

// TestAccountsExpiry: sessions and devices are swept at their due time,
// not a nanosecond before, through ExpiryDue and SweepExpired; a row
// rewritten with a later expiry moves; a zero expiry is long due.
func TestAccountsExpiry(t *testing.T) {
	t.Parallel()
	day := 24 * time.Hour
	cases := []struct {
		kind store.Expiring
		due  time.Time
		put  func(tx store.Tx, at time.Time) error
		live func(tx store.Tx) bool
	}{
		{store.ExpiringSessions, accT0.Add(time.Hour), func(tx store.Tx, at time.Time) error {
			return tx.PutSession(&store.Session{ID: "s1", UserID: "u1", ProjectID: "p", IssuedAt: accT0, ExpiresAt: at})
		}, func(tx store.Tx) bool { ok, _ := tx.SessionExists("s1"); return ok }},
		{store.ExpiringDevices, accT0.Add(store.DeviceLifetime + 3*day), func(tx store.Tx, at time.Time) error {
			return tx.PutDevice(&store.Device{Key: []byte("dev1"), Hash: []byte{1}, UserID: "u1", ProjectID: "p", CreatedAt: accT0, LastUsedAt: at.Add(-store.DeviceLifetime)})
		}, func(tx store.Tx) bool { _, err := tx.Device([]byte("dev1")); return err == nil }},
	}
	for _, c := range cases {
		t.Run(c.kind.String(), func(t *testing.T) {
			db := openAccounts(t)
			accUpdate(t, db, func(tx store.Tx) error { return c.put(tx, c.due.Add(-day)) })
			accUpdate(t, db, func(tx store.Tx) error { return c.put(tx, c.due) })
			before := c.due.Add(-time.Nanosecond)
			accView(t, db, func(tx store.Tx) error {
				b, _ := tx.ExpiryDue(c.kind, before)
				d, _ := tx.ExpiryDue(c.kind, c.due)
				n, _ := tx.ExpiringCount(c.kind)
				if b || !d || n != 1 {
					t.Fatalf("ExpiryDue(before)=%v ExpiryDue(due)=%v count=%d", b, d, n)
				}
				return nil
			})
			var n int
			accUpdate(t, db, func(tx store.Tx) (err error) { n, err = tx.SweepExpired(c.kind, before, 100); return })
			if n != 0 {
				t.Fatalf("swept %d a nanosecond early", n)
			}
			accUpdate(t, db, func(tx store.Tx) (err error) { n, err = tx.SweepExpired(c.kind, c.due, 100); return })
			accView(t, db, func(tx store.Tx) error {
				if n != 1 || c.live(tx) {
					t.Fatalf("swept %d at its time, row live: %v", n, c.live(tx))
				}
				return nil
			})
		})
	}
	t.Run("zero", func(t *testing.T) {
		db := openAccounts(t)
		accUpdate(t, db, func(tx store.Tx) error { return tx.PutSession(&store.Session{ID: "s0", UserID: "u"}) })
		var n int
		accUpdate(t, db, func(tx store.Tx) (err error) {
			n, err = tx.SweepExpired(store.ExpiringSessions, time.Unix(1, 0), 100)
			return
		})
		if n != 1 {
			t.Fatalf("a session without an expiry: swept %d, want 1", n)
		}
	})
}

// TestDeleteProjectAccounts: DeleteProject removes the project's users
// with their sessions and its devices, detaches its keys (returning
// their prefixes), leaves another project's rows, and answers
// ErrNotFound for an unknown project without changing anything.
func TestDeleteProjectAccounts(t *testing.T) {
	t.Parallel()
	db := openAccounts(t)
	for _, p := range []string{"p", "q"} {
		accUpdate(t, db, func(tx store.Tx) error {
			if err := tx.PutProject(&store.Project{ID: p, CreatedAt: accT0}); err != nil {
				return err
			}
			for i := range 3 {
				uid := fmt.Sprintf("%s-u%d", p, i)
				if err := tx.PutUser(&store.User{ID: uid, ProjectID: p, Email: uid + "@x.io", ExternalUserID: "x" + uid}); err != nil {
					return err
				}
				if err := tx.PutSession(&store.Session{ID: uid + "-s", UserID: uid, ProjectID: p, ExpiresAt: accT0}); err != nil {
					return err
				}
				if err := tx.PutDevice(&store.Device{Key: []byte(uid + "-d"), UserID: uid, ProjectID: p, CreatedAt: accT0}); err != nil {
					return err
				}
				if err := tx.PutAPIKey(&store.APIKey{Prefix: fmt.Sprintf("sk_test_%s%d", p, i), ProjectID: p, Mode: "test"}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	err := db.Update(context.Background(), func(tx store.Tx) error {
		_, err := tx.DeleteProject("nope")
		if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("DeleteProject(unknown) = %v, want ErrNotFound", err)
		}
		detached, err := tx.DeleteProject("p")
		if err != nil {
			return err
		}
		sort.Strings(detached)
		if fmt.Sprint(detached) != "[sk_test_p0 sk_test_p1 sk_test_p2]" {
			return fmt.Errorf("detached %v", detached)
		}
		return nil
	})
	notYet(t, err)
	if err != nil {
		t.Fatal(err)
	}
	accView(t, db, func(tx store.Tx) error {
		if _, err := tx.Project("p"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("project after DeleteProject: %v", err)
		}
		if us, _, _ := tx.Users("p", "", "", 0); len(us) != 0 {
			t.Errorf("users left: %d", len(us))
		}
		for i := range 3 {
			if ok, _ := tx.SessionExists(fmt.Sprintf("p-u%d-s", i)); ok {
				t.Errorf("session %d left", i)
			}
			if _, err := tx.Device([]byte(fmt.Sprintf("p-u%d-d", i))); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("device %d left: %v", i, err)
			}
		}
		keys, _ := tx.APIKeys("")
		for _, k := range keys {
			if strings.HasPrefix(k.Prefix, "sk_test_p") && k.ProjectID != "" {
				t.Errorf("key %s still names %s", k.Prefix, k.ProjectID)
			}
		}
		if len(keys) != 6 {
			t.Errorf("%d keys, want 6", len(keys))
		}
		if us, _, _ := tx.Users("q", "", "", 0); len(us) != 3 {
			t.Errorf("the other project has %d users", len(us))
		}
		if ids, _ := tx.UserSessions("q-u1"); len(ids) != 1 {
			t.Errorf("the other project's sessions: %v", ids)
		}
		if _, err := tx.Device([]byte("q-u1-d")); err != nil {
			t.Errorf("the other project's device: %v", err)
		}
		if ks, _ := tx.APIKeys("q"); len(ks) != 3 {
			t.Errorf("the other project's keys: %d", len(ks))
		}
		return nil
	})
}

// TestDeleteUserAccounts: DeleteUser removes the row and its sessions and
// frees its address; another user's sessions stay.
func TestDeleteUserAccounts(t *testing.T) {
	t.Parallel()
	db := openAccounts(t)
	u := &store.User{ID: "u1", ProjectID: "p", Email: "a@x.io", ExternalUserID: "x"}
	accUpdate(t, db, func(tx store.Tx) error {
		for _, s := range []*store.Session{{ID: "s1", UserID: "u1"}, {ID: "s2", UserID: "u1"}, {ID: "s3", UserID: "u2"}} {
			if err := tx.PutSession(s); err != nil {
				return err
			}
		}
		return tx.PutUser(u)
	})
	err := db.Update(context.Background(), func(tx store.Tx) error { return tx.DeleteUser(u) })
	notYet(t, err)
	if err != nil {
		t.Fatal(err)
	}
	accUpdate(t, db, func(tx store.Tx) error {
		if _, err := tx.User("u1"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("user after DeleteUser: %v", err)
		}
		if ids, _ := tx.UserSessions("u1"); len(ids) != 0 {
			return fmt.Errorf("sessions left: %v", ids)
		}
		if ids, _ := tx.UserSessions("u2"); len(ids) != 1 {
			return fmt.Errorf("another user's sessions: %v", ids)
		}
		return tx.PutUser(&store.User{ID: "u3", ProjectID: "p", Email: "a@x.io", ExternalUserID: "x"})
	})
}

// TestListsInByteOrder: projects and keys come in id and prefix byte
// order, and nil when there are none.
func TestListsInByteOrder(t *testing.T) {
	t.Parallel()
	db := openAccounts(t)
	accView(t, db, func(tx store.Tx) error {
		ps, err1 := tx.Projects()
		ks, err2 := tx.APIKeys("")
		if ps != nil || ks != nil || err1 != nil || err2 != nil {
			t.Fatalf("empty lists: %v %v %v %v", ps, ks, err1, err2)
		}
		return nil
	})
	ids := []string{"b", "B", "a", "_", "é", "e", "Z"}
	accUpdate(t, db, func(tx store.Tx) error {
		for _, id := range ids {
			if err := tx.PutProject(&store.Project{ID: id}); err != nil {
				return err
			}
			if err := tx.PutAPIKey(&store.APIKey{Prefix: "sk_test_" + id, ProjectID: "p", Mode: "test"}); err != nil {
				return err
			}
		}
		return tx.PutAPIKey(&store.APIKey{Prefix: "sk_live_0", ProjectID: "other", Mode: "live"})
	})
	sort.Strings(ids)
	accView(t, db, func(tx store.Tx) error {
		ps, err := tx.Projects()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.ID)
		}
		if fmt.Sprint(got) != fmt.Sprint(ids) {
			t.Fatalf("Projects in %v, want %v", got, ids)
		}
		ks, err := tx.APIKeys("p")
		if err != nil || len(ks) != len(ids) {
			t.Fatalf("APIKeys(p): %d, %v", len(ks), err)
		}
		for i, k := range ks {
			if k.Prefix != "sk_test_"+ids[i] {
				t.Fatalf("key %d is %s, want sk_test_%s", i, k.Prefix, ids[i])
			}
		}
		all, _ := tx.APIKeys("")
		if len(all) != len(ids)+1 || !bytes.Equal([]byte(all[0].Prefix), []byte("sk_live_0")) {
			t.Fatalf("APIKeys(\"\"): %d keys, first %s", len(all), all[0].Prefix)
		}
		return nil
	})
}
