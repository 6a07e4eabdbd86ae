// Package testkit holds what tests of every package share: a clock the
// test moves, a buffer several goroutines write to, the providers'
// signing keys made beforehand (SigningKey), and the marker of
// tests and packages whose outcome no store engine changes (EngineFree,
// MainEngineFree), which run on the first pass of the test command
// only. It imports only the standard library, so any package's tests may
// use it.
package testkit

import (
	"bytes"
	"sync"
	"time"
)

// Clock is an injectable clock that only the test moves: a service takes
// its Now method wherever it would call time.Now. Safe for concurrent
// use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock that reads t until it is moved.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock d forward (backward when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Buffer is a bytes.Buffer that several goroutines may write and read at
// once: a logger's output read by the test while the server logs.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written since the last Reset.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Reset forgets everything written.
func (b *Buffer) Reset() {
	b.mu.Lock()
	b.b.Reset()
	b.mu.Unlock()
}
