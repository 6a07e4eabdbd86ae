package bolt

import (
	"path/filepath"
	"testing"

	"latchkey/store"
)

// TestDeliveryOldRecord: a delivery record written before records had a
// public id (its "id" was the sequence number) still reads back.
func TestDeliveryOldRecord(t *testing.T) {
	t.Parallel()
	db, _, err := openDB(filepath.Join(t.TempDir(), "d.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	old := []byte(`{"id":5,"webhookId":"w1","eventId":"evt_1","eventType":"user.registered","attempt":1,"status":"succeeded","responseStatus":200,"error":"","durationMs":3,"createdAt":"2026-11-22T10:00:00Z","nextAttemptAt":null}`)
	err = db.updateTx(func(tx txn) error {
		b := tx.bucket(bucketDeliveries)
		if err := b.SetSequence(5); err != nil { // as AddDelivery left it
			return err
		}
		return b.Put(append(compound("w1", ""), u64(5)...), old)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.updateTx(func(tx txn) error {
		return tx.AddDelivery(&store.Delivery{ID: "0193-new", WebhookID: "w1", EventID: "evt_2", Attempt: 1, Status: "pending"})
	})
	if err != nil {
		t.Fatal(err)
	}
	db.viewTx(func(tx txn) error {
		ds, err := tx.Deliveries("w1", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[0].ID != "0193-new" || ds[1].Seq != 5 || ds[1].ID != "" || ds[1].EventID != "evt_1" {
			t.Fatalf("deliveries=%+v %+v", ds[0], ds[1])
		}
		return nil
	})
}
