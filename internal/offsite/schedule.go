package offsite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Tick is how often the scheduler looks whether a backup is due (the
// background task's interval): a failed upload is tried again at the
// next tick, and the first backup after a start is taken at the first
// tick when the bucket's newest is older than Every.
const Tick = time.Minute

// Backups takes a backup every Every: RunOnce, called by a background
// task every Tick, uploads one when it is due and then deletes all but
// the newest Keep. Set the fields, then call RunOnce; safe for
// concurrent use (rounds run one at a time).
type Backups struct {
	Bucket *Bucket
	// Every is the time between two backups.
	Every time.Duration
	// Keep is how many backups to keep (the newest); 0 keeps every one.
	Keep int
	// Backup writes a consistent copy of the data to w, telling before
	// its size first (the store's Backup: the same bytes as GET
	// /api/v1/admin/backup).
	Backup func(ctx context.Context, w io.Writer, before func(size int64)) (int64, error)
	// Now is the clock (nil: time.Now); backups are named by its time.
	Now func() time.Time
	// Logger receives each success (info) and failure (warning).
	Logger *slog.Logger

	run sync.Mutex // one round at a time
	// Under run: st.LastSuccess holds the bucket's newest backup
	// (listed at the first round); the last upload failed; the backups
	// beyond Keep are still to be deleted.
	known, retry, pruneDue bool

	mu sync.Mutex
	st Status
}

// Status is what the scheduler knows of the backups, for /metrics and
// /ready.
type Status struct {
	// LastSuccess is when the newest backup was taken: one uploaded by
	// this process, or the bucket's newest at the first round; zero
	// while none is known.
	LastSuccess time.Time
	// LastName and LastSize are that backup's name and size (LastName
	// empty while none is known).
	LastName string
	LastSize int64
	// Failing counts the rounds that failed since the last success (or
	// since the start): 0 while all is well.
	Failing int
	// LastError is the last failure, in one line; empty after a
	// success.
	LastError string
	// LastFailure is when it happened.
	LastFailure time.Time
	// Uploads and Failures count the uploads that succeeded and the
	// rounds that failed since the start.
	Uploads, Failures int64
}

func (b *Backups) now() time.Time {
	if b.Now == nil {
		return time.Now()
	}
	return b.Now()
}

// Status returns the current status.
func (b *Backups) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st
}

// Degraded returns nil while the last round succeeded (or none has run
// yet), else that backups are failing, in words safe for an
// unauthenticated GET /ready: how many rounds failed and the newest
// backup's time, neither the bucket's name nor the server's words (the
// log has those, and /metrics the counts).
func (b *Backups) Degraded() error {
	st := b.Status()
	if st.Failing == 0 {
		return nil
	}
	newest := "no backup is known"
	if !st.LastSuccess.IsZero() {
		newest = "the newest backup is from " + st.LastSuccess.UTC().Format(time.RFC3339)
	}
	tries := "the last attempt"
	if st.Failing > 1 {
		tries = fmt.Sprintf("the last %d attempts", st.Failing)
	}
	return fmt.Errorf("%s failed and %s (the log has the details; tried again every minute)", tries, newest)
}

// RunOnce does what is due: at the first round it lists the bucket to
// learn when the newest backup was taken; it uploads a backup when that
// one is Every old, and then deletes those beyond the newest Keep. What
// fails is tried again at the next round: the listing, the upload (a
// round after a failed upload uploads at once), or the deletion (without
// uploading again). A failed upload deletes nothing, so a bucket that
// refuses keeps the backups it has. The error is also in Status (until
// a round succeeds) and logged.
func (b *Backups) RunOnce(ctx context.Context) error {
	b.run.Lock()
	defer b.run.Unlock()
	err := b.round(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		b.st.Failing, b.st.LastError = 0, ""
		return nil
	}
	if ctx.Err() != nil {
		return err // stopping: not a failure of the bucket
	}
	b.st.Failing++
	b.st.Failures++
	b.st.LastError = err.Error()
	b.st.LastFailure = b.now()
	b.log().Warn("backup failed; the older backups and the data file are untouched; tried again at the next round",
		"to", b.Bucket.Target().String(), "failing", b.st.Failing, "err", err)
	return err
}

func (b *Backups) log() *slog.Logger {
	if b.Logger == nil {
		return slog.Default()
	}
	return b.Logger
}

// round is one round of RunOnce. Only it changes known, retry and
// pruneDue (under run); Status readers take mu.
func (b *Backups) round(ctx context.Context) error {
	if !b.known {
		list, err := b.Bucket.List(ctx)
		if err != nil {
			return err
		}
		b.known = true
		if len(list) > 0 {
			b.mu.Lock()
			if list[0].Time.After(b.st.LastSuccess) {
				b.st.LastSuccess, b.st.LastName, b.st.LastSize = list[0].Time, list[0].Name, list[0].Size
			}
			b.mu.Unlock()
		}
	}
	now := b.now()
	last := b.Status().LastSuccess
	if b.retry || last.IsZero() || !now.Before(last.Add(b.Every)) {
		name := ObjectName(now)
		size, err := b.upload(ctx, name)
		if err != nil {
			b.retry = true
			return err
		}
		b.retry, b.pruneDue = false, true
		b.mu.Lock()
		b.st.LastSuccess, b.st.LastName, b.st.LastSize = now.UTC().Truncate(time.Second), name, size
		b.st.Uploads++
		b.mu.Unlock()
		b.log().Info("backup uploaded", "to", b.Bucket.Target().String()+name, "bytes", size)
	}
	if b.pruneDue {
		if err := b.prune(ctx); err != nil {
			return err
		}
		b.pruneDue = false
	}
	return nil
}

// upload streams a backup into the bucket as name: the store writes its
// copy into a pipe the client reads from, so no more than one part of
// it is in memory. It fails when the transfer makes no progress for the
// bucket's stall time (Options.Stall).
func (b *Backups) upload(ctx context.Context, name string) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	sized := make(chan int64, 1)
	done := make(chan error, 1)
	go func() {
		_, err := b.Backup(ctx, pw, func(size int64) { sized <- size })
		pw.CloseWithError(cmpErr(err, io.EOF))
		done <- err
	}()
	var size int64
	select {
	case size = <-sized:
	case err := <-done:
		// The copy failed before it started.
		return 0, fmt.Errorf("backup of the data file: %w", cmpErr(err, errors.New("it wrote nothing")))
	}
	err := b.Bucket.put(ctx, name, pr, size)
	pr.CloseWithError(cmpErr(err, io.ErrClosedPipe)) // unblocks the copy if the upload stopped early
	cancel()                                         // and ends a copy that waits on ctx
	werr := <-done
	switch {
	case werr != nil && !errors.Is(werr, io.ErrClosedPipe) && (err == nil || !errors.Is(werr, err)):
		// The copy failed (not merely stopped by the upload's end).
		return 0, fmt.Errorf("backup of the data file: %w", werr)
	case err != nil:
		return 0, err
	}
	return size, nil
}

// cmpErr returns err, or def when err is nil.
func cmpErr(err, def error) error {
	if err == nil {
		return def
	}
	return err
}

// prune deletes the backups beyond the newest Keep. Names sort by time,
// and only latchkey's own names are listed, so nothing else under the
// prefix is touched.
func (b *Backups) prune(ctx context.Context) error {
	if b.Keep <= 0 {
		return nil
	}
	list, err := b.Bucket.List(ctx)
	if err != nil {
		return fmt.Errorf("the backup was uploaded, but listing the older ones failed: %w", err)
	}
	for _, o := range list[min(b.Keep, len(list)):] {
		if err := b.Bucket.remove(ctx, o.Name); err != nil {
			return fmt.Errorf("the backup was uploaded, but deleting an older one failed: %w", err)
		}
		b.log().Info("old backup deleted", "object", b.Bucket.Target().String()+o.Name, "keep", b.Keep)
	}
	return nil
}
