package bolt

import (
	"go.etcd.io/bbolt"

	"latchkey/store"
)

// Space reports how the file's pages are used, as of the last write
// transaction. It reads no page.
func (db *DB) Space() store.Space {
	st := db.bolt.Stats()
	var size int64
	db.bolt.View(func(tx *bbolt.Tx) error { size = tx.Size(); return nil })
	return store.Space{FileSize: size, PageSize: db.bolt.Info().PageSize, FreePages: st.FreePageN + st.PendingPageN,
		PagesWritten: st.TxStats.GetWrite()}
}
