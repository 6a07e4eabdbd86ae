package mailtest

import (
	"fmt"
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
