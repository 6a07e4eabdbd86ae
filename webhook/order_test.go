package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"latchkey/internal/testkit"
	"latchkey/store"
	"latchkey/webhook"
)

// arrivals is a local receiver that records, per path, the event ids in
// the order their requests arrived and the most requests it had at once.
type arrivals struct {
	*httptest.Server
	mu      sync.Mutex
	got     map[string][]string
	cur     int
	maxCur  int
	atOnce  []int                  // requests in progress when each arrived, in arrival order
	respond func(event string) int // status for an attempt (nil: 204)
	gate    chan struct{}          // when set, requests wait for it to close
	seen    chan struct{}          // one value per request
}

func newArrivals(t *testing.T) *arrivals {
	a := &arrivals{got: map[string][]string{}, seen: make(chan struct{}, 1024)}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev := r.Header.Get("X-Service-Event-Id")
		if r.Header.Get("X-Service-Delivery-Attempt") != "1" {
			ev += "/" + r.Header.Get("X-Service-Delivery-Attempt")
		}
		a.mu.Lock()
		a.cur++
		a.maxCur = max(a.maxCur, a.cur)
		a.atOnce = append(a.atOnce, a.cur)
		a.got[r.URL.Path] = append(a.got[r.URL.Path], ev)
		gate, respond := a.gate, a.respond
		a.mu.Unlock()
		a.seen <- struct{}{}
		if gate != nil {
			<-gate
		}
		status := http.StatusNoContent
		if respond != nil {
			status = respond(ev)
		}
		a.mu.Lock()
		a.cur--
		a.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *arrivals) events(path string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.got[path])
}

func (a *arrivals) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, evs := range a.got {
		n += len(evs)
	}
	return n
}

// outboxOrder is evt_0 … evt_<n-1>, the order newWorker queues them in.
func outboxOrder(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprint("evt_", i))
	}
	return out
}

// TestWorkerOrder: a burst of events to two webhooks with a quick
// receiver arrives at each in outbox order, one request at a time per
// webhook, while the two webhooks are served side by side.
func TestWorkerOrder(t *testing.T) {
	const n = 60 // within the default Backlog: one at a time
	a := newArrivals(t)
	w, wake := newWorker(t, n, a.URL+"/a", a.URL+"/b")
	run(t, w, wake, 10*time.Second, func() bool { return a.count() == 2*n })
	w.Wait()
	for _, p := range []string{"/a", "/b"} {
		if got, want := a.events(p), outboxOrder(0, n); !slices.Equal(got, want) {
			t.Fatalf("%s received %v, want outbox order %v", p, got, want)
		}
	}
	if a.maxCur > 2 {
		t.Fatalf("%d requests at once to two webhooks, want at most one each", a.maxCur)
	}
}

// TestWorkerRetryDoesNotBlock: an event whose attempt fails does not
// hold up the events after it; its retry comes when due (30 s later on
// the worker's clock), after them.
func TestWorkerRetryDoesNotBlock(t *testing.T) {
	a := newArrivals(t)
	a.respond = func(ev string) int {
		if ev == "evt_2" {
			return http.StatusInternalServerError
		}
		return http.StatusNoContent
	}
	w, wake := newWorker(t, 6, a.URL)
	clk := testkit.NewClock(time.Now())
	w.Now = clk.Now
	run(t, w, wake, 5*time.Second, func() bool { return a.count() == 6 })
	w.Wait()
	if got, want := a.events("/"), outboxOrder(0, 6); !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	clk.Advance(29 * time.Second)
	deliverDue(t, w)
	if n := a.count(); n != 6 {
		t.Fatalf("retried before 30 s: %v", a.events("/"))
	}
	clk.Advance(time.Second)
	deliverDue(t, w)
	if got, want := a.events("/"), append(outboxOrder(0, 6), "evt_2/2"); !slices.Equal(got, want) {
		t.Fatalf("received %v, want %v", got, want)
	}
	var jobs int
	w.DB.View(ctx, func(tx store.Tx) (err error) { jobs, err = tx.JobCount(); return err })
	if jobs != 0 {
		t.Fatalf("%d jobs left", jobs)
	}
}

// TestWorkerBacklogRunsConcurrently: while more than Backlog jobs of a
// webhook are due, up to PerWebhook run at once; the last jobs, once the
// backlog is down to Backlog, go one at a time in outbox order after
// every earlier attempt has finished.
func TestWorkerBacklogRunsConcurrently(t *testing.T) {
	const n, backlog, per = 30, 8, 3
	a := newArrivals(t)
	gate := make(chan struct{})
	a.gate = gate
	w, wake := newWorker(t, n, a.URL)
	w.Backlog, w.PerWebhook = backlog, per
	if err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(5 * time.Second)
	for i := range per { // PerWebhook requests arrive while all of them hang
		select {
		case <-a.seen:
		case <-timeout:
			t.Fatalf("%d requests at once with a backlog of %d, want PerWebhook=%d", i, n, per)
		}
	}
	a.mu.Lock()
	a.gate = nil
	a.mu.Unlock()
	close(gate)
	run(t, w, wake, 10*time.Second, func() bool { return a.count() == n })
	w.Wait()
	got := a.events("/")
	if len(got) != n || a.maxCur != per {
		t.Fatalf("%d of %d delivered, at most %d at once; want all, at most %d", len(got), n, a.maxCur, per)
	}
	tail := backlog - per + 1 // claimed only once the backlog was down to Backlog
	if !slices.Equal(got[n-tail:], outboxOrder(n-tail, n)) {
		t.Fatalf("last %d arrivals %v, want outbox order", tail, got[n-tail:])
	}
	for i, c := range a.atOnce[n-tail:] {
		if c != 1 {
			t.Fatalf("arrival %d of the tail found %d requests in progress, want 1", n-tail+i+1, c)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(outboxOrder(0, n)))) {
		t.Fatalf("received %v: an event missing or twice", got)
	}
}

// deliverDue runs w once and waits for the deliveries it started.
func deliverDue(t *testing.T, w *webhook.Worker) {
	t.Helper()
	if err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.Wait()
}
