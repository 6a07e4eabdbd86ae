package webhook_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/webhook"
)

// TestWorkerStartAndClose: a started worker delivers what is queued at
// once, runs again when woken, and Close cancels a delivery in flight
// under its own context (it does not wait out the receiver), leaving its
// job queued, and returns with no goroutine of the worker left to
// deliver.
func TestWorkerStartAndClose(t *testing.T) {
	var got atomic.Int64
	hits := make(chan struct{}, 8)
	hang := make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // then a closed connection cancels r.Context()
		hits <- struct{}{}
		if got.Add(1) == 3 {
			select { // the third delivery hangs until its request is cancelled
			case <-r.Context().Done():
			case <-hang:
			}
		}
	}))
	t.Cleanup(recv.Close)
	t.Cleanup(func() { close(hang) }) // runs first
	w, _ := newWorker(t, 2, recv.URL)
	w.Interval = time.Hour // only Start and Wake run it here
	w.Start()
	waitHits(t, hits, 2)

	appendEvent(t, w, "evt_late")
	w.Wake()
	waitHits(t, hits, 1)
	start := time.Now()
	w.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close took %v with a delivery hanging: it must cancel it", took)
	}
	queued := false
	w.DB.View(ctx, func(tx store.Tx) (err error) { _, queued, err = tx.NextJobAt(); return err })
	if !queued {
		t.Fatal("the cancelled delivery's job left the queue: it must stay for a later attempt")
	}
	appendEvent(t, w, "evt_after_close")
	w.Wake()
	time.Sleep(50 * time.Millisecond)
	if n := got.Load(); n != 3 {
		t.Fatalf("%d deliveries, want none after Close", n)
	}
}

// waitHits waits for n deliveries to reach the receiver (5 s at most).
func waitHits(t *testing.T, hits <-chan struct{}, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-hits:
		case <-time.After(5 * time.Second):
			t.Fatalf("%d of %d deliveries in 5 s", i, n)
		}
	}
}

// appendEvent queues one more user.registered event in w's outbox.
func appendEvent(t *testing.T, w *webhook.Worker, id string) {
	t.Helper()
	err := w.DB.Update(ctx, func(tx store.Tx) error {
		return tx.AppendEvent(&store.Event{ID: id, ProjectID: "p1", Type: "user.registered", CreatedAt: time.Now(), Data: []byte(`{}`)})
	})
	if err != nil {
		t.Fatal(err)
	}
}
