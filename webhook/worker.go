package webhook

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"latchkey/store"
)

// Worker delivers outbox events to webhooks: it fans each event out to
// the project's matching webhooks as queued jobs (one transaction per
// chunk), then POSTs due jobs with bounded concurrency, at most
// PerWebhook at once per webhook so one slow receiver cannot hold every
// slot. Every attempt is recorded; failures retry on the decided
// schedule. Delivery is at least once: a job leaves the queue only after
// its outcome commits.
type Worker struct {
	DB     *store.DB
	Keys   *store.Keyring
	Client *http.Client
	Now    func() time.Time
	Logger *slog.Logger
	// AllowPrivate lets live-mode webhooks reach private addresses.
	AllowPrivate bool
	// Concurrency bounds deliveries in flight (default 64); PerWebhook
	// bounds them per webhook (default 8).
	Concurrency int
	PerWebhook  int
	// Wake is called when an attempt finishes, so the owner runs
	// RunOnce again (more jobs may be due or freed).
	Wake func()
	// Busy, when set, reports that the API is saturated. While it does,
	// the worker yields to the API: it starts at most one delivery per
	// BusyPace (default 2 ms), so a backlog keeps draining at a small,
	// bounded share of the CPU instead of competing with requests.
	// Deliveries in flight are not touched, and a hanging receiver still
	// holds only its own slots.
	Busy     func() bool
	BusyPace time.Duration

	mu        sync.Mutex
	inflight  map[uint64]bool // job seq
	perHook   map[string]int
	hooks     map[string]*hookEntry // webhook id → decrypted secret etc.
	wg        sync.WaitGroup
	timer     *time.Timer
	timerAt   time.Time
	lastHook  string      // the webhook served last: the next scan starts after it
	nextStart time.Time   // while busy: no delivery starts before this
	paceTimer *time.Timer // while busy: wakes the owner at nextStart
}

type hookEntry struct {
	url          string
	secret       string
	allowPrivate bool
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
	if w.Client == nil {
		w.Client = NewClient(DefaultTimeout)
	}
	if w.Logger == nil {
		w.Logger = slog.Default()
	}
	if w.Wake == nil {
		w.Wake = func() {}
	}
	if w.BusyPace <= 0 {
		w.BusyPace = 2 * time.Millisecond
	}
	w.inflight = map[uint64]bool{}
	w.perHook = map[string]int{}
	w.hooks = map[string]*hookEntry{}
}

// RunOnce fans out pending outbox events and starts every due delivery
// it has room for; it does not wait for them (Wait does). Safe to call
// concurrently with deliveries in flight.
func (w *Worker) RunOnce(ctx context.Context) error {
	w.mu.Lock()
	w.init()
	w.mu.Unlock()
	for {
		n, err := w.fanOut()
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	return w.dispatch(ctx)
}

// Wait blocks until every delivery in flight has finished.
func (w *Worker) Wait() { w.wg.Wait() }

// Close stops the retry timer and waits for deliveries in flight.
func (w *Worker) Close() {
	w.mu.Lock()
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
func (w *Worker) fanOut() (int, error) {
	// Most wake-ups find the outbox empty: check with a read transaction
	// rather than paying for a write commit (and its fsync) each time.
	var pending bool
	if err := w.DB.View(func(tx *store.Tx) error {
		pending = tx.HasEvents()
		return nil
	}); err != nil || !pending {
		return 0, err
	}
	n := 0
	err := w.DB.Update(func(tx *store.Tx) error {
		n = 0
		evs, err := tx.EventsAfter(0, fanOutChunk)
		if err != nil {
			return err
		}
		hooks := map[string][]*store.Webhook{}
		now := w.Now().UTC()
		for _, e := range evs {
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
		return nil
	})
	return n, err
}

// dispatch starts due jobs while there is room, then arms a timer for
// the next due job. While the API is busy it starts at most one job per
// BusyPace.
func (w *Worker) dispatch(ctx context.Context) error {
	for {
		w.mu.Lock()
		room := w.Concurrency - len(w.inflight)
		w.mu.Unlock()
		if room <= 0 {
			return nil
		}
		paced := w.Busy != nil && w.Busy()
		if paced {
			if !w.mayStart() {
				return nil
			}
			room = 1
		}
		var jobs []*store.Job
		err := w.DB.View(func(tx *store.Tx) error {
			var err error
			w.mu.Lock()
			defer w.mu.Unlock()
			jobs, err = tx.DueJobs(w.Now(), room, w.lastHook,
				func(hook string) int { return w.PerWebhook - w.perHook[hook] },
				func(seq uint64) bool { return w.inflight[seq] })
			return err
		})
		if err != nil {
			return err
		}
		started := 0
		for _, j := range jobs {
			h, err := w.hook(j)
			if err != nil {
				return err
			}
			w.mu.Lock()
			if w.inflight[j.Seq] || w.perHook[j.WebhookID] >= w.PerWebhook || len(w.inflight) >= w.Concurrency {
				w.mu.Unlock()
				continue
			}
			w.inflight[j.Seq] = true
			w.perHook[j.WebhookID]++
			w.lastHook = j.WebhookID
			w.mu.Unlock()
			started++
			w.wg.Add(1)
			go w.deliver(ctx, j, h)
		}
		if started == 0 {
			w.armTimer()
			return nil
		}
		if paced {
			w.pace()
			return nil
		}
	}
}

// mayStart reports whether a paced delivery may start now; if not, the
// pacing timer is set to wake the owner when one may.
func (w *Worker) mayStart() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if time.Until(w.nextStart) <= 0 {
		return true
	}
	w.armPaceLocked()
	return false
}

// pace records that a paced delivery started and sets the pacing timer,
// so the owner comes back for the next one after BusyPace.
func (w *Worker) pace() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextStart = time.Now().Add(w.BusyPace)
	w.armPaceLocked()
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
func (w *Worker) armTimer() {
	var next time.Time
	var ok bool
	w.DB.View(func(tx *store.Tx) error {
		next, ok = tx.NextJobAt()
		return nil
	})
	if !ok {
		return
	}
	d := next.Sub(w.Now())
	if d < 0 {
		return // due now but blocked by limits; a finishing delivery wakes us
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil && !w.timerAt.IsZero() && w.timerAt.Before(next) && time.Until(w.timerAt) > 0 {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.timerAt = time.Now().Add(d)
	w.timer = time.AfterFunc(d, w.Wake)
}

// hook returns the webhook's URL, secret and policy, cached.
func (w *Worker) hook(j *store.Job) (*hookEntry, error) {
	w.mu.Lock()
	h := w.hooks[j.WebhookID]
	w.mu.Unlock()
	if h != nil {
		return h, nil
	}
	var wh *store.Webhook
	err := w.DB.View(func(tx *store.Tx) error {
		var err error
		wh, err = tx.Webhook(j.ProjectID, j.WebhookID)
		return err
	})
	if err != nil {
		return &hookEntry{}, nil // deleted: the attempt will find its job gone
	}
	secret, err := w.Keys.Open(wh.Secret, []byte("webhook:"+wh.ID))
	if err != nil {
		return nil, err
	}
	h = &hookEntry{url: wh.URL, secret: string(secret), allowPrivate: w.AllowPrivate || wh.Mode == "test"}
	w.mu.Lock()
	w.hooks[j.WebhookID] = h
	w.mu.Unlock()
	return h, nil
}

// deliver makes one attempt and records its outcome.
func (w *Worker) deliver(ctx context.Context, j *store.Job, h *hookEntry) {
	defer w.wg.Done()
	defer func() {
		w.mu.Lock()
		delete(w.inflight, j.Seq)
		w.perHook[j.WebhookID]--
		if w.perHook[j.WebhookID] <= 0 {
			delete(w.perHook, j.WebhookID)
		}
		w.mu.Unlock()
		w.Wake()
	}()
	var res Result
	if h.url == "" {
		res.Err = ErrNotFound
	} else {
		hdr := Headers(h.secret, j.EventID, j.Attempt, w.Now(), j.Body)
		res = Post(WithAllowPrivate(ctx, h.allowPrivate), w.Client, h.url, hdr, j.Body)
	}
	if ctx.Err() != nil {
		return // shutting down: the job stays queued and is retried after restart
	}
	now := w.Now().UTC()
	d := &store.Delivery{ID: newID(), WebhookID: j.WebhookID, EventID: j.EventID, EventType: j.EventType, Attempt: j.Attempt,
		ResponseStatus: res.Status, DurationMS: res.Duration.Milliseconds(), CreatedAt: now}
	var next *store.Job
	switch {
	case res.OK():
		d.Status = "succeeded"
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
	err := w.DB.Batch(func(tx *store.Tx) error {
		present, err := tx.DeleteJob(j)
		if err != nil || !present {
			return err // the webhook was deleted meanwhile: keep no history
		}
		if err := tx.AddDelivery(d); err != nil {
			return err
		}
		if next != nil {
			return tx.EnqueueJob(next)
		}
		return nil
	})
	if err != nil {
		w.Logger.Error("record webhook delivery", "webhook", j.WebhookID, "event", j.EventID, "err", err)
	}
}

// errorText describes a failed attempt without secrets.
func errorText(r Result) string {
	if r.Err != nil {
		return r.Err.Error()
	}
	return http.StatusText(r.Status)
}
