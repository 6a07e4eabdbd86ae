package mail_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"latchkey/mail"
	"latchkey/store"
)

// hangingTransport counts sends, telling each on sends; the send
// numbered hangAt waits for its context.
type hangingTransport struct {
	sent   atomic.Int64
	sends  chan string
	hangAt int64
}

func (h *hangingTransport) Send(ctx context.Context, m *mail.Message) error {
	h.sends <- m.To
	if h.sent.Add(1) == h.hangAt {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// TestQueueStartAndClose: a started queue sends what was queued before
// at once and a new message when woken; Close cancels a send in
// progress under the queue's own context, the message staying queued,
// and nothing is sent after it returns.
func TestQueueStartAndClose(t *testing.T) {
	t.Parallel()
	f := mustOpen(t)
	f.enqueue(t, "otp", "a@example.com", store.MailContent{Project: "Shop", Code: "123456", TTLSeconds: 600})
	tr := &hangingTransport{hangAt: 2, sends: make(chan string, 8)}
	q := f.queue(tr, io.Discard)
	q.Interval = time.Hour // only Start and Wake run it here
	q.Start()
	if to := nextSend(t, tr.sends); to != "a@example.com" {
		t.Fatalf("sent to %s first, want the message queued before Start", to)
	}

	f.enqueue(t, "otp", "b@example.com", store.MailContent{Project: "Shop", Code: "654321", TTLSeconds: 600})
	q.Wake()
	if to := nextSend(t, tr.sends); to != "b@example.com" {
		t.Fatalf("sent to %s, want the new message", to)
	}
	start := time.Now()
	q.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close took %v with a send hanging: it must cancel it", took)
	}
	if got := f.queued(t); len(got) != 1 || got[0].To != "b@example.com" {
		t.Fatalf("queued after Close: %v, want the cancelled message", got)
	}
	q.Wake()
	time.Sleep(50 * time.Millisecond)
	if n := tr.sent.Load(); n != 2 {
		t.Fatalf("%d sends, want none after Close", n)
	}
}

// nextSend returns the recipient of the next send (5 s at most).
func nextSend(t *testing.T, sends <-chan string) string {
	t.Helper()
	select {
	case to := <-sends:
		return to
	case <-time.After(5 * time.Second):
		t.Fatal("no send in 5 s")
	}
	return ""
}
