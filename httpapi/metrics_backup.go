package httpapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	m.reg.MustRegister(&backupCollector{status: status})
}

var (
	descBackupLast = prometheus.NewDesc("latchkey_backup_last_success_timestamp_seconds",
		"Unix time at which the newest off-site backup was taken (uploaded by this process, or the newest in the bucket at start); 0 while none is known.", nil, nil)
	descBackupSize = prometheus.NewDesc("latchkey_backup_last_size_bytes",
		"Size of the newest off-site backup.", nil, nil)
	descBackupFailing = prometheus.NewDesc("latchkey_backup_consecutive_failures",
		"Off-site backup rounds that failed since the last success (0 while all is well).", nil, nil)
	descBackupRounds = prometheus.NewDesc("latchkey_backup_uploads_total",
		`Off-site backup uploads since the start, by result: "succeeded" or "failed" (a round that failed to list, upload or delete).`, []string{"result"}, nil)
)

// backupCollector reads the backups' status at scrape time.
type backupCollector struct{ status func() BackupStatus }

// Describe implements prometheus.Collector.
func (c *backupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBackupLast, descBackupSize, descBackupFailing, descBackupRounds} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *backupCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	last := 0.0
	if !st.LastSuccess.IsZero() {
		last = float64(st.LastSuccess.Unix())
	}
	ch <- prometheus.MustNewConstMetric(descBackupLast, prometheus.GaugeValue, last)
	ch <- prometheus.MustNewConstMetric(descBackupSize, prometheus.GaugeValue, float64(st.LastSize))
	ch <- prometheus.MustNewConstMetric(descBackupFailing, prometheus.GaugeValue, float64(st.Failing))
	ch <- prometheus.MustNewConstMetric(descBackupRounds, prometheus.CounterValue, float64(st.Uploads), "succeeded")
	ch <- prometheus.MustNewConstMetric(descBackupRounds, prometheus.CounterValue, float64(st.Failures), "failed")
}
