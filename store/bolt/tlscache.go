package bolt

import (
	"errors"

	"latchkey/store"
)

// The cache of automatic HTTPS (store.TLSCache): bucketTLSCache, keyed
// by the entry's name; JSON rows.

// TLSCacheEntry returns the entry key.
func (tx txn) TLSCacheEntry(key string) (*store.TLSCacheEntry, error) {
	if key == "" || !isText(key) {
		return nil, store.ErrNotFound
	}
	var e store.TLSCacheEntry
	if err := tx.get(bucketTLSCache, []byte(key), &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// PutTLSCacheEntry creates or replaces the entry e.Key.
func (tx txn) PutTLSCacheEntry(e *store.TLSCacheEntry) error {
	if e.Key == "" || !isText(e.Key) {
		return errTLSCacheKey
	}
	return tx.put(bucketTLSCache, []byte(e.Key), e)
}

// DeleteTLSCacheEntry removes the entry key.
func (tx txn) DeleteTLSCacheEntry(key string) error {
	if key == "" || !isText(key) {
		return nil
	}
	return tx.del(bucketTLSCache, []byte(key))
}

// errTLSCacheKey refuses an entry whose name cannot be a key.
var errTLSCacheKey = errors.New("store: a TLS cache entry needs a name of text without NUL")
