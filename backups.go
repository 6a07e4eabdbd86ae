package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"latchkey/httpapi"
	"latchkey/internal/background"
	"latchkey/internal/offsite"
)

// backupConfig is --backup-to, --backup-every and --backup-keep, checked.
type backupConfig struct {
	target offsite.Target
	cred   offsite.Credentials
	every  time.Duration
	keep   int
}

// checkBackups checks the off-site backup settings, touching nothing:
// nil when --backup-to is not set. On a database they are refused: its
// own tools back it up.
func (m *Main) checkBackups() (*backupConfig, error) {
	c := m.Config
	if c.BackupTo == "" {
		if c.BackupEvery != "" {
			return nil, errors.New("--backup-every needs --backup-to s3://bucket/prefix (where to upload)")
		}
		return nil, nil
	}
	if c.DatabaseURL != "" {
		return nil, errors.New("--backup-to backs up a data file (--data), not a PostgreSQL database: back the database up with its own tools (pg_dump, or your provider's backups)")
	}
	target, err := offsite.ParseURL(c.BackupTo)
	if err != nil {
		return nil, fmt.Errorf("--backup-to: %w", err)
	}
	if c.BackupEvery == "" {
		return nil, errors.New("--backup-to needs --backup-every (how often to upload, e.g. 6h)")
	}
	every, err := positiveDuration("--backup-every", c.BackupEvery, time.Minute, "6h")
	if err != nil {
		return nil, err
	}
	keep := 14
	if c.BackupKeep != "" {
		if keep, err = strconv.Atoi(c.BackupKeep); err != nil || keep < 0 {
			return nil, fmt.Errorf("--backup-keep %q must be a whole number, 0 or more: how many backups to keep (0 keeps every one)", c.BackupKeep)
		}
	}
	cred, err := offsite.CredentialsFromEnv(m.Getenv)
	if err != nil {
		return nil, fmt.Errorf("--backup-to: %w", err)
	}
	return &backupConfig{target: target, cred: cred, every: every, keep: keep}, nil
}

// startBackups sets up the off-site backups of the data file (bc from
// checkBackups): the scheduler's round (a background task every
// minute), their metrics and their readiness check, which degrades GET
// /ready while they fail rather than failing it. The copies are the
// store's hot backups, as GET /api/v1/admin/backup streams them.
func (m *Main) startBackups(bc *backupConfig) (*background.Task, httpapi.ReadyCheck, error) {
	bucket, err := offsite.Dial(bc.target, bc.cred, offsite.Options{MaxRetries: m.backupRetries})
	if err != nil {
		return nil, httpapi.ReadyCheck{}, fmt.Errorf("--backup-to: %w", err)
	}
	m.Backups = &offsite.Backups{Bucket: bucket, Every: bc.every, Keep: bc.keep, Backup: m.Service.Backup, Now: m.Now, Logger: m.Logger}
	m.Metrics.WatchBackups(func() httpapi.BackupStatus {
		st := m.Backups.Status()
		return httpapi.BackupStatus{LastSuccess: st.LastSuccess, LastSize: st.LastSize, Failing: st.Failing, Uploads: st.Uploads, Failures: st.Failures}
	})
	m.Logger.Info("off-site backups", "to", bc.target.String(), "endpoint", bc.target.Endpoint, "every", bc.every.String(), "keep", bc.keep)
	// RunOnce logs its own failures (with the count in a row).
	task := &background.Task{Name: "backup", Interval: offsite.Tick, Logger: m.Logger, Run: m.Backups.RunOnce, Quiet: func(error) bool { return true }}
	return task, httpapi.ReadyCheck{Name: "backup", Check: m.Backups.Degraded, Degrades: true}, nil
}
