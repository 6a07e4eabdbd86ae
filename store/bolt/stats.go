package bolt

import (
	"context"
	"os"

	"go.etcd.io/bbolt"

	"latchkey/store"
)

// Stats reads the sizes. Counting a queue walks its bucket's pages, so
// the cost grows with the backlog: call it when metrics are scraped, not
// per request.
func (db *DB) Stats(context.Context) (store.Stats, error) {
	var st store.Stats
	err := db.bolt.View(func(btx *bbolt.Tx) error {
		tx := txn{btx}
		st.MailQueued = tx.bucket(bucketMail).Stats().KeyN
		if k, v := tx.bucket(bucketMail).Cursor().First(); v != nil {
			m, err := decodeMail(k, v)
			if err != nil {
				return err
			}
			st.OldestMail = m.CreatedAt
		}
		st.DeliveriesQueued = tx.bucket(bucketJobs).Stats().KeyN
		st.OutboxEvents = tx.bucket(bucketOutbox).Stats().KeyN
		st.DataSize = tx.tx.Size()
		st.FreeSize = int64(db.bolt.Stats().FreePageN+db.bolt.Stats().PendingPageN) * int64(db.bolt.Info().PageSize)
		return nil
	})
	if err != nil {
		return store.Stats{}, err
	}
	fi, err := os.Stat(db.path)
	if err != nil {
		return store.Stats{}, err
	}
	st.FileSize = fi.Size()
	return st, nil
}
