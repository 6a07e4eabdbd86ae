package mail

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"latchkey/internal/background"
	"latchkey/store"
)

// MaxRetryAge is how long the queue keeps retrying a message that fails
// transiently or for a configuration reason; after it the message is
// dropped (its code or link has expired by then).
const MaxRetryAge = time.Hour

// retryDelays is the wait after the nth failed attempt; the last entry
// repeats.
var retryDelays = []time.Duration{5 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute}

// RetryDelay returns the wait after attempt n (1-based) failed.
func RetryDelay(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > len(retryDelays) {
		return retryDelays[len(retryDelays)-1]
	}
	return retryDelays[n-1]
}

// Queue sends the store's queued mail. Start runs it in a goroutine of
// its own until Close: RunOnce at start, whenever woken (Wake, after a
// commit that queued a message), at the next retry time and at least
// every Interval. Tests may call RunOnce themselves instead. A message
// leaves the queue only once it was handed over (or failed for good), so
// a restart loses none and may at worst send one twice.
type Queue struct {
	DB        store.DB
	Keys      *store.Keyring
	Transport Transport
	From      string
	Now       func() time.Time
	Logger    *slog.Logger
	// Concurrency bounds sends in flight (default 8).
	Concurrency int
	// Interval is the longest time between runs once started (default
	// a minute).
	Interval time.Duration
	// Hold, when set, says whether this replica sends mail now (it holds
	// the mail lease, among replicas sharing a database): while it is
	// false RunOnce sends nothing and Start's runs do nothing, so each
	// message is sent by one replica. Nil: always.
	Hold func() bool

	task    background.Task // the goroutine of Start
	mu      sync.Mutex
	started bool        // Start was called: retries arm the timer
	timer   *time.Timer // wakes the task at the next retry

	// The transport's configuration failure, for ConfigError and the
	// once-a-minute log line.
	cfgMu       sync.Mutex
	cfgErr      error
	cfgLoggedAt time.Time
	cfgMissed   int // configuration failures since the last log line
}

// ConfigErrorLogInterval is how often a configuration failure that
// persists is logged: once per interval, not once per message.
const ConfigErrorLogInterval = time.Minute

// ConfigError returns the transport's last configuration failure (a
// *ConfigError: credentials refused, certificate not trusted, ...) while
// it lasts, or nil: a later successful send clears it. Readiness checks
// report it. Safe for concurrent use.
func (q *Queue) ConfigError() error {
	q.cfgMu.Lock()
	defer q.cfgMu.Unlock()
	return q.cfgErr
}

// noteConfigError records a configuration failure and logs it as an
// error when none was logged within ConfigErrorLogInterval, with the
// count of failures since the last line.
func (q *Queue) noteConfigError(err error) {
	q.cfgMu.Lock()
	now := q.Now()
	q.cfgErr = err
	q.cfgMissed++
	logIt := q.cfgLoggedAt.IsZero() || now.Sub(q.cfgLoggedAt) >= ConfigErrorLogInterval
	missed := q.cfgMissed
	if logIt {
		q.cfgLoggedAt, q.cfgMissed = now, 0
	}
	q.cfgMu.Unlock()
	if logIt {
		q.Logger.Error("mail server configuration error: messages stay queued and are retried; fix the SMTP settings",
			"err", err, "failed_sends", missed)
	}
}

// noteSent clears a recorded configuration failure.
func (q *Queue) noteSent() {
	q.cfgMu.Lock()
	had := q.cfgErr != nil
	q.cfgErr, q.cfgLoggedAt, q.cfgMissed = nil, time.Time{}, 0
	q.cfgMu.Unlock()
	if had {
		q.Logger.Info("mail server accepts messages again: the configuration error is resolved")
	}
}

// batchSize is how many due messages one pass reads.
const batchSize = 64

// RunOnce sends every message that is due, then arms the retry timer.
func (q *Queue) RunOnce(ctx context.Context) error {
	for ctx.Err() == nil {
		if q.Hold != nil && !q.Hold() {
			return nil // another replica sends
		}
		now := q.Now()
		var due []*store.Mail
		if err := q.DB.View(ctx, func(tx store.Tx) (err error) {
			due, err = tx.DueMail(now, batchSize)
			return err
		}); err != nil {
			return err
		}
		if len(due) == 0 {
			break
		}
		if err := q.sendAll(ctx, due); err != nil {
			return err
		}
		if len(due) < batchSize {
			break
		}
	}
	return q.armTimer(ctx)
}

type outcome struct {
	m    *store.Mail
	err  error
	drop bool // sent, or failed for good
}

func (q *Queue) sendAll(ctx context.Context, due []*store.Mail) error {
	n := q.Concurrency
	if n <= 0 {
		n = 8
	}
	out := make([]outcome, len(due))
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, m := range due {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i] = q.send(ctx, m)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil // shutting down: unsent messages stay queued
	}
	now := q.Now()
	// One function of a group commit, beside the requests' writes: the
	// queue's bookkeeping never holds the writer on its own. The
	// function may run twice, so it changes copies.
	return q.DB.Batch(context.WithoutCancel(ctx), func(tx store.Tx) error {
		for _, o := range out {
			if o.drop {
				if err := tx.DeleteMail(o.m.ID); err != nil {
					return err
				}
				continue
			}
			m := *o.m
			m.Attempts++
			m.LastError = o.err.Error()
			m.NextAttemptAt = now.Add(RetryDelay(m.Attempts))
			if err := tx.PutMail(&m); err != nil {
				return err
			}
		}
		return nil
	})
}

// send renders and hands over one message. Log lines name the recipient
// and subject, never the code or link.
func (q *Queue) send(ctx context.Context, sm *store.Mail) outcome {
	log := q.Logger.With("mail_id", sm.ID, "to", sm.To, "kind", sm.Kind)
	msg, err := q.render(sm)
	if err != nil {
		log.Error("mail dropped: cannot render", "err", err)
		return outcome{m: sm, err: err, drop: true}
	}
	err = q.Transport.Send(ctx, msg)
	switch {
	case err == nil:
		q.noteSent()
		if _, local := q.Transport.(*Outbox); local {
			log.Info("mail written to the outbox", "subject", msg.Subject)
		} else {
			log.Info("mail sent", "subject", msg.Subject)
		}
		return outcome{m: sm, drop: true}
	case ctx.Err() != nil:
		return outcome{m: sm, err: err}
	case IsConfig(err):
		// Every message fails alike until the settings change: one
		// error line a minute (noteConfigError), not one per message;
		// the message is retried like a transient failure.
		q.noteConfigError(err)
		if q.Now().Sub(sm.CreatedAt) >= MaxRetryAge {
			log.Error("mail dropped: retried for an hour", "subject", msg.Subject, "attempts", sm.Attempts+1, "err", err)
			return outcome{m: sm, err: err, drop: true}
		}
		log.Debug("mail send failed: configuration error; will retry", "subject", msg.Subject, "attempt", sm.Attempts+1, "err", err)
		return outcome{m: sm, err: err}
	case IsPermanent(err):
		log.Error("mail dropped: permanent failure", "subject", msg.Subject, "err", err)
		return outcome{m: sm, err: err, drop: true}
	case q.Now().Sub(sm.CreatedAt) >= MaxRetryAge:
		log.Error("mail dropped: retried for an hour", "subject", msg.Subject, "attempts", sm.Attempts+1, "err", err)
		return outcome{m: sm, err: err, drop: true}
	default:
		log.Warn("mail send failed; will retry", "subject", msg.Subject, "attempt", sm.Attempts+1, "err", err)
		return outcome{m: sm, err: err}
	}
}

func (q *Queue) render(sm *store.Mail) (*Message, error) {
	body, err := q.Keys.Open(sm.Body, store.MailAAD)
	if err != nil {
		return nil, err
	}
	var c store.MailContent
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, err
	}
	m, err := Render(sm.Kind, sm.To, q.From, c)
	if err != nil {
		return nil, err
	}
	m.ID = "mail-" + strconv.FormatUint(sm.ID, 10)
	m.Date = sm.CreatedAt
	m.ProjectID, m.Kind, m.Code, m.Link = sm.ProjectID, sm.Kind, c.Code, c.Link
	return m, nil
}

// armTimer schedules a wake-up at the earliest pending retry (once
// started; a test driving RunOnce by hand retries when it likes).
func (q *Queue) armTimer(ctx context.Context) error {
	q.mu.Lock()
	started := q.started
	q.mu.Unlock()
	if !started {
		return nil
	}
	var next time.Time
	if err := q.DB.View(ctx, func(tx store.Tx) error {
		return tx.RecentMail(func(m *store.Mail) bool {
			if next.IsZero() || m.NextAttemptAt.Before(next) {
				next = m.NextAttemptAt
			}
			return true
		})
	}); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
	if next.IsZero() {
		return nil
	}
	d := next.Sub(q.Now())
	if d < 0 {
		d = 0
	}
	q.timer = time.AfterFunc(d, q.Wake)
	return nil
}

// Start runs the queue until Close: RunOnce at once (mail queued before
// a restart), whenever woken, at the next retry time and at least every
// Interval. Sends run under the queue's own context, which Close
// cancels.
func (q *Queue) Start() {
	interval := q.Interval
	if interval <= 0 {
		interval = time.Minute
	}
	q.mu.Lock()
	q.started = true
	q.mu.Unlock()
	q.task.Name, q.task.Interval, q.task.AtStart, q.task.Run, q.task.Logger = "mail", interval, true, q.RunOnce, q.Logger
	q.task.Quiet = store.WriteFailed // the store logs failed writes once a minute
	q.task.Hold = q.Hold
	q.task.Start()
}

// Wake makes the queue run again soon (a send call queued a message). It
// never blocks.
func (q *Queue) Wake() { q.task.Wake() }

// Close stops the queue: it cancels its context (a send in progress is
// abandoned; its message stays queued), waits for the run in progress,
// and stops the retry timer.
func (q *Queue) Close() {
	q.task.Close()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
		q.timer = nil
	}
}
