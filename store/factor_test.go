package store_test

import (
	"errors"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestDeleteFactorAndBackupCodes: DeleteFactor removes one factor of a
// user and leaves the user's other kind and other users' factors;
// DeleteBackupCodes removes one user's batch; both are no-ops for rows
// that are not there, on either backend.
func TestDeleteFactorAndBackupCodes(t *testing.T) {
	db := storetest.Open(t)
	t0 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	err := db.Update(ctx, func(tx store.Tx) error {
		for _, f := range []*store.Factor{
			{UserID: "u1", ProjectID: "p", Kind: "totp", Status: "pending", CreatedAt: t0},
			{UserID: "u1", ProjectID: "p", Kind: "sms", Status: "enrolled", Phone: "+15551230000", CreatedAt: t0},
			{UserID: "u2", ProjectID: "p", Kind: "totp", Status: "pending", CreatedAt: t0},
		} {
			if err := tx.PutFactor(f); err != nil {
				return err
			}
		}
		for _, id := range []string{"u1", "u2"} {
			if err := tx.PutBackupCodes(&store.BackupCodes{UserID: id, ProjectID: "p", Hashes: [][]byte{{1}}, Used: []bool{false}, CreatedAt: t0}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(ctx, func(tx store.Tx) error {
		if err := tx.DeleteFactor("u1", "totp"); err != nil {
			return err
		}
		if err := tx.DeleteBackupCodes("u1"); err != nil {
			return err
		}
		// Gone already, or never there: nothing to do.
		if err := tx.DeleteFactor("u1", "totp"); err != nil {
			return err
		}
		if err := tx.DeleteFactor("u3", "sms"); err != nil {
			return err
		}
		return tx.DeleteBackupCodes("u3")
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(ctx, func(tx store.Tx) error {
		if _, err := tx.Factor("u1", "totp"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted factor: %v, want ErrNotFound", err)
		}
		if _, err := tx.BackupCodes("u1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted batch: %v, want ErrNotFound", err)
		}
		if f, err := tx.Factor("u1", "sms"); err != nil || f.Phone != "+15551230000" {
			t.Errorf("the user's other factor: %+v, %v", f, err)
		}
		if _, err := tx.Factor("u2", "totp"); err != nil {
			t.Errorf("another user's factor: %v", err)
		}
		if _, err := tx.BackupCodes("u2"); err != nil {
			t.Errorf("another user's batch: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Writes, so not in a read transaction.
	if err := db.View(ctx, func(tx store.Tx) error { return tx.DeleteFactor("u2", "totp") }); err == nil {
		t.Error("DeleteFactor in a View succeeded")
	}
}
