package bolt

import (
	"context"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// TestUserGrantsIndexedAtOpen: a file written before grants had their
// entries under their user (no oidc_grants_by_user bucket) gets them at
// its next open, so revoking a consent finds grants made before the
// upgrade; a file that has the bucket is left as it is.
func TestUserGrantsIndexedAtOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "grants.db")
	db, _, err := openDB(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(context.Background(), func(tx store.Tx) error {
		for _, id := range []string{"g1", "g2"} {
			if err := tx.PutOIDCGrant(&store.OIDCGrant{ProjectID: "p", ID: id, ClientID: "c", UserID: "u", ExpiresAt: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	// The file as the binary before the index left it.
	b, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucketOIDCUserGrants) }); err != nil {
		t.Fatal(err)
	}
	b.Close()
	db, _, err = openDB(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	err = db.View(context.Background(), func(tx store.Tx) error {
		list, err := tx.OIDCUserGrants("p", "u")
		n = len(list)
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("OIDCUserGrants after the upgrade: %d grants, %v; want 2", n, err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}
