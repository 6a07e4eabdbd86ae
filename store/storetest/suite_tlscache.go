package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"latchkey/store"
)

// TLSCache tests the cache of automatic HTTPS (store.TLSCache).
func (s Suite) TLSCache(t *testing.T) {
	parallel(t, []subtest{
		{"RoundTrip", s.tlsCacheRoundTrip},
		{"Keys", s.tlsCacheKeys},
	})
}

// tlsCacheRoundTrip: entries round-trip byte for byte across a reopen,
// a put replaces, a delete removes (twice is fine), names are exact (no
// prefix or case folding), and a write in a View fails.
func (s Suite) tlsCacheRoundTrip(t *testing.T) {
	dsn := s.New(t)
	db := openAt(t, dsn, store.Options{})
	cert := &store.TLSCacheEntry{Key: "auth.example.com", Data: []byte("sealed\x00\xffcert")}
	complete(t, cert)
	update(t, db, func(tx store.Tx) error {
		for _, e := range []*store.TLSCacheEntry{
			{Key: "auth.example.com", Data: []byte("first")}, cert,
			{Key: "auth.example.com+rsa", Data: []byte("rsa")}, {Key: "acme_account+key", Data: []byte("account")},
			{Key: "tok+http-01", Data: []byte{}},
		} {
			if err := tx.PutTLSCacheEntry(e); err != nil {
				return fmt.Errorf("PutTLSCacheEntry(%q): %w", e.Key, err)
			}
		}
		cert.Data[0] = 'X' // the store keeps its own copy
		return nil
	})
	cert.Data[0] = 's'
	db = reopen(t, db, dsn, store.Options{})
	view(t, db, func(tx store.Tx) error {
		for key, want := range map[string][]byte{"auth.example.com": cert.Data, "auth.example.com+rsa": []byte("rsa"),
			"acme_account+key": []byte("account"), "tok+http-01": {}} {
			e, err := tx.TLSCacheEntry(key)
			if err != nil || e.Key != key || !bytes.Equal(e.Data, want) {
				return fmt.Errorf("TLSCacheEntry(%q) = %+v, %v; want %q", key, e, err, want)
			}
		}
		for _, key := range []string{"AUTH.EXAMPLE.COM", "auth.example", "auth.example.com+", "x"} {
			if e, err := tx.TLSCacheEntry(key); !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("TLSCacheEntry(%q) = %+v, %v; want ErrNotFound", key, e, err)
			}
		}
		return nil
	})
	if err := db.View(ctx, func(tx store.Tx) error {
		return tx.PutTLSCacheEntry(&store.TLSCacheEntry{Key: "in-a-view", Data: []byte("x")})
	}); err == nil {
		t.Error("PutTLSCacheEntry in a View succeeded")
	}
	update(t, db, func(tx store.Tx) error {
		if err := tx.DeleteTLSCacheEntry("tok+http-01"); err != nil {
			return err
		}
		return tx.DeleteTLSCacheEntry("tok+http-01")
	})
	view(t, db, func(tx store.Tx) error {
		if _, err := tx.TLSCacheEntry("tok+http-01"); !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("a deleted entry: %v; want ErrNotFound", err)
		}
		if _, err := tx.TLSCacheEntry("auth.example.com"); err != nil {
			return fmt.Errorf("the delete of another entry removed auth.example.com: %v", err)
		}
		return nil
	})
}

// tlsCacheKeys: a name that cannot be a key is no entry to read or
// delete, and a put of one fails without ending the transaction.
func (s Suite) tlsCacheKeys(t *testing.T) {
	db := s.open(t, store.Options{})
	noRowFor(t, db, func(tx store.Tx) error {
		return tx.PutTLSCacheEntry(&store.TLSCacheEntry{Key: "ok", Data: []byte("x")})
	},
		func(tx store.Tx, bad string) map[string]error {
			return map[string]error{
				"TLSCacheEntry":       wantNotFound(tx.TLSCacheEntry(bad)),
				"DeleteTLSCacheEntry": tx.DeleteTLSCacheEntry(bad),
			}
		})
	update(t, db, func(tx store.Tx) error {
		for _, bad := range append([]string{""}, notText...) {
			if err := tx.PutTLSCacheEntry(&store.TLSCacheEntry{Key: bad, Data: []byte("x")}); err == nil {
				return fmt.Errorf("PutTLSCacheEntry(%q) succeeded", bad)
			}
		}
		return wantNotFound(tx.TLSCacheEntry(""))
	})
}
