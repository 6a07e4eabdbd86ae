package storetest

import (
	"bytes"
	"fmt"
	"testing"

	"latchkey/store"
)

// Instance tests the instance settings (store.Instance): none stored
// reads as nil or false, each is stored byte for byte and replaced, and
// a reopened store keeps them.
func (s Suite) Instance(t *testing.T) {
	parallel(t, []subtest{{"RoundTrip", s.instanceRoundTrip}})
}

func (s Suite) instanceRoundTrip(t *testing.T) {
	dsn := s.New(t)
	db := openAt(t, dsn, store.Options{})
	view(t, db, func(tx store.Tx) error {
		h, err1 := tx.AdminTokenHash()
		k, err2 := tx.MasterKeyCheck()
		ok, err3 := tx.Initialized()
		if h != nil || k != nil || ok || err1 != nil || err2 != nil || err3 != nil {
			return fmt.Errorf("a new store: admin token hash %q (%v), master key check %q (%v), initialized %v (%v); want nil, nil, false",
				h, err1, k, err2, ok, err3)
		}
		return nil
	})
	hash, keyCheck := []byte{0, 1, 0xff, 'h'}, []byte("check\x00\xfe")
	update(t, db, func(tx store.Tx) error {
		if err := tx.SetAdminTokenHash([]byte("first")); err != nil {
			return err
		}
		if err := tx.SetAdminTokenHash(hash); err != nil {
			return err
		}
		if err := tx.SetMasterKeyCheck(keyCheck); err != nil {
			return err
		}
		return tx.SetInitialized()
	})
	db = reopen(t, db, dsn, store.Options{})
	view(t, db, func(tx store.Tx) error {
		h, err1 := tx.AdminTokenHash()
		k, err2 := tx.MasterKeyCheck()
		ok, err3 := tx.Initialized()
		if !bytes.Equal(h, hash) || !bytes.Equal(k, keyCheck) || !ok || err1 != nil || err2 != nil || err3 != nil {
			return fmt.Errorf("admin token hash %q (%v), master key check %q (%v), initialized %v (%v); want %q, %q, true",
				h, err1, k, err2, ok, err3, hash, keyCheck)
		}
		return nil
	})
}
