package webhook_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
	"latchkey/webhook"
)

// worker returns a Worker over a fresh data file with one test-mode
// webhook per receiver URL and n queued user.registered events, and a
// channel that receives its wake-ups.
func newWorker(t *testing.T, n int, urls ...string) (*webhook.Worker, <-chan struct{}) {
	t.Helper()
	db := storetest.Open(t)
	keys, err := store.NewKeyring(bytes.Repeat([]byte{5}, 32))
	if err != nil {
		t.Fatal(err)
	}
	svc := &webhook.Service{DB: db, Keys: keys, Now: time.Now}
	for _, u := range urls {
		if _, err := svc.Create(context.Background(), "p1", "test", u, nil); err != nil {
			t.Fatal(err)
		}
	}
	err = db.Update(ctx, func(tx store.Tx) error {
		for i := range n {
			e := &store.Event{ID: fmt.Sprint("evt_", i), ProjectID: "p1", Type: "user.registered", CreatedAt: time.Now(), Data: []byte(`{}`)}
			if err := tx.AppendEvent(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wake := make(chan struct{}, 1)
	w := &webhook.Worker{DB: db, Keys: keys, Now: time.Now, Logger: slog.New(slog.DiscardHandler),
		OnWake: func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}}
	t.Cleanup(w.Close)
	return w, wake
}

// run drives w as the scheduler does until done reports true or the
// deadline passes.
func run(t *testing.T, w *webhook.Worker, wake <-chan struct{}, deadline time.Duration, done func() bool) {
	t.Helper()
	end := time.After(deadline)
	for !done() {
		if err := w.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-wake:
		case <-end:
			return
		}
	}
}

// TestWorkerYieldsWhileBusy: while the API is busy the worker starts at
// most one delivery per BusyPace; once it is not, the rest go at once.
func TestWorkerYieldsWhileBusy(t *testing.T) {
	var mu sync.Mutex
	var starts []time.Time
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(starts) }

	w, wake := newWorker(t, 40, recv.URL)
	var busy atomic.Bool
	busy.Store(true)
	// A long pace, so that "still paced" (34 more deliveries 200 ms
	// apart: 6.8 s) cannot pass for "unpaced" however slow the machine.
	const pace = 200 * time.Millisecond
	w.Busy, w.BusyPace = busy.Load, pace
	run(t, w, wake, 5*time.Second, func() bool { return count() >= 6 })
	w.Wait()
	mu.Lock()
	paced := append([]time.Time(nil), starts...)
	mu.Unlock()
	if len(paced) < 6 {
		t.Fatalf("%d deliveries while busy in 5 s, want paced progress", len(paced))
	}
	for i := 1; i < len(paced); i++ {
		// Allow for timer slack, never for two starts at once.
		if gap := paced[i].Sub(paced[i-1]); gap < pace*3/5 {
			t.Fatalf("deliveries %d and %d started %v apart while busy, want about %v", i, i+1, gap, pace)
		}
	}

	busy.Store(false)
	start := time.Now()
	run(t, w, wake, 5*time.Second, func() bool { return count() == 40 })
	w.Wait()
	if n := count(); n != 40 {
		t.Fatalf("%d of 40 delivered", n)
	}
	if took := time.Since(start); took > pace*time.Duration(40-len(paced))*3/4 {
		t.Fatalf("the rest took %v once the API was idle: still paced", took)
	}
}

// TestWorkerRoundRobin: with one delivery at a time, two webhooks with
// backlogs are served in turn, not one backlog after the other.
func TestWorkerRoundRobin(t *testing.T) {
	var mu sync.Mutex
	var order []string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		order = append(order, r.URL.Path)
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	w, wake := newWorker(t, 5, recv.URL+"/a", recv.URL+"/b")
	w.Concurrency = 1
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(order) }
	run(t, w, wake, 5*time.Second, func() bool { return count() == 10 })
	w.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 10 {
		t.Fatalf("%d of 10 delivered", len(order))
	}
	for i := 1; i < len(order); i++ {
		if order[i] == order[i-1] {
			t.Fatalf("order %v: a webhook was served twice in a row while the other waited", order)
		}
	}
}

// TestWorkerHold: a worker whose replica does not hold the webhooks
// lease fans nothing out and starts no delivery; once it holds it, every
// event is delivered (replicas on one database: one delivers each job).
func TestWorkerHold(t *testing.T) {
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	defer recv.Close()
	w, wake := newWorker(t, 3, recv.URL)
	var held atomic.Bool
	w.Hold = held.Load
	if err := w.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	w.Wait()
	var events, jobs int
	if err := w.DB.View(ctx, func(tx store.Tx) (err error) {
		ok, err := tx.HasEvents()
		if ok {
			events = 1
		}
		if err == nil {
			jobs, err = tx.JobCount()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got.Load() != 0 || events == 0 || jobs != 0 {
		t.Fatalf("without the lease: %d delivered, outbox holds events %v, %d jobs; want nothing done", got.Load(), events == 1, jobs)
	}
	held.Store(true)
	run(t, w, wake, 10*time.Second, func() bool { return got.Load() == 3 })
	if got.Load() != 3 {
		t.Fatalf("with the lease: %d of 3 delivered", got.Load())
	}
}
