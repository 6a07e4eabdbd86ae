package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/store"
	"latchkey/store/storetest"
	"latchkey/webhook"
)

// BenchmarkDelivery measures end-to-end delivery throughput: b.N events
// already in the outbox, one webhook per `hooks` pointing at a local
// receiver that answers 204 at once; the worker fans out, signs, posts and
// records every attempt (one delivery record per attempt, committed).
// The ordered runs set PerWebhook to 1, so even the backlog goes one
// attempt at a time per webhook: the ordered path alone.
func BenchmarkDelivery(b *testing.B) {
	for _, hooks := range []int{1, 4} {
		b.Run(fmt.Sprintf("webhooks=%d", hooks), func(b *testing.B) { benchDelivery(b, hooks, false) })
	}
	for _, hooks := range []int{1, 4} {
		b.Run(fmt.Sprintf("webhooks=%d/ordered", hooks), func(b *testing.B) { benchDelivery(b, hooks, true) })
	}
}

func benchDelivery(b *testing.B, hooks int, ordered bool) {
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer recv.Close()
	db := storetest.Open(b)
	keys, _ := store.NewKeyring(bytes.Repeat([]byte{3}, 32))
	svc := &webhook.Service{DB: db, Keys: keys, Now: time.Now}
	for i := 0; i < hooks; i++ {
		if _, err := svc.Create(context.Background(), "p1", "test", recv.URL+fmt.Sprintf("/h%d", i), nil); err != nil {
			b.Fatal(err)
		}
	}
	events := b.N / hooks
	if events == 0 {
		events = 1
	}
	data, _ := json.Marshal(map[string]string{"user_id": "0193", "email": "bench@example.com"})
	for done := 0; done < events; {
		err := db.Update(ctx, func(tx store.Tx) error {
			for i := 0; i < 1000 && done < events; i++ {
				if err := tx.AppendEvent(&store.Event{ID: fmt.Sprintf("evt_%d", done), ProjectID: "p1", Type: "user.registered", CreatedAt: time.Now(), Data: data}); err != nil {
					return err
				}
				done++
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	want := int64(events * hooks)
	wake := make(chan struct{}, 1)
	w := &webhook.Worker{DB: db, Keys: keys, Now: time.Now, Logger: slog.New(slog.DiscardHandler),
		OnWake: func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}}
	if ordered {
		w.PerWebhook = 1
	}
	defer w.Close()
	b.ResetTimer()
	start := time.Now()
	ctx := context.Background()
	for got.Load() < want {
		if err := w.RunOnce(ctx); err != nil {
			b.Fatal(err)
		}
		select {
		case <-wake:
		case <-time.After(time.Second):
		}
	}
	w.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
	var left int
	db.View(ctx, func(tx store.Tx) (err error) { left, err = tx.JobCount(); return err })
	if left != 0 {
		b.Fatalf("%d jobs left", left)
	}
}
