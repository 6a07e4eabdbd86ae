package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"latchkey/internal/background"
	"latchkey/store"
)

// Worker delivers outbox events to webhooks: it fans each event out to
// the project's matching webhooks as queued jobs (one transaction per
// chunk), then POSTs due jobs with bounded concurrency. Every attempt is
// recorded; failures retry on the decided schedule. Delivery is at least
// once: a job leaves the queue only after its outcome commits.
//
// Each webhook's deliveries are ordered: one attempt at a time, earliest
// due first (a first attempt is due when its event is fanned out, so first
// attempts go in outbox order), and the next attempt starts as soon as the
// previous one has its answer (whose record commits meanwhile, through the
// group commit). A failed attempt
// does not hold up later events: it is rescheduled per the retry schedule
// and takes its turn again when due. Only while more than Backlog jobs of
// one webhook are due and waiting does the worker run up to PerWebhook of
// them at once, in due order but without ordering between them, so a
// backlog drains at full speed; it returns to one at a time once the
// backlog is down to Backlog.
//
// Start runs the worker in a goroutine of its own (RunOnce at start,
// when woken and every Interval) until Close; tests may instead call
// RunOnce themselves, with OnWake telling them when to call it again.
type Worker struct {
	DB     store.DB
	Keys   *store.Keyring
	Client *http.Client
	Now    func() time.Time
	Logger *slog.Logger
	// AllowPrivate lets webhooks of both modes reach private addresses
	// (otherwise live mode reaches public addresses only and test mode
	// public and loopback ones; see ReachFor).
	AllowPrivate bool
	// Concurrency bounds attempts in flight (default 64); PerWebhook
	// bounds them per webhook while it has a backlog (default 8).
	// Outcomes waiting for their commit are bounded by Concurrency too.
	Concurrency int
	PerWebhook  int
	// Backlog is how many due jobs a webhook may have waiting before its
	// deliveries stop being one at a time (default 64).
	Backlog int
	// Interval is the longest time between runs once started (default
	// a minute): Wake and the retry timers start most of them.
	Interval time.Duration
	// OnWake, when set, is called whenever the worker wakes itself (an
	// attempt's outcome is recorded, a retry or the pacing falls due), so
	// a test driving RunOnce by hand runs it again.
	OnWake func()
	// Busy, when set, reports that the API is saturated. While it does,
	// the worker yields to the API: it starts at most one delivery per
	// BusyPace (default 2 ms), so a backlog keeps draining at a small,
	// bounded share of the CPU instead of competing with requests.
	// Deliveries in flight are not touched, and a hanging receiver still
	// holds only its own slots.
	Busy     func() bool
	BusyPace time.Duration
	// Outcome, when set, is told each attempt's recorded status once it
	// commits: "succeeded", "pending" (failed, retried later) or
	// "failed" (failed for good). It must be quick (metrics).
	Outcome func(status string)
	// Hold, when set, says whether this replica delivers webhooks now
	// (it holds the webhooks lease, among replicas sharing a database):
	// while it is false no event is fanned out and no delivery starts
	// (those in flight finish and record their outcome), so each
	// webhook's deliveries go out from one replica, in order. Nil:
	// always.
	Hold func() bool
	// Backchannel, when set, prepares each attempt to deliver an OpenID
	// back-channel logout event (store.BackchannelLogoutEvent) of
	// projectID, data being the event's: the URL to post to and the
	// form to post (it signs a fresh logout token). store.ErrNotFound
	// drops the delivery (nothing to tell any more); another error is
	// a failed attempt, retried on the webhooks' schedule. Nil: such
	// events fail and are retried until it is set.
	Backchannel func(ctx context.Context, projectID string, data []byte) (target string, form []byte, err error)

	task background.Task // the goroutine of Start

	mu        sync.Mutex
	inflight  map[uint64]bool  // seqs of claimed jobs: attempts in flight and outcomes being recorded
	attempts  int              // attempts in flight, all webhooks
	lanes     map[string]*lane // webhooks with claimed jobs
	closed    bool
	wg        sync.WaitGroup
	timer     *time.Timer
	timerAt   time.Time
	lastHook  string      // the webhook served last: the next scan starts after it
	nextStart time.Time   // while busy: no delivery starts before this
	paceTimer *time.Timer // while busy: wakes the owner at nextStart
	lastDue   time.Time   // due time of the last fanned-out job (first attempts never sort before it)
}

// lane is a webhook with claimed jobs. It exists only while it has some,
// so the cached secret of a deleted webhook goes with its last job.
type lane struct {
	attempts int // attempts in flight
	claimed  int // claimed jobs: attempts plus outcomes being recorded
	hook     *hookEntry
}

type hookEntry struct {
	url    string
	secret string
	reach  Reach
	// backchannel: the target is a client's back-channel logout URI
	// (Worker.Backchannel), not a webhook.
	backchannel bool
}

func (w *Worker) init() {
	if w.inflight != nil {
		return
	}
	if w.Concurrency <= 0 {
		w.Concurrency = 64
	}
	if w.PerWebhook <= 0 {
		w.PerWebhook = 8
	}
	if w.Backlog <= 0 {
		w.Backlog = 64
	}
	if w.Client == nil {
		w.Client = NewClient(DefaultTimeout)
	}
	if w.Logger == nil {
		w.Logger = slog.Default()
	}
	if w.BusyPace <= 0 {
		w.BusyPace = 2 * time.Millisecond
	}
	w.inflight = map[uint64]bool{}
	w.lanes = map[string]*lane{}
}

// RunOnce fans out pending outbox events and starts every due delivery
// it has room for; it does not wait for them (Wait does). Safe to call
// concurrently with deliveries in flight.
func (w *Worker) RunOnce(ctx context.Context) error {
	w.mu.Lock()
	w.init()
	w.mu.Unlock()
	for {
		n, err := w.fanOut(ctx)
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	return w.dispatch(ctx)
}

// Start runs the worker until Close: RunOnce at once (deliveries left
// from before a restart), whenever woken, and at least every Interval.
// Deliveries run under the worker's own context, which Close cancels.
func (w *Worker) Start() {
	interval := w.Interval
	if interval <= 0 {
		interval = time.Minute
	}
	w.task.Name, w.task.Interval, w.task.AtStart, w.task.Run, w.task.Logger = "webhooks", interval, true, w.RunOnce, w.Logger
	w.task.Quiet = store.WriteFailed // the store logs failed writes once a minute
	w.task.Hold = w.Hold
	w.task.Start()
}

// Wake makes the worker run again soon: after a commit that wrote
// outbox events, and when it wakes itself. It never blocks.
func (w *Worker) Wake() {
	w.task.Wake()
	if w.OnWake != nil {
		w.OnWake()
	}
}

// Wait blocks until every delivery in flight has finished.
func (w *Worker) Wait() { w.wg.Wait() }

// Close stops the worker: it cancels its context (a delivery in flight
// ends, its job stays queued for a later attempt), stops the retry
// timers, starts no more deliveries, and waits for those in flight.
func (w *Worker) Close() {
	w.task.Close()
	w.mu.Lock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.paceTimer != nil {
		w.paceTimer.Stop()
	}
	w.mu.Unlock()
	w.wg.Wait()
}

const fanOutChunk = 500

// envelope is the body every delivery of an event sends.
type envelope struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt string          `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

// fanOut turns up to fanOutChunk outbox events into jobs, in one
// transaction, and returns how many events it took.
func (w *Worker) fanOut(ctx context.Context) (int, error) {
	if w.Hold != nil && !w.Hold() {
		return 0, nil // another replica delivers
	}
	// Most wake-ups find the outbox empty: check with a read transaction
	// rather than paying for a write commit (and its fsync) each time.
	var pending bool
	if err := w.DB.View(ctx, func(tx store.Tx) (err error) {
		pending, err = tx.HasEvents()
		return err
	}); err != nil || !pending {
		return 0, err
	}
	n := 0
	// One function of a group commit, beside the requests' writes; it
	// may run twice (n starts over, lastDue only grows).
	err := w.DB.Batch(ctx, func(tx store.Tx) error {
		n = 0
		evs, err := tx.EventsAfter(0, fanOutChunk)
		if err != nil {
			return err
		}
		hooks := map[string][]*store.Webhook{}
		// First attempts are due now, and never before the previous
		// chunk's (a clock stepped back must not put later events first).
		now := w.Now().UTC()
		if now.Before(w.lastDue) {
			now = w.lastDue
		}
		for _, e := range evs {
			if e.Type == store.BackchannelLogoutEvent {
				// Not a webhook event: one job of the client's own queue.
				if err := enqueueBackchannel(tx, e, now); err != nil {
					return err
				}
				if err := tx.DeleteEvent(e.Seq); err != nil {
					return err
				}
				n++
				continue
			}
			ws, ok := hooks[e.ProjectID]
			if !ok {
				if ws, err = tx.Webhooks(e.ProjectID); err != nil {
					return err
				}
				hooks[e.ProjectID] = ws
			}
			var body []byte
			for _, h := range ws {
				if h.EventTypes != nil && !slices.Contains(h.EventTypes, e.Type) {
					continue
				}
				if body == nil {
					body, err = json.Marshal(envelope{ID: e.ID, Type: e.Type, CreatedAt: e.CreatedAt.UTC().Format(timeFormat), Data: e.Data})
					if err != nil {
						return err
					}
				}
				j := &store.Job{WebhookID: h.ID, ProjectID: h.ProjectID, EventID: e.ID, EventType: e.Type, Body: body, Attempt: 1, CreatedAt: now, NextAttemptAt: now}
				if err := tx.EnqueueJob(j); err != nil {
					return err
				}
			}
			if err := tx.DeleteEvent(e.Seq); err != nil {
				return err
			}
			n++
		}
		w.lastDue = now // only inside the write transaction: the committer runs them one at a time
		return nil
	})
	return n, err
}

// enqueueBackchannel queues back-channel logout event e, due at now,
// in its client's queue (store.BackchannelTarget). An event whose data
// cannot be read is dropped.
func enqueueBackchannel(tx store.Tx, e *store.Event, now time.Time) error {
	var d store.BackchannelLogout
	if err := json.Unmarshal(e.Data, &d); err != nil || d.ClientID == "" {
		return nil
	}
	return tx.EnqueueJob(&store.Job{WebhookID: store.BackchannelTarget(e.ProjectID, d.ClientID), ProjectID: e.ProjectID,
		EventID: e.ID, EventType: e.Type, Body: e.Data, Attempt: 1, CreatedAt: now, NextAttemptAt: now})
}

// dispatch starts due jobs while there is room, then arms a timer for
// the next due job. While the API is busy it starts at most one job per
// BusyPace. Deliveries call it too, as soon as their attempt has its
// answer, so a webhook's next event goes out without waiting for the
// owner or for the previous outcome's commit.
func (w *Worker) dispatch(ctx context.Context) error {
	for ctx.Err() == nil {
		paced := w.Busy != nil && w.Busy()
		jobs, room, err := w.claim(ctx, paced)
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			if room > 0 {
				w.armTimer(ctx)
			}
			return nil
		}
		for _, c := range jobs {
			w.wg.Add(1)
			go w.deliver(ctx, c.job, c.hook)
		}
		if paced {
			return nil // the pacing timer wakes the owner for the next
		}
		if len(jobs) < room {
			// Nothing else may start now; each delivery just started
			// dispatches again when it has its answer.
			return nil
		}
	}
	return nil
}

// claimed is a job taken for an attempt, with its webhook's target.
type claimed struct {
	job  *store.Job
	hook *hookEntry
}

// claim picks the due jobs that may start now and marks them in flight,
// all under w.mu, so concurrent dispatchers never start the same job,
// break a webhook's order or, paced, start two jobs within BusyPace. The
// read transaction begins under w.mu too: a job released before it began
// (its outcome committed) is not in its snapshot, and one released after
// is still marked in flight.
func (w *Worker) claim(ctx context.Context, paced bool) (jobs []claimed, room int, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || (w.Hold != nil && !w.Hold()) {
		return nil, 0, nil // closed, or another replica delivers
	}
	if paced && time.Until(w.nextStart) > 0 {
		w.armPaceLocked() // wakes the owner when the next may start
		return nil, 0, nil
	}
	room = min(w.Concurrency-w.attempts, w.Concurrency*2-len(w.inflight))
	if paced {
		room = min(room, 1)
	}
	if room <= 0 {
		return nil, 0, nil
	}
	var out []claimed
	err = w.DB.View(ctx, func(tx store.Tx) error {
		jobs, err := tx.DueJobs(w.Now(), room, w.lastHook, w.Backlog+1, w.roomLocked,
			func(seq uint64) bool { return w.inflight[seq] })
		if err != nil {
			return err
		}
		for _, j := range jobs {
			l := w.lanes[j.WebhookID]
			if l == nil {
				h, err := w.load(tx, j)
				if err != nil {
					return err
				}
				l = &lane{hook: h}
				w.lanes[j.WebhookID] = l
			}
			w.inflight[j.Seq] = true
			w.attempts++
			l.attempts++
			l.claimed++
			w.lastHook = j.WebhookID
			out = append(out, claimed{j, l.hook})
		}
		return nil
	})
	if err != nil {
		for _, c := range out {
			w.releaseLocked(c.job, true)
		}
		return nil, 0, err
	}
	if paced && len(out) > 0 {
		w.nextStart = time.Now().Add(w.BusyPace)
		w.armPaceLocked()
	}
	return out, room, nil
}

// roomLocked says how many of a webhook's due jobs may start: one, when
// none of its attempts is in flight; up to PerWebhook at once while more
// than Backlog are due and waiting.
func (w *Worker) roomLocked(hook string, due int) int {
	inFlight := 0
	if l := w.lanes[hook]; l != nil {
		inFlight = l.attempts
	}
	if due > w.Backlog {
		return w.PerWebhook - inFlight
	}
	if inFlight > 0 {
		return 0
	}
	return 1
}

// attemptDoneLocked notes that j's attempt has its answer: the next job
// of its webhook may start while the outcome is being recorded.
func (w *Worker) attemptDoneLocked(j *store.Job) {
	w.attempts--
	w.lanes[j.WebhookID].attempts--
}

// releaseLocked forgets claimed job j (its outcome is recorded, or
// dropped); attempt says its attempt had not finished. A webhook's lane,
// with its cached secret, goes with its last claimed job.
func (w *Worker) releaseLocked(j *store.Job, attempt bool) {
	if attempt {
		w.attemptDoneLocked(j)
	}
	delete(w.inflight, j.Seq)
	l := w.lanes[j.WebhookID]
	if l.claimed--; l.claimed == 0 {
		delete(w.lanes, j.WebhookID)
	}
}

// armPaceLocked sets the pacing timer to call Wake at nextStart.
func (w *Worker) armPaceLocked() {
	d := time.Until(w.nextStart)
	if w.paceTimer == nil {
		w.paceTimer = time.AfterFunc(d, w.Wake)
		return
	}
	w.paceTimer.Reset(d)
}

// armTimer wakes the owner when the earliest queued job falls due.
func (w *Worker) armTimer(ctx context.Context) {
	var next time.Time
	var ok bool
	err := w.DB.View(ctx, func(tx store.Tx) (err error) {
		next, ok, err = tx.NextJobAt()
		return err
	})
	if err != nil || !ok {
		return
	}
	d := next.Sub(w.Now())
	if d < 0 {
		return // due now but blocked by limits; a finishing delivery wakes us
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if w.timer != nil && !w.timerAt.IsZero() && w.timerAt.Before(next) && time.Until(w.timerAt) > 0 {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timerAt = time.Now().Add(d)
	w.timer = time.AfterFunc(d, w.Wake)
}

// load reads j's webhook: its URL, secret and policy. A webhook
// deleted meanwhile gets an empty entry: the attempt finds its job gone.
func (w *Worker) load(tx store.Tx, j *store.Job) (*hookEntry, error) {
	if strings.HasPrefix(j.WebhookID, store.BackchannelJobPrefix) {
		// A client's back-channel logout URI: registered by the
		// project's admin, https or http on loopback, so loopback is
		// reachable, private addresses only when allowed.
		return &hookEntry{backchannel: true, reach: ReachFor("test", w.AllowPrivate)}, nil
	}
	wh, err := tx.Webhook(j.ProjectID, j.WebhookID)
	if err != nil {
		return &hookEntry{}, nil
	}
	secret, err := w.Keys.Open(wh.Secret, []byte("webhook:"+wh.ID))
	if err != nil {
		return nil, err
	}
	return &hookEntry{url: wh.URL, secret: string(secret), reach: ReachFor(ModeOf(wh), w.AllowPrivate)}, nil
}

// deliver makes one attempt and records its outcome. Once the attempt
// has its answer it lets the webhook's next job start, then commits.
func (w *Worker) deliver(ctx context.Context, j *store.Job, h *hookEntry) {
	defer w.wg.Done()
	var res Result
	drop := false
	if h.backchannel {
		res, drop = w.postBackchannel(ctx, j, h)
	} else if h.url == "" {
		res.Err = ErrNotFound
	} else {
		hdr := Headers(h.secret, j.EventID, j.Attempt, w.Now(), j.Body)
		res = Post(WithReach(ctx, h.reach), w.Client, h.url, hdr, j.Body)
	}
	if ctx.Err() != nil {
		// Shutting down: the job stays queued and is retried after restart.
		w.mu.Lock()
		w.releaseLocked(j, true)
		w.mu.Unlock()
		return
	}
	w.mu.Lock()
	w.attemptDoneLocked(j)
	w.mu.Unlock()
	if err := w.dispatch(ctx); err != nil {
		w.Logger.Error("start webhook deliveries", "err", err)
	}
	// The attempt is made: its outcome is recorded even if Close
	// cancels ctx meanwhile, or the job would be sent again.
	w.record(context.WithoutCancel(ctx), j, res, h.backchannel, drop)
	w.mu.Lock()
	w.releaseLocked(j, false)
	w.mu.Unlock()
	w.Wake()
}

// errBackchannelOff fails back-channel logout deliveries while the
// worker cannot prepare them (Worker.Backchannel is nil).
var errBackchannelOff = errors.New("webhook: back-channel logout deliveries are not set up")

// postBackchannel makes an attempt to deliver back-channel logout job j:
// the form Worker.Backchannel prepares, posted to the client's URI.
// drop says there is nothing to deliver any more.
func (w *Worker) postBackchannel(ctx context.Context, j *store.Job, h *hookEntry) (res Result, drop bool) {
	if w.Backchannel == nil {
		return Result{Err: errBackchannelOff}, false
	}
	target, form, err := w.Backchannel(ctx, j.ProjectID, j.Body)
	if errors.Is(err, store.ErrNotFound) {
		return Result{Err: ErrNotFound}, true
	} else if err != nil {
		return Result{Err: err}, false
	}
	hdr := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "User-Agent": {UserAgent}}
	return Post(WithReach(ctx, h.reach), w.Client, target, hdr, form), false
}

// record commits an attempt's outcome: the job leaves the queue, the
// attempt is recorded, and a failure is queued again per the schedule.
// A back-channel logout's attempts (backchannel) are logged rather
// than recorded (no webhook shows them); drop ends one without retry.
func (w *Worker) record(ctx context.Context, j *store.Job, res Result, backchannel, drop bool) {
	now := w.Now().UTC()
	d := &store.Delivery{ID: newID(), WebhookID: j.WebhookID, EventID: j.EventID, EventType: j.EventType, Attempt: j.Attempt,
		ResponseStatus: res.Status, DurationMS: res.Duration.Milliseconds(), CreatedAt: now}
	var next *store.Job
	switch {
	case res.OK():
		d.Status = "succeeded"
	case drop:
		d.Status, d.Error = "failed", errorText(res)
	default:
		d.Error = errorText(res)
		if delay, retry := NextDelay(j.Attempt, res.RetryAfter); retry {
			d.Status = "pending"
			at := now.Add(delay)
			d.NextAttemptAt = &at
			nj := *j
			nj.Attempt++
			nj.NextAttemptAt = at
			next = &nj
		} else {
			d.Status = "failed"
		}
	}
	var recorded bool
	err := w.DB.Batch(ctx, func(tx store.Tx) error {
		present, err := tx.DeleteJob(j)
		recorded = present
		if err != nil || !present {
			return err // the webhook was deleted meanwhile: keep no history
		}
		if backchannel {
			if next != nil {
				return tx.EnqueueJob(next)
			}
			return nil
		}
		if err := tx.AddDelivery(d); err != nil {
			return err
		}
		if next != nil {
			return tx.EnqueueJob(next)
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrWriteFailed) { // the store logs those
		w.Logger.Error("record webhook delivery", "webhook", j.WebhookID, "event", j.EventID, "err", err)
	} else if backchannel {
		if recorded && d.Status != "succeeded" && !drop {
			w.Logger.Warn("back-channel logout delivery failed", "project", j.ProjectID, "target", j.WebhookID,
				"event", j.EventID, "attempt", j.Attempt, "status", d.Status, "err", d.Error)
		}
	} else if recorded && w.Outcome != nil {
		w.Outcome(d.Status)
	}
}

// errorText describes a failed attempt without secrets.
func errorText(r Result) string {
	if r.Err != nil {
		return r.Err.Error()
	}
	return http.StatusText(r.Status)
}
