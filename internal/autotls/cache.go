package autotls

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/crypto/acme/autocert"

	"latchkey/store"
)

// Cache is autocert's cache in the store (store.TLSCache): one entry per
// name autocert gives (a domain's certificate and key, the account key,
// the answers to challenges in flight), each sealed with the keyring and
// bound to its name, so neither the data file nor the database holds a
// private key in the clear. Every replica of a database reads the same
// entries: a certificate one replica obtained or renewed is the others'
// too, and a challenge one answers another can answer.
type Cache struct {
	DB   store.DB
	Keys *store.Keyring
}

var _ autocert.Cache = (*Cache)(nil)

// aad binds a sealed entry to its name.
func aad(key string) []byte { return []byte("tls:" + key) }

// Get returns the entry key, opened; autocert.ErrCacheMiss when there is
// none.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, error) {
	var e *store.TLSCacheEntry
	err := c.DB.View(ctx, func(tx store.Tx) error {
		var err error
		e, err = tx.TLSCacheEntry(key)
		return err
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, autocert.ErrCacheMiss
	}
	if err != nil {
		return nil, err
	}
	data, err := c.Keys.Open(e.Data, aad(key))
	if err != nil {
		return nil, fmt.Errorf("tls cache entry %q: %w", key, err)
	}
	return data, nil
}

// Put seals data and stores it as the entry key, replacing any.
func (c *Cache) Put(ctx context.Context, key string, data []byte) error {
	sealed, err := c.Keys.Seal(data, aad(key))
	if err != nil {
		return err
	}
	return c.DB.Update(ctx, func(tx store.Tx) error {
		return tx.PutTLSCacheEntry(&store.TLSCacheEntry{Key: key, Data: sealed})
	})
}

// Delete removes the entry key.
func (c *Cache) Delete(ctx context.Context, key string) error {
	return c.DB.Update(ctx, func(tx store.Tx) error { return tx.DeleteTLSCacheEntry(key) })
}
