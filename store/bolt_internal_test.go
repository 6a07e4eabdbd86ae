package store

import "context"

// viewTx, updateTx and batchTx are View, Update and Batch for the
// internal tests, whose functions reach the bbolt transaction.
func (db *boltDB) viewTx(fn func(boltTx) error) error {
	return db.View(context.Background(), func(tx Tx) error { return fn(tx.(boltTx)) })
}

func (db *boltDB) updateTx(fn func(boltTx) error) error {
	return db.Update(context.Background(), func(tx Tx) error { return fn(tx.(boltTx)) })
}

func (db *boltDB) batchTx(fn func(boltTx) error) error {
	return db.Batch(context.Background(), func(tx Tx) error { return fn(tx.(boltTx)) })
}

// must returns v, panicking on err (reads of the internal tests).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
