package bolt

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"latchkey/store"
)

// fillProject writes one row of every kind that belongs to project p
// ("p-<name>"); every id it makes contains name, so a scan can tell the
// project's rows apart.
func fillProject(t *testing.T, tx txn, name string) {
	t.Helper()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	later := now.Add(time.Hour)
	pid, uid, mid, wid := "p-"+name, "u-"+name, "m-"+name, "w-"+name
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tx.PutProject(&store.Project{ID: pid, Name: name, CreatedAt: now}))
	u := &store.User{ID: uid, ProjectID: pid, Email: name + "@example.com", ExternalUserID: "ext-" + name, CreatedAt: now}
	must(tx.PutUser(u))
	must(tx.PutSession(&store.Session{ID: "s-" + name, UserID: uid, ProjectID: pid, IssuedAt: now, ExpiresAt: later}))
	must(tx.PutFactor(&store.Factor{UserID: uid, ProjectID: pid, Kind: "totp", Status: "enrolled", CreatedAt: now}))
	must(tx.PutFactor(&store.Factor{UserID: uid, ProjectID: pid, Kind: "sms", Status: "enrolled", Phone: "+15551234567", CreatedAt: now}))
	must(tx.PutBackupCodes(&store.BackupCodes{UserID: uid, ProjectID: pid, Hashes: [][]byte{{1}}, Used: []bool{false}, CreatedAt: now}))
	must(tx.PutPasskey(&store.Passkey{ID: "cred-" + name, UserID: uid, ProjectID: pid, Credential: []byte(`{}`), CreatedAt: now}))
	must(tx.PutIdentity(&store.Identity{ProjectID: pid, Issuer: "https://idp.example", Subject: "sub-" + name, UserID: uid, Provider: "corp", CreatedAt: now}))
	// A link whose user row is gone.
	must(tx.PutIdentity(&store.Identity{ProjectID: pid, Issuer: "https://idp.example", Subject: "orphan-" + name, UserID: "u-gone-" + name, CreatedAt: now}))
	must(tx.PutChallenge(&store.Challenge{ID: "ch-" + name, ProjectID: pid, Kind: "register", UserID: uid, Session: []byte(`{}`), ExpiresAt: later}))
	must(tx.PutOAuthFlow(&store.OAuthFlow{ID: "of-" + name, ProjectID: pid, Kind: store.OAuthFlowState, Payload: []byte(`{}`), ExpiresAt: later}))
	must(tx.PutCode(&store.Code{Kind: "otp", ProjectID: pid, Subject: "pending-" + name + "@example.com", Hash: []byte{1}, ExpiresAt: later}))
	must(tx.PutCode(&store.Code{Kind: "sms", ProjectID: pid, Subject: uid, Hash: []byte{1}, ExpiresAt: later}))
	must(tx.PutThrottle("otp", pid, "pending-"+name+"@example.com", &store.Throttle{Sends: []time.Time{now}}))
	must(tx.PutThrottle("backup_fail", pid, uid, &store.Throttle{Sends: []time.Time{now}}))
	must(tx.PutMagicLink(&store.MagicLink{Hash: []byte("link-" + name), ProjectID: pid, Email: "link@example.com", ExpiresAt: later}))
	must(tx.PutDevice(&store.Device{Key: []byte("dev-" + name), Hash: []byte{1}, UserID: uid, ProjectID: pid, CreatedAt: now}))
	must(tx.PutExternalMethod(&store.ExternalMethod{ID: mid, ProjectID: pid, Method: "bank", Pattern: "webhook", Status: "active", CreatedAt: now}))
	// Replay marks are scoped by the method id, not the project id.
	must(tx.PutCode(&store.Code{Kind: "replay", ProjectID: mid, Subject: "sig", ExpiresAt: later}))
	must(tx.PutGrant(&store.Grant{Hash: []byte("grant-" + name), MethodID: mid, ProjectID: pid, ExternalUserID: "x", ExpiresAt: later}))
	must(tx.PutWebhook(&store.Webhook{ID: wid, ProjectID: pid, URL: "http://127.0.0.1/", CreatedAt: now}))
	must(tx.EnqueueJob(&store.Job{WebhookID: wid, ProjectID: pid, EventID: "evt", NextAttemptAt: now}))
	must(tx.AddDelivery(&store.Delivery{ID: "d-" + name, WebhookID: wid, EventID: "evt", Attempt: 1, Status: "failed"}))
	must(tx.AddOIDCKey(&store.OIDCKey{ProjectID: pid, ID: "kid-" + name, Alg: "RS256", CreatedAt: now}))
	must(tx.PutOIDCClient(&store.OIDCClient{ProjectID: pid, ID: "client-" + name, Name: name, CreatedAt: now}))
	must(tx.PutAPIKey(&store.APIKey{Prefix: "sk_test_" + name, Hash: []byte{1}, ProjectID: pid, Mode: "test", CreatedAt: now}))
	// History and already promised messages.
	must(tx.AddAuthEvent(&store.AuthEvent{ID: "ev-" + name, ProjectID: pid, UserID: uid, CreatedAt: now}))
	must(tx.AppendEvent(&store.Event{ID: "evt_" + name, ProjectID: pid, Type: "user.registered", CreatedAt: now, Data: []byte(`{}`)}))
	must(tx.EnqueueMail(&store.Mail{ProjectID: pid, To: "pending-" + name + "@example.com", Kind: "otp", CreatedAt: now}))
}

// mentions counts, per bucket, the rows whose key or value contains s.
func mentions(tx txn, s string) map[string]int {
	out := map[string]int{}
	for _, name := range allBuckets {
		tx.bucket(name).ForEach(func(k, v []byte) error {
			if bytes.Contains(k, []byte(s)) || bytes.Contains(v, []byte(s)) {
				out[string(name)]++
			}
			return nil
		})
	}
	return out
}

// TestDeleteProjectRemovesItsRows: after DeleteProject nothing in the
// file names the project, its user, method or webhook except the kept
// history (authentication events, their index and counters), the outbox
// and the mail queue; its
// key is detached; another project's rows are untouched.
func TestDeleteProjectRemovesItsRows(t *testing.T) {
	t.Parallel()
	db, _, err := openDB(filepath.Join(t.TempDir(), "d.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.updateTx(func(tx txn) error {
		fillProject(t, tx, "doomed")
		fillProject(t, tx, "kept")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var keptBefore map[string]int
	db.viewTx(func(tx txn) error { keptBefore = mentions(tx, "kept"); return nil })
	if len(keptBefore) < 15 {
		t.Fatalf("fixture touches only %d buckets: %v", len(keptBefore), keptBefore)
	}

	var detached []string
	err = db.updateTx(func(tx txn) error {
		var err error
		detached, err = tx.DeleteProject("p-doomed")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(detached) != 1 || detached[0] != "sk_test_doomed" {
		t.Fatalf("detached=%v, want [sk_test_doomed]", detached)
	}
	db.viewTx(func(tx txn) error {
		got := mentions(tx, "doomed")
		// The event is kept with its index entry and its counters (the
		// hour's and the project's total).
		want := map[string]int{"events": 1, "events_by_scope": 1, "event_counts": 2, "outbox": 1, "mail": 1, "keys": 1}
		if len(got) != len(want) {
			t.Fatalf("rows naming the deleted project: %v, want only %v", got, want)
		}
		for b, n := range want {
			if got[b] != n {
				t.Fatalf("rows naming the deleted project: %v, want only %v", got, want)
			}
		}
		k, err := tx.APIKey("sk_test_doomed")
		if err != nil || k.ProjectID != "" {
			t.Fatalf("key=%+v err=%v, want kept without a project", k, err)
		}
		if keptAfter := mentions(tx, "kept"); !equalCounts(keptAfter, keptBefore) {
			t.Fatalf("other project's rows changed: %v, were %v", keptAfter, keptBefore)
		}
		return nil
	})
	err = db.updateTx(func(tx txn) error {
		_, err := tx.DeleteProject("p-doomed")
		return err
	})
	if err != store.ErrNotFound {
		t.Fatalf("second delete: err=%v, want ErrNotFound", err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// BenchmarkDeleteProject deletes a project of 10,000 users, each with a
// session, a factor, a pending code and a device, beside another
// project of the same size (whose rows the scans must pass over).
func BenchmarkDeleteProject(b *testing.B) {
	const users = 10000
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		db, _, err := openDB(filepath.Join(b.TempDir(), "d.db"), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for _, pid := range []string{"p-doomed", "p-kept"} {
			err = db.updateTx(func(tx txn) error {
				if err := tx.PutProject(&store.Project{ID: pid, CreatedAt: now}); err != nil {
					return err
				}
				for n := 0; n < users; n++ {
					uid := pid + "-u" + strconv.Itoa(n)
					email := strconv.Itoa(n) + "@example.com"
					for _, err := range []error{
						tx.PutUser(&store.User{ID: uid, ProjectID: pid, Email: email, CreatedAt: now}),
						tx.PutSession(&store.Session{ID: uid + "-s", UserID: uid, ProjectID: pid, IssuedAt: now, ExpiresAt: now}),
						tx.PutFactor(&store.Factor{UserID: uid, ProjectID: pid, Kind: "totp", CreatedAt: now}),
						tx.PutCode(&store.Code{Kind: "otp", ProjectID: pid, Subject: email, Hash: make([]byte, 32), ExpiresAt: now}),
						tx.PutDevice(&store.Device{Key: []byte(uid + "-d"), Hash: make([]byte, 32), UserID: uid, ProjectID: pid, CreatedAt: now}),
					} {
						if err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		err = db.updateTx(func(tx txn) error {
			_, err := tx.DeleteProject("p-doomed")
			return err
		})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}
