package bolt

import (
	"bytes"
	"encoding/json"
	"testing"

	"latchkey/store"
)

// TestExactJSONRows: the passkeys, challenges and delivery records whose
// fields JSON would change (a credential or ceremony not in encoding/json's
// compact form, an empty one, an error message that is not UTF-8) are
// stored in the rows pinned here, and read back byte for byte through
// every path that decodes them: the Tx getters and listings, and Export.
func TestExactJSONRows(t *testing.T) {
	t.Parallel()
	db := openTestDB(t, store.Options{})
	cred := json.RawMessage("{ \"publicKey\" : \"AQID\" }")
	pk := &store.Passkey{ID: "cred1", UserID: "u1", ProjectID: "p1", Credential: cred, CreatedAt: t0}
	ch := &store.Challenge{ID: "ch1", ProjectID: "p1", Kind: "login", Session: json.RawMessage("{\"challenge\": \"x\"}"), ExpiresAt: t0}
	d := &store.Delivery{ID: "d1", WebhookID: "w1", EventID: "evt_1", Attempt: 1, Status: "failed", Error: "bad \xff\xfe reply", CreatedAt: t0}
	mustTx(t, db, func(tx txn) error {
		if err := tx.PutPasskey(pk); err != nil {
			return err
		}
		if err := tx.PutChallenge(ch); err != nil {
			return err
		}
		return tx.AddDelivery(d)
	})
	rows := map[string]string{}
	db.viewTx(func(tx txn) error {
		for _, b := range [][]byte{bucketPasskeys, bucketChallenges, bucketDeliveries} {
			k, v := tx.bucket(b).Cursor().First()
			if k == nil {
				t.Fatalf("bucket %s is empty", b)
			}
			rows[string(b)] = string(v)
		}
		return nil
	})
	want := map[string]string{
		"passkeys":   `{"id":"cred1","userId":"u1","projectId":"p1","createdAt":"2026-11-22T10:00:00Z","credential":null,"credentialBytes":"eyAicHVibGljS2V5IiA6ICJBUUlEIiB9"}`,
		"challenges": `{"id":"ch1","projectId":"p1","kind":"login","expiresAt":"2026-11-22T10:00:00Z","session":null,"sessionBytes":"eyJjaGFsbGVuZ2UiOiAieCJ9"}`,
		"deliveries": `{"id":1,"uid":"d1","webhookId":"w1","eventId":"evt_1","eventType":"","attempt":1,"status":"failed","responseStatus":0,"error":"","durationMs":0,"createdAt":"2026-11-22T10:00:00Z","nextAttemptAt":null,"errorBytes":"YmFkIP/+IHJlcGx5"}`,
	}
	for b, w := range want {
		if rows[b] != w {
			t.Errorf("bucket %s holds\n%s\nwant\n%s", b, rows[b], w)
		}
	}
	same := func(what string, gotPK *store.Passkey, gotCh *store.Challenge, gotD *store.Delivery) {
		t.Helper()
		if gotPK != nil && !bytes.Equal(gotPK.Credential, cred) {
			t.Errorf("%s: credential %q, want %q", what, gotPK.Credential, cred)
		}
		if gotCh != nil && !bytes.Equal(gotCh.Session, ch.Session) {
			t.Errorf("%s: session %q, want %q", what, gotCh.Session, ch.Session)
		}
		if gotD != nil && gotD.Error != d.Error {
			t.Errorf("%s: error %q, want %q", what, gotD.Error, d.Error)
		}
	}
	db.viewTx(func(tx txn) error {
		same("Passkey", must(tx.Passkey("p1", "cred1")), nil, nil)
		same("UserPasskeys", must(tx.UserPasskeys("p1", "u1"))[0], nil, nil)
		same("Challenge", nil, must(tx.Challenge("ch1")), nil)
		same("Deliveries", nil, nil, must(tx.Deliveries("w1", 10))[0])
		ds, _, err := tx.DeliveriesBefore("w1", 0, 10)
		same("DeliveriesBefore", nil, nil, must(ds, err)[0])
		return nil
	})
	n := 0
	err := db.Export(t.Context(), func(rec any) error {
		switch r := rec.(type) {
		case *store.Passkey:
			same("Export", r, nil, nil)
		case *store.Challenge:
			same("Export", nil, r, nil)
		case *store.Delivery:
			same("Export", nil, nil, r)
		default:
			return nil
		}
		n++
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("Export: %d of the 3 records, %v", n, err)
	}
}
