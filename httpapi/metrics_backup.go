package httpapi

import (
	"time"

	"latchkey/internal/promtext"
)

// BackupStatus is what /metrics shows of the off-site backups (latchkey
// serve --backup-to), read when the metrics are scraped.
type BackupStatus struct {
	// LastSuccess is when the newest backup known was taken (zero: none).
	LastSuccess time.Time
	// LastSize is its size in bytes.
	LastSize int64
	// Failing counts the rounds that failed since the last success.
	Failing int
	// Uploads and Failures count the uploads that succeeded and the
	// rounds that failed since the start.
	Uploads, Failures int64
}

// WatchBackups adds the backup metrics, read from status at each scrape.
// Call it once, only when backups are configured: a server without them
// exports none (so an alert on their age does not fire there).
func (m *Metrics) WatchBackups(status func() BackupStatus) {
	m.reg.Register(&backupCollector{status: status})
}

// backupCollector reads the backups' status at scrape time.
type backupCollector struct{ status func() BackupStatus }

// Collect implements promtext.Collector.
func (c *backupCollector) Collect() []promtext.Family {
	st := c.status()
	last := 0.0
	if !st.LastSuccess.IsZero() {
		last = float64(st.LastSuccess.Unix())
	}
	return []promtext.Family{
		gauge("latchkey_backup_last_success_timestamp_seconds", "Unix time at which the newest off-site backup was taken (uploaded by this process, or the newest in the bucket at start); 0 while none is known.", last),
		gauge("latchkey_backup_last_size_bytes", "Size of the newest off-site backup.", float64(st.LastSize)),
		gauge("latchkey_backup_consecutive_failures", "Off-site backup rounds that failed since the last success (0 while all is well).", float64(st.Failing)),
		{Name: "latchkey_backup_uploads_total", Type: promtext.TypeCounter,
			Help: `Off-site backup uploads since the start, by result: "succeeded" or "failed" (a round that failed to list, upload or delete).`,
			Metrics: []promtext.Metric{
				{Labels: []promtext.Label{{Name: "result", Value: "succeeded"}}, Value: float64(st.Uploads)},
				{Labels: []promtext.Label{{Name: "result", Value: "failed"}}, Value: float64(st.Failures)},
			}},
	}
}
