package bolt

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// TestMigrateRefreshEncoding: a version 6 file's refresh tokens, stored
// as JSON, read the same after the upgrade to version 7, are swept by
// their index, and a token written after it is compact.
func TestMigrateRefreshEncoding(t *testing.T) {
	t.Parallel()
	sess := &store.Session{ID: "0195f3a0-0000-7000-8000-000000000021", UserID: "u", ProjectID: "p", Method: "email_otp",
		IssuedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	old := &store.RefreshToken{SessionID: sess.ID, Hash: []byte("old-hash"), ProjectID: "p", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	db := upgraded(t, 6, nil, func(btx *bbolt.Tx) error {
		btx.Bucket(bucketSessions).Put([]byte(sess.ID), encodeSession(sess))
		btx.Bucket(bucketSessionsExpiry).Put(dueKey(sess.ExpiresAt, []byte(sess.ID)), nil)
		btx.Bucket(bucketUserSessions).Put(compound(sess.UserID, sess.ID), nil)
		v, _ := json.Marshal(old)
		key := refreshKey(old.SessionID, old.Hash)
		btx.Bucket(bucketRefresh).Put(key, v)
		return btx.Bucket(bucketRefreshExpiry).Put(dueKey(old.ExpiresAt, key), nil)
	})
	next := &store.RefreshToken{SessionID: sess.ID, Hash: []byte("new-hash"), ProjectID: "p", CreatedAt: t0, ExpiresAt: t0.Add(2 * time.Hour)}
	err := db.Update(context.Background(), func(tx store.Tx) error {
		if v := getU64(tx.(txn).bucket(bucketMeta).Get(keySchema)); v != SchemaVersion {
			t.Fatalf("schema %d after the upgrade, want %d", v, SchemaVersion)
		}
		got, err := tx.RefreshToken(old.SessionID, old.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if w, g := fmtJSON(old), fmtJSON(got); w != g {
			t.Fatalf("the JSON token after the upgrade:\n got %s\nwant %s", g, w)
		}
		if err := tx.PutRefreshToken(next); err != nil {
			return err
		}
		if v := tx.(txn).bucket(bucketRefresh).Get(refreshKey(next.SessionID, next.Hash)); len(v) == 0 || v[0] != recordFormat {
			t.Fatalf("a token written after the upgrade: %q, want the compact encoding", v)
		}
		_, err = tx.SweepExpired(store.ExpiringRefreshTokens, t0.Add(time.Hour), 10)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	db.viewTx(func(tx txn) error {
		if _, err := tx.RefreshToken(old.SessionID, old.Hash); err != store.ErrNotFound {
			t.Errorf("the JSON token after its sweep: %v, want not found", err)
		}
		if _, err := tx.RefreshToken(next.SessionID, next.Hash); err != nil {
			t.Errorf("the compact token after the sweep: %v", err)
		}
		return nil
	})
}

func fmtJSON(v any) string { raw, _ := json.Marshal(v); return string(raw) }
