package bolt

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// TestMigrateOIDCSessionGrants: a version 5 file has OpenID grants but
// no index of them by session; opening it indexes each under its
// session, so OIDCSessionGrants finds them, and the sweep takes them out
// of the index afterwards.
func TestMigrateOIDCSessionGrants(t *testing.T) {
	t.Parallel()
	grants := []*store.OIDCGrant{
		{ProjectID: "p", ID: "g1", ClientID: "c1", UserID: "u1", SessionID: "s1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
		{ProjectID: "p", ID: "g2", ClientID: "c2", UserID: "u1", SessionID: "s1", CreatedAt: t0, ExpiresAt: t0.Add(2 * time.Hour)},
		{ProjectID: "p", ID: "g3", ClientID: "c1", UserID: "u2", SessionID: "s2", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)},
	}
	// Version 5 had none of these indexes.
	db := upgraded(t, 5, [][]byte{bucketOIDCSessionGrants, bucketOIDCUserGrants, bucketOIDCClientGrants}, func(btx *bbolt.Tx) error {
		for _, g := range grants {
			v, _ := json.Marshal(g)
			key := compound(g.ProjectID, g.ID)
			btx.Bucket(bucketOIDCGrants).Put(key, v)
			btx.Bucket(bucketOIDCGrantsExpiry).Put(dueKey(g.ExpiresAt, key), nil)
		}
		return nil
	})
	ids := func(sid string) []string {
		var out []string
		db.viewTx(func(tx txn) error {
			if v := getU64(tx.bucket(bucketMeta).Get(keySchema)); v != SchemaVersion {
				t.Fatalf("schema %d after the upgrade, want %d", v, SchemaVersion)
			}
			gs, err := tx.OIDCSessionGrants("p", sid)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range gs {
				out = append(out, g.ID)
			}
			return nil
		})
		return out
	}
	if got := ids("s1"); len(got) != 2 || got[0] != "g1" || got[1] != "g2" {
		t.Errorf("grants of s1 after the upgrade: %v, want [g1 g2]", got)
	}
	if got := ids("s2"); len(got) != 1 || got[0] != "g3" {
		t.Errorf("grants of s2 after the upgrade: %v, want [g3]", got)
	}
	err := db.Update(context.Background(), func(tx store.Tx) error {
		_, err := tx.SweepExpired(store.ExpiringOIDCGrants, t0.Add(time.Hour), 10)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids("s1"); len(got) != 1 || got[0] != "g2" {
		t.Errorf("grants of s1 after the sweep: %v, want [g2]", got)
	}
	db.viewTx(func(tx txn) error {
		if n := keyCount(tx.bucket(bucketOIDCSessionGrants)); n != 1 {
			t.Errorf("%d entries left in the session index, want 1", n)
		}
		return nil
	})
}
