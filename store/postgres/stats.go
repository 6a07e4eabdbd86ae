package postgres

import (
	"context"

	"latchkey/store"
)

// Stats reads the queue lengths, the oldest queued message's time and
// the database's size, in one statement. Counting a queue reads all of
// it: for metrics at scrape time, not per request.
func (db *DB) Stats(ctx context.Context) (store.Stats, error) {
	var st store.Stats
	err := db.View(ctx, func(t store.Tx) error {
		tx := t.(*txn)
		var oldest *int64
		var size int64
		err := tx.one(`SELECT (SELECT count(*) FROM mail), (SELECT created_at FROM mail ORDER BY id LIMIT 1),
				(SELECT count(*) FROM jobs), (SELECT count(*) FROM outbox), pg_database_size(current_database())`,
			nil, &st.MailQueued, &oldest, &st.DeliveriesQueued, &st.OutboxEvents, &size)
		if err != nil {
			return err
		}
		st.OldestMail = timeOfNull(oldest)
		st.FileSize, st.DataSize = size, size
		return nil
	})
	if err != nil {
		return store.Stats{}, err
	}
	return st, nil
}
