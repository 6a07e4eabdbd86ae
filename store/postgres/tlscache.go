package postgres

import (
	"errors"

	"latchkey/store"
)

// The cache of automatic HTTPS (migration 0020; store.TLSCache): table
// tls_cache, one row per entry name.

const (
	sqlTLSCacheEntry       = `SELECT key, data FROM tls_cache WHERE key = $1`
	sqlPutTLSCacheEntry    = `INSERT INTO tls_cache (key, data) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET data = excluded.data`
	sqlDeleteTLSCacheEntry = `DELETE FROM tls_cache WHERE key = $1`
)

// errTLSCacheKey refuses an entry whose name cannot be a key.
var errTLSCacheKey = errors.New("store: a TLS cache entry needs a name of text without NUL")

// TLSCacheEntry returns the entry key.
func (tx *txn) TLSCacheEntry(key string) (*store.TLSCacheEntry, error) {
	if key == "" || !storable(key) {
		return nil, store.ErrNotFound
	}
	e := &store.TLSCacheEntry{}
	if err := tx.one(sqlTLSCacheEntry, []any{key}, &e.Key, &e.Data); err != nil {
		return nil, err
	}
	return e, nil
}

// PutTLSCacheEntry creates or replaces the entry e.Key.
func (tx *txn) PutTLSCacheEntry(e *store.TLSCacheEntry) error {
	if e.Key == "" || !storable(e.Key) {
		return errTLSCacheKey
	}
	data := e.Data
	if data == nil {
		data = []byte{} // NOT NULL; nil and empty are alike
	}
	_, err := tx.exec(sqlPutTLSCacheEntry, e.Key, data)
	return err
}

// DeleteTLSCacheEntry removes the entry key.
func (tx *txn) DeleteTLSCacheEntry(key string) error {
	if key == "" || !storable(key) {
		return nil
	}
	_, err := tx.exec(sqlDeleteTLSCacheEntry, key)
	return err
}
