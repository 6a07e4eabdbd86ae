package postgres

import (
	"errors"

	"latchkey/store"
)

// Instance settings live in meta, one row each.

const (
	metaAdminToken  = "admin_token_hash"
	metaInitialized = "initialized"
	metaMasterKey   = "master_key_check"
)

// getMeta returns the value of setting name, nil when unset.
func (tx *txn) getMeta(name string) ([]byte, error) {
	var v []byte
	err := tx.one(`SELECT value FROM meta WHERE name = $1`, []any{name}, &v)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return v, err
}

// setMeta stores the value of setting name.
func (tx *txn) setMeta(name string, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	_, err := tx.exec(`INSERT INTO meta (name, value) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value`, name, v)
	return err
}

func (tx *txn) AdminTokenHash() ([]byte, error)  { return tx.getMeta(metaAdminToken) }
func (tx *txn) SetAdminTokenHash(h []byte) error { return tx.setMeta(metaAdminToken, h) }
func (tx *txn) MasterKeyCheck() ([]byte, error)  { return tx.getMeta(metaMasterKey) }
func (tx *txn) SetMasterKeyCheck(v []byte) error { return tx.setMeta(metaMasterKey, v) }
func (tx *txn) SetInitialized() error            { return tx.setMeta(metaInitialized, []byte{1}) }
func (tx *txn) Initialized() (bool, error) {
	v, err := tx.getMeta(metaInitialized)
	return v != nil, err
}
