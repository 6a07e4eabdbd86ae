package mailtest

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"time"

	"latchkey/mail"
)

// Codes is a mail transport for benchmarks: it sends nothing, and hands
// the six-digit code of each message to the client waiting for it (Take),
// so that a load's clients get their codes as the server's mail queue
// hands them over, at the cost of a channel.
type Codes struct {
	mu    sync.Mutex
	codes map[string]chan string
}

// code finds the code in a message's text.
var code = regexp.MustCompile(`\b\d{6}\b`)

// ch returns addr's channel, made on first use.
func (c *Codes) ch(addr string) chan string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.codes == nil {
		c.codes = map[string]chan string{}
	}
	ch := c.codes[addr]
	if ch == nil {
		ch = make(chan string, 1)
		c.codes[addr] = ch
	}
	return ch
}

// Send implements mail.Transport: it keeps m's code for Take (a second
// code for the same address before Take is dropped).
func (c *Codes) Send(_ context.Context, m *mail.Message) error {
	select {
	case c.ch(m.To) <- code.FindString(m.Text):
	default:
	}
	return nil
}

// Take waits up to timeout for the code mailed to addr.
func (c *Codes) Take(addr string, timeout time.Duration) (string, error) {
	ch := c.ch(addr)
	defer func() {
		c.mu.Lock()
		delete(c.codes, addr)
		c.mu.Unlock()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case got := <-ch:
		return got, nil
	case <-t.C:
		return "", fmt.Errorf("no code mailed to %s within %v", addr, timeout)
	}
}
