package webhook

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
)

// TestWorkerForgetsSecrets: the worker keeps a webhook's decrypted
// secret only while it has deliveries of that webhook in hand; once they
// are recorded, or the webhook is deleted under them, nothing is left.
func TestWorkerForgetsSecrets(t *testing.T) {
	seen := make(chan string, 16)
	gate := make(chan struct{})
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.URL.Path
		if r.URL.Path == "/slow" {
			<-gate
		}
	}))
	t.Cleanup(recv.Close)
	db := storetest.Open(t)
	keys, _ := store.NewKeyring(bytes.Repeat([]byte{5}, 32))
	svc := &Service{DB: db, Keys: keys, Now: time.Now}
	ctx := context.Background()
	if _, err := svc.Create(ctx, "p1", "test", recv.URL+"/fast", nil); err != nil {
		t.Fatal(err)
	}
	slow, err := svc.Create(ctx, "p1", "test", recv.URL+"/slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	emit := func() {
		t.Helper()
		err := db.Update(ctx, func(tx store.Tx) error {
			return tx.AppendEvent(&store.Event{ID: newID(), ProjectID: "p1", Type: "user.registered", CreatedAt: time.Now(), Data: []byte(`{}`)})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	recorded := make(chan struct{}, 16)
	w := &Worker{DB: db, Keys: keys, Now: time.Now, Logger: slog.New(slog.DiscardHandler), OnWake: func() { recorded <- struct{}{} }}
	t.Cleanup(w.Close)
	lanes := func() []string {
		w.mu.Lock()
		defer w.mu.Unlock()
		var ids []string
		for id, l := range w.lanes {
			if l.hook.secret == "" {
				t.Errorf("lane %s holds no secret", id)
			}
			ids = append(ids, id)
		}
		return ids
	}

	emit()
	if err := w.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		<-seen
	}
	// The fast delivery is recorded; the slow one hangs: only its secret
	// stays.
	<-recorded
	if got := lanes(); len(got) != 1 || got[0] != slow.ID {
		t.Fatalf("lanes %v while only %s has a delivery in flight", got, slow.ID)
	}
	// Deleting the webhook under its delivery leaves nothing behind either.
	if err := svc.Delete(ctx, "p1", "test", slow.ID); err != nil {
		t.Fatal(err)
	}
	close(gate)
	w.Wait()
	if got := lanes(); len(got) != 0 {
		t.Fatalf("lanes %v after every delivery was recorded", got)
	}
	emit()
	if err := w.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if p := <-seen; p != "/fast" {
		t.Fatalf("delivered to %s, want only /fast", p)
	}
	w.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lanes) != 0 || len(w.inflight) != 0 || w.attempts != 0 {
		t.Fatalf("after the last delivery: %d lanes, %d claimed jobs, %d attempts", len(w.lanes), len(w.inflight), w.attempts)
	}
}
