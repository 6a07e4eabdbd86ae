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
	grantsIndexedAtOpen(t, bucketOIDCUserGrants, func(tx store.Tx) ([]*store.OIDCGrant, error) { return tx.OIDCUserGrants("p", "u") })
}

// TestClientGrantsIndexedAtOpen: a file written before grants had their
// entries under their client (no oidc_grants_by_client bucket) gets
// them at its next open, so deleting a client revokes grants made
// before the upgrade.
func TestClientGrantsIndexedAtOpen(t *testing.T) {
	t.Parallel()
	grantsIndexedAtOpen(t, bucketOIDCClientGrants, func(tx store.Tx) ([]*store.OIDCGrant, error) { return tx.OIDCClientGrants("p", "c") })
}

// grantsIndexedAtOpen writes two grants of user u to client c, removes
// the index bucket as a file of the binary before it lacks it, opens
// the file again and wants list to find both and Check to pass.
func grantsIndexedAtOpen(t *testing.T, bucket []byte, list func(tx store.Tx) ([]*store.OIDCGrant, error)) {
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
	if err := b.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket(bucket) }); err != nil {
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
		gs, err := list(tx)
		n = len(gs)
		return err
	})
	if err != nil || n != 2 {
		t.Fatalf("%s after the upgrade: %d grants, %v; want 2", bucket, n, err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}
