package mailtest

import (
	"context"
	"fmt"
	"latchkey/mail"
	"net/smtp"
	"testing"
	"time"
)

// TestWaitConcurrent: each message wakes the goroutine waiting for its
// recipient, however many others wait at the same time (a wake-up once
// went to one waiter only, which could be another recipient's, so a
// message could sit unseen until the next one arrived).
func TestWaitConcurrent(t *testing.T) {
	s := NewServer(t, Options{NoTLS: true})
	const n = 10
	got := make([]chan bool, n)
	for i := range n {
		got[i] = make(chan bool, 1)
		go func() {
			_, ok := s.Wait(fmt.Sprintf("u%d@example.com", i), 10*time.Second)
			got[i] <- ok
		}()
	}
	time.Sleep(100 * time.Millisecond) // every waiter blocks
	for i := range n {
		to := fmt.Sprintf("u%d@example.com", i)
		msg := []byte("Subject: code\r\n\r\n 123456\r\n")
		if err := smtp.SendMail(s.Addr, nil, "from@example.com", []string{to}, msg); err != nil {
			t.Fatal(err)
		}
		select {
		case ok := <-got[i]:
			if !ok {
				t.Fatalf("Wait(%s) timed out", to)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("Wait(%s) still waits 2 s after its message arrived", to)
		}
	}
	if m, ok := s.Wait("u3@example.com", 0); !ok || m.To != "u3@example.com" {
		t.Errorf("Wait for a message already there = %v %v, want it at once", m.To, ok)
	}
}

// TestCodes: a message's code reaches the client that takes it, sent
// before or while it waits; an address nothing was mailed to times out.
func TestCodes(t *testing.T) {
	var c Codes
	c.Send(context.Background(), &mail.Message{To: "a@example.com", Text: "Your code is 123456.\n"})
	if got, err := c.Take("a@example.com", time.Second); got != "123456" || err != nil {
		t.Fatalf("Take after Send: %q, %v", got, err)
	}
	go c.Send(context.Background(), &mail.Message{To: "b@example.com", Text: "Code: 654321"})
	if got, err := c.Take("b@example.com", 10*time.Second); got != "654321" || err != nil {
		t.Fatalf("Take before Send: %q, %v", got, err)
	}
	if got, err := c.Take("nobody@example.com", 10*time.Millisecond); got != "" || err == nil {
		t.Fatalf("Take of an address with no mail: %q, %v; want an error", got, err)
	}
}
