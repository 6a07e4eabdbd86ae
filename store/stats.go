package store

import "time"

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
