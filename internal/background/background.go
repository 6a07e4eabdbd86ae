// Package background runs latchkey's background work the way litestream's
// Store does: every task is one goroutine with an owner, started by Start
// with its own context and stopped by Close (cancel(); wg.Wait()); its
// loop is a ticker and a wake channel in a select with ctx.Done().
// Components own their Task (the mail queue, the webhook worker; main
// owns the sweeps) and expose RunOnce(ctx) so tests drive them without
// sleeping.
package background

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Task runs Run in its own goroutine: once at start when AtStart, then
// every Interval and whenever woken (a wake while it runs makes it run
// once more), never two runs at once. Set the fields, then Start; a
// Task's zero value is not runnable. Start, Wake and Close are safe for
// concurrent use; Wake and Close work on a Task never started.
type Task struct {
	// Name names the task in the log.
	Name string
	// Interval is the longest time between runs.
	Interval time.Duration
	// AtStart runs Run as soon as the task starts (work left from before
	// a restart), instead of one Interval later.
	AtStart bool
	// Run does one round of the work. ctx is cancelled by Close: Run
	// returns soon after. An error is logged (unless ctx was cancelled,
	// or Quiet says so) and the task goes on. Each run's duration is
	// logged at debug level.
	Run func(ctx context.Context) error
	// Quiet, when set, tells errors its owner logs elsewhere (a failed
	// store write: the store logs those once a minute with their count).
	Quiet func(error) bool
	// Logger receives the errors of Run; nil means slog.Default().
	Logger *slog.Logger
	// Hold, when set, says whether this replica may run the task now
	// (it holds the task's lease: Leases.Gate): a tick or wake-up that
	// finds it false runs nothing. Nil: always.
	Hold func() bool

	once   sync.Once
	wake   chan struct{}
	mu     sync.Mutex
	cancel context.CancelFunc // set by Start
	wg     sync.WaitGroup
}

func (t *Task) init() { t.once.Do(func() { t.wake = make(chan struct{}, 1) }) }

// Start starts the task's goroutine under a context of its own. Calling
// it again, or after Close, does nothing.
func (t *Task) Start() {
	t.init()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel = cancel
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.loop(ctx)
	}()
}

func (t *Task) loop(ctx context.Context) {
	tick := time.NewTicker(t.Interval)
	defer tick.Stop()
	if t.AtStart {
		t.runOnce(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-t.wake:
		}
		t.runOnce(ctx)
	}
}

func (t *Task) runOnce(ctx context.Context) {
	if t.Hold != nil && !t.Hold() {
		return // another replica runs it
	}
	log := t.Logger
	if log == nil {
		log = slog.Default()
	}
	start := time.Now()
	err := t.Run(ctx)
	log.Debug("background task ran", "task", t.Name, "took", time.Since(start))
	if err != nil && ctx.Err() == nil && (t.Quiet == nil || !t.Quiet(err)) {
		log.Error("background task failed", "task", t.Name, "err", err)
	}
}

// Wake makes the task run soon (at once when idle, after the current run
// otherwise). It never blocks; wakes while one is pending count as one.
func (t *Task) Wake() {
	t.init()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Close cancels the task's context and waits for its goroutine to end:
// once it returns, Run is not running and does not run again.
func (t *Task) Close() {
	t.mu.Lock()
	cancel := t.cancel
	if cancel == nil {
		t.cancel = func() {} // never started: Start does nothing now
	}
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	t.wg.Wait()
}
