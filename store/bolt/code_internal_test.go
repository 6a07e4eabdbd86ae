package bolt

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// TestMigrateCodes: a version 3 file keeps pending codes beside their
// send histories (kind NUL project NUL subject); opening it moves each
// code, with its expiry index entry, to its key at the start of the
// bucket (codeKey), leaves the histories where they are, and sweeps and
// project deletion find both afterwards.
func TestMigrateCodes(t *testing.T) {
	t.Parallel()
	old := func(kind, project, subject string) []byte { return compound(kind, project, subject) }
	codes := []store.Code{
		{Kind: "otp", ProjectID: "p", Subject: "a@example.com", Hash: []byte{1}, ExpiresAt: t0.Add(time.Minute)},
		{Kind: "otp", ProjectID: "q", Subject: "b@example.com", Hash: []byte{2}, ExpiresAt: t0.Add(2 * time.Minute)},
		{Kind: "replay", ProjectID: "p", Subject: "r1", ExpiresAt: t0.Add(3 * time.Minute)},
	}
	history := store.Throttle{Sends: []time.Time{t0}}
	db := upgraded(t, 3, nil, func(btx *bbolt.Tx) error {
		raw, _ := json.Marshal(store.Project{ID: "q", Name: "q"})
		btx.Bucket(bucketProjects).Put([]byte("q"), raw)
		for _, c := range codes {
			k := old(c.Kind, c.ProjectID, c.Subject)
			btx.Bucket(bucketCodes).Put(k, encodeCode(&c))
			btx.Bucket(bucketCodesExpiry).Put(dueKey(c.ExpiresAt, k), nil)
		}
		k := throttleKey("otp", "p", "a@example.com")
		btx.Bucket(bucketCodes).Put(k, encodeThrottle(&history))
		return btx.Bucket(bucketCodesExpiry).Put(dueKey(throttleDue(&history), k), nil)
	})
	db.viewTx(func(tx txn) error {
		if v := getU64(tx.bucket(bucketMeta).Get(keySchema)); v != SchemaVersion {
			t.Fatalf("schema %d after the upgrade, want %d", v, SchemaVersion)
		}
		for _, c := range codes {
			got, err := tx.Code(c.Kind, c.ProjectID, c.Subject)
			if err != nil || !bytes.Equal(got.Hash, c.Hash) || !got.ExpiresAt.Equal(c.ExpiresAt) {
				t.Fatalf("code %s/%s reads %+v, %v", c.Kind, c.Subject, got, err)
			}
			if tx.bucket(bucketCodes).Get(old(c.Kind, c.ProjectID, c.Subject)) != nil {
				t.Fatalf("code %s/%s left at its old key", c.Kind, c.Subject)
			}
		}
		got, err := tx.Throttle("otp", "p", "a@example.com")
		if err != nil || len(got.Sends) != 1 || !got.Sends[0].Equal(t0) {
			t.Fatalf("history reads %+v, %v", got, err)
		}
		// Every index entry names a row, codes first (due first).
		var named [][]byte
		tx.bucket(bucketCodesExpiry).ForEach(func(k, _ []byte) error {
			named = append(named, clone(k[8:]))
			return nil
		})
		if len(named) != 4 || named[0][0] != 0 || named[1][0] != 0 || named[2][0] != 0 {
			t.Fatalf("index entries %q, want the three codes' new keys, then the history", named)
		}
		for _, k := range named {
			if tx.bucket(bucketCodes).Get(k) == nil {
				t.Fatalf("index entry %q names no row", k)
			}
		}
		return nil
	})
	// Project q goes with its code; the sweep then finds p's code and
	// replay mark at their due times, and the history at its own.
	mustTx(t, db, func(tx txn) error { _, err := tx.DeleteProject("q"); return err })
	if got := sweepAll(t, db, store.ExpiringCodes, t0.Add(3*time.Minute), 100); len(got) != 1 || got[0] != 2 {
		t.Fatalf("swept %v at +3m, want [2] (p's code and replay mark)", got)
	}
	if n := count(db, bucketCodes); n != 1 {
		t.Fatalf("%d rows left in codes, want the history", n)
	}
	if got := sweepAll(t, db, store.ExpiringCodes, throttleDue(&history), 100); len(got) != 1 || got[0] != 1 {
		t.Fatalf("swept %v at the history's due time, want [1]", got)
	}
}
