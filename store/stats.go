package store

import (
	"context"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Stats are the sizes of the data file and its queues, read in one
// transaction (for metrics, at scrape time).
type Stats struct {
	// MailQueued counts queued messages; OldestMail is when the oldest
	// of them was queued (zero when none is).
	MailQueued int
	OldestMail time.Time
	// DeliveriesQueued counts queued webhook deliveries (first attempts
	// and retries waiting); OutboxEvents counts events not yet fanned
	// out to the webhooks.
	DeliveriesQueued int
	OutboxEvents     int
	// FileSize is the data file's size on disk; DataSize the part of it
	// that holds pages (what a backup writes). A backend without a file
	// reports the size of its database in both, or zero when it cannot
	// tell cheaply.
	FileSize int64
	DataSize int64
	// FreeSize is the part of DataSize in pages that hold no data: later
	// writes reuse them, only a compaction gives them back (zero on a
	// backend without a file).
	FreeSize int64
}

// Stats reads the sizes. Counting a queue walks its bucket's pages, so
// the cost grows with the backlog: call it when metrics are scraped, not
// per request.
func (db *boltDB) Stats(context.Context) (Stats, error) {
	var st Stats
	err := db.bolt.View(func(btx *bolt.Tx) error {
		tx := boltTx{btx}
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
		return Stats{}, err
	}
	fi, err := os.Stat(db.path)
	if err != nil {
		return Stats{}, err
	}
	st.FileSize = fi.Size()
	return st, nil
}
