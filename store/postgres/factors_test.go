package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"latchkey/store"
	"latchkey/store/postgres"
)

// Tests of codes, histories, magic links, factors, backup codes, grants,
// passkeys, challenges and external methods on PostgreSQL: what the
// conformance suite does not reach (every field's round trip, nil
// against empty, NUL bytes, the helpers DeleteUser and DeleteProject
// call, concurrency under SERIALIZABLE, query plans).

// ft0 has nanoseconds, which timestamptz would lose.
var ft0 = time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)

// openFactorDB opens a store on a fresh database.
func openFactorDB(t *testing.T) (store.DB, string) {
	t.Helper()
	url := newDatabase(t)
	db, _, err := store.Open(context.Background(), url, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, url
}

// factorUpdate runs fn in an Update and fails t on its error.
func factorUpdate(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// factorView runs fn in a View and fails t on its error.
func factorView(t *testing.T, db store.DB, fn func(tx store.Tx) error) {
	t.Helper()
	if err := db.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// Inside a transaction function a test returns its failure as an error
// (t.Fatal there would leave the transaction open).

// sameFactor fails t when got and want differ.
func sameFactor(t *testing.T, what string, got, want any) {
	t.Helper()
	if err := diffFactor(what, got, want); err != nil {
		t.Fatal(err)
	}
}

// diffFactor describes how got differs from want, nil when it does not.
func diffFactor(what string, got, want any) error {
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
	return nil
}

// ptrTo returns a pointer to a copy of v.
func ptrTo[T any](v T) *T { return &v }

func TestCodeRoundTrip(t *testing.T) {
	db, _ := openFactorDB(t)
	// A subject is any string, byte for byte: a NUL, bytes that are not
	// UTF-8.
	subjects := []string{"a@example.com", "ext:a\x00b", "\xff\xfe"}
	codes := []*store.Code{
		{Kind: "otp", ProjectID: "p1", Subject: subjects[0], Hash: []byte{0, 1, 2}, Attempts: 3, CreatedAt: ft0, ExpiresAt: ft0.Add(10 * time.Minute)},
		{Kind: "email", ProjectID: "p1", Subject: subjects[1], Phone: "+15551234567", Email: "new@example.com", Hash: []byte{}, CreatedAt: ft0},
		{Kind: "replay", ProjectID: "m1", Subject: subjects[2]},
	}
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, c := range codes {
			if err := tx.PutCode(c); err != nil {
				return err
			}
		}
		return nil
	})
	factorView(t, db, func(tx store.Tx) error {
		for _, want := range codes {
			got, err := tx.Code(want.Kind, want.ProjectID, want.Subject)
			if err != nil {
				return fmt.Errorf("Code(%q): %v", want.Subject, err)
			}
			if err := diffFactor("code", got, want); err != nil {
				return err
			}
		}
		if _, err := tx.Code("otp", "p2", subjects[0]); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("another project's code: err=%v, want ErrNotFound", err)
		}
		if _, err := tx.Code("sms", "p1", subjects[0]); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("another kind's code: err=%v, want ErrNotFound", err)
		}
		return nil
	})
	// A new code replaces the old one whole.
	next := &store.Code{Kind: "otp", ProjectID: "p1", Subject: subjects[0], Hash: []byte{9}, CreatedAt: ft0.Add(time.Minute), ExpiresAt: ft0.Add(11 * time.Minute)}
	factorUpdate(t, db, func(tx store.Tx) error { return tx.PutCode(next) })
	factorUpdate(t, db, func(tx store.Tx) error {
		got, err := tx.Code("otp", "p1", subjects[0])
		if err != nil {
			return err
		}
		if err := diffFactor("replaced code", got, next); err != nil {
			return err
		}
		if err := tx.DeleteCode(next); err != nil {
			return err
		}
		if err := tx.DeleteCode(next); err != nil {
			return fmt.Errorf("deleting a deleted code: %v", err)
		}
		if _, err := tx.Code("otp", "p1", subjects[0]); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleted code: err=%v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestThrottleRoundTrip(t *testing.T) {
	db, _ := openFactorDB(t)
	factorView(t, db, func(tx store.Tx) error {
		th, err := tx.Throttle("otp", "p1", "a@example.com")
		if err != nil || th == nil || len(th.Sends) != 0 || !th.KeepUntil.IsZero() {
			return fmt.Errorf("unknown history: %+v, %v; want an empty one", th, err)
		}
		return nil
	})
	histories := map[string]*store.Throttle{
		"a@example.com": {Sends: []time.Time{ft0, ft0.Add(time.Second)}},
		"ext:x\x00y":    {Sends: []time.Time{{}, ft0}, KeepUntil: ft0.Add(24 * time.Hour)},
	}
	factorUpdate(t, db, func(tx store.Tx) error {
		for s, th := range histories {
			if err := tx.PutThrottle("email_fail", "p1", s, th); err != nil {
				return err
			}
		}
		return nil
	})
	factorUpdate(t, db, func(tx store.Tx) error {
		for s, want := range histories {
			got, err := tx.Throttle("email_fail", "p1", s)
			if err != nil {
				return err
			}
			if err := diffFactor("history", got, want); err != nil {
				return err
			}
		}
		// Without sends, the history is deleted.
		if err := tx.PutThrottle("email_fail", "p1", "a@example.com", &store.Throttle{KeepUntil: ft0}); err != nil {
			return err
		}
		got, err := tx.Throttle("email_fail", "p1", "a@example.com")
		if err != nil || len(got.Sends) != 0 || !got.KeepUntil.IsZero() {
			return fmt.Errorf("emptied history: %+v, %v", got, err)
		}
		n, err := tx.ExpiringCount(store.ExpiringCodes)
		if err != nil || n != 1 {
			return fmt.Errorf("ExpiringCount(codes)=%d, %v; want 1", n, err)
		}
		return nil
	})
}

// TestThrottleConcurrentFailures: 20 requests count a failure each on
// one history at once (read, append, write back in one Update, the way
// auth does it): serializable transactions retried on conflict lose
// none, from an absent row and from an existing one.
func TestThrottleConcurrentFailures(t *testing.T) {
	db, _ := openFactorDB(t)
	const n = 20
	for round := 1; round <= 2; round++ {
		var runs atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- db.Update(context.Background(), func(tx store.Tx) error {
					runs.Add(1)
					th, err := tx.Throttle("backup_fail", "p1", "email:a@example.com")
					if err != nil {
						return err
					}
					th.Sends = append(th.Sends, ft0.Add(time.Duration(i)*time.Millisecond))
					return tx.PutThrottle("backup_fail", "p1", "email:a@example.com", th)
				})
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		factorView(t, db, func(tx store.Tx) error {
			th, err := tx.Throttle("backup_fail", "p1", "email:a@example.com")
			if err != nil {
				return err
			}
			if got := len(th.Sends); got != round*n {
				return fmt.Errorf("round %d: %d failures counted, want %d", round, got, round*n)
			}
			return nil
		})
		t.Logf("round %d: %d transaction runs for %d updates", round, runs.Load(), n)
	}
}

func TestMagicLinkRoundTrip(t *testing.T) {
	db, _ := openFactorDB(t)
	links := []*store.MagicLink{
		{Hash: []byte("h1"), ProjectID: "p1", Email: "a@example.com", RedirectURL: "https://app.example.com/x?y=1", CreatedAt: ft0, ExpiresAt: ft0.Add(15 * time.Minute)},
		{Hash: []byte("h2"), ProjectID: "p1", Email: "a@example.com", CreatedAt: ft0, ExpiresAt: ft0.Add(15 * time.Minute), UsedAt: ptrTo(ft0.Add(time.Minute))},
		{Hash: []byte("h3"), ProjectID: "p1", Email: "b@example.com", ExpiresAt: ft0},
		{Hash: []byte("h4"), ProjectID: "p2", Email: "a@example.com", ExpiresAt: ft0},
	}
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, m := range links {
			if err := tx.PutMagicLink(m); err != nil {
				return err
			}
		}
		return nil
	})
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, want := range links {
			got, err := tx.MagicLink(want.Hash)
			if err != nil {
				return err
			}
			if err := diffFactor("link", got, want); err != nil {
				return err
			}
		}
		if _, err := tx.MagicLink([]byte("nope")); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("unknown link: err=%v, want ErrNotFound", err)
		}
		n, err := tx.DeleteMagicLinks("p1", "a@example.com")
		if err != nil || n != 2 {
			return fmt.Errorf("DeleteMagicLinks=%d, %v; want 2", n, err)
		}
		if n, err := tx.DeleteMagicLinks("p1", "a@example.com"); err != nil || n != 0 {
			return fmt.Errorf("DeleteMagicLinks again=%d, %v; want 0", n, err)
		}
		for _, h := range []string{"h3", "h4"} {
			if _, err := tx.MagicLink([]byte(h)); err != nil {
				return fmt.Errorf("link %s of another address or project: %v", h, err)
			}
		}
		return nil
	})
}

func TestFactorRoundTrip(t *testing.T) {
	db, _ := openFactorDB(t)
	factors := []*store.Factor{
		{UserID: "u1", ProjectID: "p1", Kind: "totp", Status: "enrolled", Secret: []byte{1, 2, 3}, LastStep: 1 << 40, Failures: 2,
			LockedUntil: ft0.Add(15 * time.Minute), CreatedAt: ft0, EnrolledAt: ptrTo(ft0.Add(time.Second))},
		{UserID: "u1", ProjectID: "p1", Kind: "sms", Status: "pending", Secret: []byte{}, Phone: "+15551234567", CreatedAt: ft0},
		{UserID: "u2", ProjectID: "p1", Kind: "totp"},
	}
	batches := []*store.BackupCodes{
		{UserID: "u1", ProjectID: "p1", Hashes: [][]byte{{1}, {2}, nil, {}}, Used: []bool{false, true, false, false}, CreatedAt: ft0},
		{UserID: "u2", ProjectID: "p1", Hashes: [][]byte{}, Used: []bool{}},
		{UserID: "u3", ProjectID: "p1"},
	}
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, f := range factors {
			if err := tx.PutFactor(f); err != nil {
				return err
			}
		}
		for _, b := range batches {
			if err := tx.PutBackupCodes(b); err != nil {
				return err
			}
		}
		return nil
	})
	factorView(t, db, func(tx store.Tx) error {
		for _, want := range factors {
			got, err := tx.Factor(want.UserID, want.Kind)
			if err != nil {
				return err
			}
			if err := diffFactor("factor", got, want); err != nil {
				return err
			}
		}
		for _, want := range batches {
			got, err := tx.BackupCodes(want.UserID)
			if err != nil {
				return err
			}
			if err := diffFactor("backup codes", got, want); err != nil {
				return err
			}
		}
		if _, err := tx.Factor("u2", "sms"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("missing factor: err=%v", err)
		}
		if _, err := tx.BackupCodes("u4"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("missing batch: err=%v", err)
		}
		return nil
	})
	// A new batch replaces the old one; a factor is replaced whole.
	nb := &store.BackupCodes{UserID: "u1", ProjectID: "p1", Hashes: [][]byte{{7}}, Used: []bool{false}, CreatedAt: ft0.Add(time.Hour)}
	nf := &store.Factor{UserID: "u1", ProjectID: "p1", Kind: "totp", Status: "pending", CreatedAt: ft0.Add(time.Hour)}
	factorUpdate(t, db, func(tx store.Tx) error {
		if err := tx.PutBackupCodes(nb); err != nil {
			return err
		}
		return tx.PutFactor(nf)
	})
	factorView(t, db, func(tx store.Tx) error {
		b, err := tx.BackupCodes("u1")
		if err != nil {
			return err
		}
		if err := diffFactor("new batch", b, nb); err != nil {
			return err
		}
		f, err := tx.Factor("u1", "totp")
		if err != nil {
			return err
		}
		if err := diffFactor("replaced factor", f, nf); err != nil {
			return err
		}
		return nil
	})
	// The kinds are store.Factor's two.
	err := db.Update(context.Background(), func(tx store.Tx) error {
		return tx.PutFactor(&store.Factor{UserID: "u1", ProjectID: "p1", Kind: "email"})
	})
	if err == nil {
		t.Fatal("a factor of kind email was stored")
	}
}

func TestGrantRoundTrip(t *testing.T) {
	db, _ := openFactorDB(t)
	grants := []*store.Grant{
		{Hash: []byte("g1"), MethodID: "m1", ProjectID: "p1", ExternalUserID: "x", Email: "a@example.com", CreatedAt: ft0, ExpiresAt: ft0.Add(5 * time.Minute)},
		{Hash: []byte("g2"), MethodID: "m1", ProjectID: "p1", ExternalUserID: "x", CreatedAt: ft0, ExpiresAt: ft0.Add(5 * time.Minute), UsedAt: ptrTo(ft0)},
		{Hash: []byte("g3"), MethodID: "m1", ProjectID: "p1", ExternalUserID: "y"},
		{Hash: []byte("g4"), MethodID: "m2", ProjectID: "p2", ExternalUserID: "x"},
	}
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, g := range grants {
			if err := tx.PutGrant(g); err != nil {
				return err
			}
		}
		return nil
	})
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, want := range grants {
			got, err := tx.Grant(want.Hash)
			if err != nil {
				return err
			}
			if err := diffFactor("grant", got, want); err != nil {
				return err
			}
		}
		if _, err := tx.Grant([]byte("nope")); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("unknown grant: err=%v", err)
		}
		if n, err := tx.DeleteGrants("p1", "x"); err != nil || n != 2 {
			return fmt.Errorf("DeleteGrants=%d, %v; want 2", n, err)
		}
		for _, h := range []string{"g3", "g4"} {
			if _, err := tx.Grant([]byte(h)); err != nil {
				return fmt.Errorf("grant %s: %v", h, err)
			}
		}
		return nil
	})
}

func TestPasskeys(t *testing.T) {
	db, _ := openFactorDB(t)
	// Credential bytes are kept as given (whitespace too, which a JSON
	// column would lose).
	cred := json.RawMessage("{ \"publicKey\" : \"AQID\",\n \"signCount\": 1 }")
	keys := []*store.Passkey{
		{ID: "c", UserID: "u1", ProjectID: "p1", Credential: cred, CreatedAt: ft0, LastUsedAt: ptrTo(ft0.Add(time.Hour))},
		{ID: "b", UserID: "u1", ProjectID: "p1", Credential: cred, CreatedAt: ft0},
		{ID: "a", UserID: "u1", ProjectID: "p1", Credential: cred, CreatedAt: ft0.Add(time.Nanosecond)},
		{ID: "z", UserID: "u1", ProjectID: "p1"}, // the zero time sorts first
		{ID: "a", UserID: "u1", ProjectID: "p2", Credential: cred, CreatedAt: ft0},
		{ID: "d", UserID: "u2", ProjectID: "p1", Credential: json.RawMessage{}, CreatedAt: ft0},
	}
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, pk := range keys {
			if err := tx.PutPasskey(pk); err != nil {
				return err
			}
		}
		return nil
	})
	factorView(t, db, func(tx store.Tx) error {
		for _, want := range keys {
			got, err := tx.Passkey(want.ProjectID, want.ID)
			if err != nil {
				return err
			}
			if err := diffFactor("passkey", got, want); err != nil {
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
		if err := diffFactor("u1's passkeys in p1", ids, []string{"z", "b", "c", "a"}); err != nil {
			return err
		}
		if err := diffFactor("first listed", list[2], keys[0]); err != nil {
			return err
		}
		none, err := tx.UserPasskeys("p1", "u3")
		if err != nil || none == nil || len(none) != 0 {
			return fmt.Errorf("UserPasskeys of a user without any = %#v, %v; want an empty non-nil slice", none, err)
		}
		return nil
	})
	factorUpdate(t, db, func(tx store.Tx) error {
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
		l1, err := tx.UserPasskeys("p1", "u1")
		if err != nil {
			return err
		}
		l2, err := tx.UserPasskeys("p1", "u2")
		if err != nil {
			return err
		}
		if len(l1) != 2 || len(l2) != 2 {
			return fmt.Errorf("after move and delete: u1 has %d, u2 %d; want 2 and 2", len(l1), len(l2))
		}
		return nil
	})
}

func TestChallengeRoundTrip(t *testing.T) {
	db, _ := openFactorDB(t)
	chs := []*store.Challenge{
		{ID: "c1", ProjectID: "p1", Kind: "register", UserID: "u1", Email: "a@example.com", Session: json.RawMessage(`{"challenge":"x", "a": [1, 2]}`), ExpiresAt: ft0},
		{ID: "c2", ProjectID: "p1", Kind: "login"},
	}
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, c := range chs {
			if err := tx.PutChallenge(c); err != nil {
				return err
			}
		}
		return nil
	})
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, want := range chs {
			got, err := tx.Challenge(want.ID)
			if err != nil {
				return err
			}
			if err := diffFactor("challenge", got, want); err != nil {
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
		return nil
	})
}

func TestExternalMethods(t *testing.T) {
	db, _ := openFactorDB(t)
	ms := []*store.ExternalMethod{
		{ID: "m3", ProjectID: "p1", Method: "bank", Pattern: "webhook", Status: "active", Secret: []byte{1}, CreatedAt: ft0},
		{ID: "m2", ProjectID: "p1", Method: "bank", Pattern: "redirect", Status: "inactive", Secret: []byte{2}, CreatedAt: ft0},
		{ID: "m1", ProjectID: "p1", Method: "kiosk", Pattern: "webhook", Status: "active", CreatedAt: ft0.Add(time.Second)},
		{ID: "m4", ProjectID: "p2", Method: "bank", Pattern: "webhook", Status: "active", Secret: []byte{}, CreatedAt: ft0},
	}
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, m := range ms {
			if err := tx.PutExternalMethod(m); err != nil {
				return err
			}
		}
		return nil
	})
	factorView(t, db, func(tx store.Tx) error {
		for _, want := range ms {
			got, err := tx.ExternalMethod(want.ID)
			if err != nil {
				return err
			}
			if err := diffFactor("method", got, want); err != nil {
				return err
			}
		}
		got, err := tx.ExternalMethodByName("p1", "bank")
		if err != nil {
			return err
		}
		if err := diffFactor("by name (lowest id)", got, ms[1]); err != nil {
			return err
		}
		if _, err := tx.ExternalMethodByName("p2", "kiosk"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("another project's name: err=%v", err)
		}
		list, err := tx.ExternalMethods("p1")
		if err != nil {
			return err
		}
		if err := diffFactor("p1's methods", list, []*store.ExternalMethod{ms[1], ms[0], ms[2]}); err != nil {
			return err
		}
		if list, err := tx.ExternalMethods("p3"); err != nil || list != nil {
			return fmt.Errorf("ExternalMethods of a project without any = %#v, %v; want nil", list, err)
		}
		ids, err := postgres.ProjectMethodIDs(tx, "p1")
		if err != nil {
			return err
		}
		if err := diffFactor("projectMethodIDs", ids, []string{"m1", "m2", "m3"}); err != nil {
			return err
		}
		return nil
	})
}

// factorRows counts, per table of the domain, the rows whose text
// columns name s.
func factorRows(t *testing.T, url, s string) map[string]int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	out := map[string]int{}
	for _, table := range []string{"codes", "throttles", "magic_links", "factors", "backup_codes", "external_methods", "grants", "passkeys", "challenges"} {
		var n int
		q := fmt.Sprintf(`SELECT count(*) FROM %s r WHERE strpos(r::text, $1) > 0`, table)
		if err := conn.QueryRow(ctx, q, s).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			out[table] = n
		}
	}
	return out
}

// fillFactorProject writes rows of every kind of the domain for project
// p-<name>, every id naming name.
func fillFactorProject(t *testing.T, db store.DB, name string) {
	t.Helper()
	later := ft0.Add(time.Hour)
	pid, uid, mid := "p-"+name, "u-"+name, "m-"+name
	factorUpdate(t, db, func(tx store.Tx) error {
		for _, err := range []error{
			tx.PutFactor(&store.Factor{UserID: uid, ProjectID: pid, Kind: "totp", Status: "enrolled", CreatedAt: ft0}),
			tx.PutFactor(&store.Factor{UserID: uid, ProjectID: pid, Kind: "sms", Status: "enrolled", Phone: "+15551234567", CreatedAt: ft0}),
			tx.PutBackupCodes(&store.BackupCodes{UserID: uid, ProjectID: pid, Hashes: [][]byte{{1}}, Used: []bool{false}, CreatedAt: ft0}),
			tx.PutPasskey(&store.Passkey{ID: "cred-" + name, UserID: uid, ProjectID: pid, Credential: []byte(`{}`), CreatedAt: ft0}),
			tx.PutChallenge(&store.Challenge{ID: "ch-" + name, ProjectID: pid, Kind: "register", UserID: uid, Session: []byte(`{}`), ExpiresAt: later}),
			tx.PutCode(&store.Code{Kind: "otp", ProjectID: pid, Subject: "pending-" + name + "@example.com", Hash: []byte{1}, ExpiresAt: later}),
			tx.PutCode(&store.Code{Kind: "sms", ProjectID: pid, Subject: uid, Hash: []byte{1}, ExpiresAt: later}),
			tx.PutThrottle("otp", pid, "pending-"+name+"@example.com", &store.Throttle{Sends: []time.Time{ft0}}),
			tx.PutThrottle("backup_fail", pid, uid, &store.Throttle{Sends: []time.Time{ft0}}),
			tx.PutMagicLink(&store.MagicLink{Hash: []byte("link-" + name), ProjectID: pid, Email: "link@example.com", ExpiresAt: later}),
			tx.PutExternalMethod(&store.ExternalMethod{ID: mid, ProjectID: pid, Method: "bank", Pattern: "webhook", Status: "active", CreatedAt: ft0}),
			tx.PutExternalMethod(&store.ExternalMethod{ID: mid + "-2", ProjectID: pid, Method: "kiosk", Pattern: "webhook", Status: "active", CreatedAt: ft0}),
			// Replay marks are scoped by the method id.
			tx.PutCode(&store.Code{Kind: "replay", ProjectID: mid, Subject: "sig", ExpiresAt: later}),
			tx.PutCode(&store.Code{Kind: "replay", ProjectID: mid + "-2", Subject: "sig", ExpiresAt: later}),
			tx.PutGrant(&store.Grant{Hash: []byte("grant-" + name), MethodID: mid, ProjectID: pid, ExternalUserID: "x", ExpiresAt: later}),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// TestDeleteHelpers: deleteUserFactors removes the user's factors,
// backup codes and passkeys; deleteProjectAuthRows everything of the
// domain that names the project or its methods (the methods it is not
// told of too); another project's rows stay.
func TestDeleteHelpers(t *testing.T) {
	db, url := openFactorDB(t)
	fillFactorProject(t, db, "doomed")
	fillFactorProject(t, db, "kept")
	kept := factorRows(t, url, "kept")
	if len(kept) != 9 {
		t.Fatalf("fixture fills %d tables: %v", len(kept), kept)
	}

	factorUpdate(t, db, func(tx store.Tx) error { return postgres.DeleteUserFactors(tx, "u-doomed") })
	got := factorRows(t, url, "doomed")
	for _, table := range []string{"factors", "backup_codes", "passkeys"} {
		if got[table] != 0 {
			t.Fatalf("after deleteUserFactors: %v", got)
		}
	}
	if got["codes"] == 0 || got["challenges"] == 0 {
		t.Fatalf("deleteUserFactors removed more: %v", got)
	}

	// Told of one method only: the other's replay mark goes too.
	fillFactorProject(t, db, "doomed")
	factorUpdate(t, db, func(tx store.Tx) error { return postgres.DeleteProjectAuthRows(tx, "p-doomed", []string{"m-doomed"}) })
	if got := factorRows(t, url, "doomed"); len(got) != 0 {
		t.Fatalf("rows naming the deleted project: %v", got)
	}
	sameFactor(t, "other project's rows", factorRows(t, url, "kept"), kept)
	factorUpdate(t, db, func(tx store.Tx) error { return postgres.DeleteProjectAuthRows(tx, "p-kept", nil) })
	if got := factorRows(t, url, "kept"); len(got) != 0 {
		t.Fatalf("rows naming the deleted project: %v", got)
	}
}

// factorDueAt returns at+d, or the zero time for the zero time.
func factorDueAt(at time.Time, d time.Duration) time.Time {
	if at.IsZero() {
		return at
	}
	return at.Add(d)
}

// TestFactorExpiry: each kind is due at its time, not a nanosecond
// before; a rewrite moves it; the sweep deletes it at its time; a zero
// expiry is due at once.
func TestFactorExpiry(t *testing.T) {
	cases := []struct {
		kind store.Expiring
		due  time.Time
		put  func(tx store.Tx, at time.Time) error
		live func(tx store.Tx) bool
	}{
		{store.ExpiringCodes, ft0.Add(10 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutCode(&store.Code{Kind: "otp", ProjectID: "p", Subject: "a@example.com", Hash: []byte{1}, CreatedAt: ft0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.Code("otp", "p", "a@example.com"); return err == nil }},
		{store.ExpiringCodes, ft0.Add(2 * time.Hour), func(tx store.Tx, at time.Time) error {
			return tx.PutThrottle("otp", "p", "b@example.com", &store.Throttle{Sends: []time.Time{ft0, factorDueAt(at, -store.ThrottleIdle)}})
		}, func(tx store.Tx) bool { th, _ := tx.Throttle("otp", "p", "b@example.com"); return len(th.Sends) == 2 }},
		{store.ExpiringCodes, ft0.Add(25 * time.Hour), func(tx store.Tx, at time.Time) error {
			return tx.PutThrottle("email_fail", "p", "c@example.com", &store.Throttle{Sends: []time.Time{factorDueAt(at, -24*time.Hour)}, KeepUntil: factorDueAt(at, -store.ThrottleIdle)})
		}, func(tx store.Tx) bool {
			th, _ := tx.Throttle("email_fail", "p", "c@example.com")
			return len(th.Sends) == 1
		}},
		{store.ExpiringMagicLinks, ft0.Add(15 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutMagicLink(&store.MagicLink{Hash: []byte("h1"), ProjectID: "p", Email: "a@example.com", CreatedAt: ft0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.MagicLink([]byte("h1")); return err == nil }},
		{store.ExpiringChallenges, ft0.Add(5 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutChallenge(&store.Challenge{ID: "c1", ProjectID: "p", Kind: "login", Session: []byte(`{}`), ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.Challenge("c1"); return err == nil }},
		{store.ExpiringGrants, ft0.Add(5 * time.Minute), func(tx store.Tx, at time.Time) error {
			return tx.PutGrant(&store.Grant{Hash: []byte("g1"), ProjectID: "p", ExternalUserID: "x", CreatedAt: ft0, ExpiresAt: at})
		}, func(tx store.Tx) bool { _, err := tx.Grant([]byte("g1")); return err == nil }},
	}
	db, _ := openFactorDB(t)
	for _, c := range cases {
		t.Run(fmt.Sprint(c.kind, "/", c.due.Sub(ft0)), func(t *testing.T) {
			factorUpdate(t, db, func(tx store.Tx) error { return c.put(tx, c.due.Add(-24*time.Hour)) })
			factorUpdate(t, db, func(tx store.Tx) error { return c.put(tx, c.due) })
			before := c.due.Add(-time.Nanosecond)
			factorView(t, db, func(tx store.Tx) error {
				early, err := tx.ExpiryDue(c.kind, before)
				if err != nil {
					return err
				}
				onTime, err := tx.ExpiryDue(c.kind, c.due)
				if err != nil {
					return err
				}
				if early || !onTime {
					return fmt.Errorf("ExpiryDue(before)=%v, ExpiryDue(due)=%v", early, onTime)
				}
				if n, err := tx.ExpiringCount(c.kind); err != nil || n != 1 {
					return fmt.Errorf("ExpiringCount=%d, %v; want 1", n, err)
				}
				return nil
			})
			factorUpdate(t, db, func(tx store.Tx) error {
				if n, err := tx.SweepExpired(c.kind, before, 100); err != nil || n != 0 {
					return fmt.Errorf("swept %d (%v) a nanosecond early", n, err)
				}
				if !c.live(tx) {
					return errors.New("row gone before its time")
				}
				if n, err := tx.SweepExpired(c.kind, c.due, 100); err != nil || n != 1 {
					return fmt.Errorf("swept %d (%v) at its time, want 1", n, err)
				}
				if c.live(tx) {
					return errors.New("row still there after the sweep")
				}
				return nil
			})
			// Due at the zero time: at once, whatever the time.
			factorUpdate(t, db, func(tx store.Tx) error { return c.put(tx, time.Time{}) })
			factorUpdate(t, db, func(tx store.Tx) error {
				n, err := tx.SweepExpired(c.kind, ft0.Add(-100*365*24*time.Hour), 100)
				if err == nil && n != 1 {
					return fmt.Errorf("swept %d rows due at the zero time, want 1", n)
				}
				return err
			})
		})
	}
	// The sweep takes at most max rows, earliest due first.
	factorUpdate(t, db, func(tx store.Tx) error {
		for i := range 5 {
			if err := tx.PutChallenge(&store.Challenge{ID: fmt.Sprint("c", 5-i), ProjectID: "p", Kind: "login", ExpiresAt: ft0.Add(time.Duration(i) * time.Second)}); err != nil {
				return err
			}
		}
		n, err := tx.SweepExpired(store.ExpiringChallenges, ft0.Add(time.Hour), 2)
		if err != nil || n != 2 {
			return fmt.Errorf("SweepExpired(max 2)=%d, %v", n, err)
		}
		for _, id := range []string{"c5", "c4"} {
			if _, err := tx.Challenge(id); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("challenge %s, due first, not swept: %v", id, err)
			}
		}
		return nil
	})
}

// TestFactorWritesInView: a write in a View fails.
func TestFactorWritesInView(t *testing.T) {
	db, _ := openFactorDB(t)
	err := db.View(context.Background(), func(tx store.Tx) error {
		return tx.PutCode(&store.Code{Kind: "otp", ProjectID: "p", Subject: "a@example.com"})
	})
	if err == nil {
		t.Fatal("PutCode in a View succeeded")
	}
}

// TestFactorPlans: with enough rows for the planner to care, no
// statement of the domain, nor the sweep's on its tables, reads a table
// whole, planned for its values or generically.
func TestFactorPlans(t *testing.T) {
	_, url := openFactorDB(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const n = 20000
	fill := []string{
		`INSERT INTO codes (project_id, kind, subject, phone, email, hash, attempts, created_at, expires_at)
			SELECT 'p' || (i % 1000), 'otp', convert_to(i || '@example.com', 'UTF8'), '', '', '\x01', 0, i, 1e12 + i FROM generate_series(1, $1) i`,
		`INSERT INTO throttles (project_id, kind, subject, sends, keep_until, due)
			SELECT 'p' || (i % 1000), 'otp', convert_to(i || '@example.com', 'UTF8'), ARRAY[i::bigint], NULL, 1e12 + i FROM generate_series(1, $1) i`,
		`INSERT INTO magic_links (hash, project_id, email, redirect_url, created_at, expires_at)
			SELECT convert_to('h' || i, 'UTF8'), 'p' || (i % 1000), i || '@example.com', '', i, 1e12 + i FROM generate_series(1, $1) i`,
		`INSERT INTO factors (user_id, kind, project_id, status, phone, last_step, failures)
			SELECT 'u' || i, 'totp', 'p' || (i % 1000), 'enrolled', '', 0, 0 FROM generate_series(1, $1) i`,
		`INSERT INTO backup_codes (user_id, project_id, hashes, used)
			SELECT 'u' || i, 'p' || (i % 1000), ARRAY['\x01'::bytea], ARRAY[false] FROM generate_series(1, $1) i`,
		`INSERT INTO external_methods (id, project_id, method, pattern, status, created_at)
			SELECT 'm' || i, 'p' || (i % 5000), 'bank' || i, 'webhook', 'active', i FROM generate_series(1, $1) i`,
		`INSERT INTO grants (hash, method_id, project_id, external_user_id, email, expires_at)
			SELECT convert_to('g' || i, 'UTF8'), 'm1', 'p' || (i % 1000), 'x' || i, '', 1e12 + i FROM generate_series(1, $1) i`,
		`INSERT INTO passkeys (project_id, id, user_id, credential, created_at)
			SELECT 'p' || (i % 1000), 'cred' || i, 'u' || (i % 5000), '\x7b7d', i FROM generate_series(1, $1) i`,
		`INSERT INTO challenges (id, project_id, kind, user_id, email, expires_at)
			SELECT 'c' || i, 'p' || (i % 1000), 'login', '', '', 1e12 + i FROM generate_series(1, $1) i`,
	}
	for _, q := range fill {
		if _, err := conn.Exec(ctx, q, n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := conn.Exec(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	b, u := []byte("h7"), "u7"
	args := map[string][]any{
		"Code":                  {"p7", "otp", []byte("7@example.com")},
		"PutCode":               {"p7", "otp", []byte("7@example.com"), "", "", b, 0, 1, 2},
		"DeleteCode":            {"p7", "otp", []byte("7@example.com")},
		"Throttle":              {"p7", "otp", []byte("7@example.com")},
		"PutThrottle":           {"p7", "otp", []byte("7@example.com"), []int64{1}, nil, 2},
		"DeleteThrottle":        {"p7", "otp", []byte("7@example.com")},
		"MagicLink":             {b},
		"PutMagicLink":          {b, "p7", "7@example.com", "", 1, 2, nil},
		"DeleteMagicLinks":      {"p7", "7@example.com"},
		"Factor":                {u, "totp"},
		"PutFactor":             {u, "totp", "p7", "enrolled", nil, "", 0, 0, nil, 1, nil, "factors"},
		"BackupCodes":           {u},
		"PutBackupCodes":        {u, "p7", [][]byte{b}, []bool{false}, 1},
		"Grant":                 {b},
		"PutGrant":              {b, "m1", "p7", "x7", "", 1, 2, nil},
		"DeleteGrants":          {"p7", "x7"},
		"DeleteUserFactors":     {[]string{u, "u8"}},
		"Passkey":               {"p7", "cred7"},
		"PutPasskey":            {"p7", "cred7", u, []byte("{}"), 1, nil},
		"DeletePasskey":         {"p7", "cred7"},
		"UserPasskeys":          {u, "p7"},
		"Challenge":             {"c7"},
		"PutChallenge":          {"c7", "p7", "login", "", "", []byte("{}"), 1},
		"DeleteChallenge":       {"c7"},
		"ExternalMethod":        {"m7"},
		"ExternalMethodByName":  {"p7", "bank7"},
		"ExternalMethods":       {"p7"},
		"PutExternalMethod":     {"m7", "p7", "bank7", "webhook", "active", nil, 1},
		"ProjectMethodIDs":      {"p7"},
		"DeleteProjectAuthRows": {"p7", []string{"m7"}},
	}
	stmts := map[string]string{}
	for name, q := range postgres.FactorStatements {
		stmts[name] = q
	}
	// The generic sweep's statements (expiry.go) on the domain's tables.
	for _, table := range []string{"codes", "throttles", "magic_links", "grants", "challenges"} {
		stmts["ExpiryDue/"+table] = `SELECT coalesce(min(due) <= $1, false) FROM ` + table
		args["ExpiryDue/"+table] = []any{int64(1e12 + 10)}
		stmts["SweepExpired/"+table] = `DELETE FROM ` + table + ` WHERE ctid = ANY (ARRAY(
			SELECT ctid FROM ` + table + ` WHERE due <= $1 ORDER BY due LIMIT $2))`
		args["SweepExpired/"+table] = []any{int64(1e12 + 10), 1000}
	}
	// Each statement as PostgreSQL plans it for its values (custom) and
	// as a prepared statement may end up planned once for any values
	// (generic: pgx prepares every statement it runs).
	i := 0
	for name, q := range stmts {
		a, ok := args[name]
		if !ok {
			t.Errorf("%s: no arguments to explain it with", name)
			continue
		}
		i++
		ps := fmt.Sprint("factors_q", i)
		if _, err := conn.Exec(ctx, "PREPARE "+ps+" AS "+q); err != nil {
			t.Errorf("%s: PREPARE: %v", name, err)
			continue
		}
		params := make([]string, len(a))
		for j, v := range a {
			params[j] = sqlLiteral(t, v)
		}
		for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
			if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
				t.Fatal(err)
			}
			rows, err := conn.Query(ctx, "EXPLAIN EXECUTE "+ps+" ("+strings.Join(params, ", ")+")")
			if err != nil {
				t.Errorf("%s (%s): %v", name, mode, err)
				continue
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Errorf("%s (%s): %v", name, mode, err)
				continue
			}
			plan := strings.Join(lines, "\n")
			if strings.Contains(plan, "Seq Scan") {
				t.Errorf("%s (%s) reads a table whole:\n%s", name, mode, plan)
			}
		}
	}
}

// sqlLiteral returns v, an argument of a statement, as an SQL literal
// (EXECUTE takes no parameters).
func sqlLiteral(t *testing.T, v any) string {
	t.Helper()
	list := func(typ string, n int, elem func(i int) string) string {
		out := make([]string, n)
		for i := range out {
			out[i] = elem(i)
		}
		return "ARRAY[" + strings.Join(out, ", ") + "]::" + typ + "[]"
	}
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'"
	case []byte:
		return fmt.Sprintf(`'\\x%x'::bytea`, v)
	case int, int64:
		return fmt.Sprint(v)
	case []int64:
		return list("bigint", len(v), func(i int) string { return fmt.Sprint(v[i]) })
	case []bool:
		return list("boolean", len(v), func(i int) string { return fmt.Sprint(v[i]) })
	case []string:
		return list("text", len(v), func(i int) string { return sqlLiteral(t, v[i]) })
	case [][]byte:
		return list("bytea", len(v), func(i int) string { return sqlLiteral(t, v[i]) })
	}
	t.Fatalf("no SQL literal for %T", v)
	return ""
}
