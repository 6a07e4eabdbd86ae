package main

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestSchedulerRunsAndStops: periodic tasks tick, wakeable ones run at
// start and on wake, a task in progress sees its context cancelled at
// stop, and nothing runs after stop returns.
func TestSchedulerRunsAndStops(t *testing.T) {
	s := newScheduler(discardLogger())
	var ticks, wakes atomic.Int64
	blocked := make(chan struct{})
	s.every("tick", 5*time.Millisecond, func(context.Context) error { ticks.Add(1); return nil })
	s.onWake("woken", time.Hour, func(ctx context.Context) error {
		if wakes.Add(1) == 2 {
			close(blocked)
			<-ctx.Done() // a long send: released by stop
		}
		return nil
	})
	s.start()
	waitUntil(t, func() bool { return ticks.Load() >= 3 && wakes.Load() == 1 })
	s.wake()
	<-blocked
	done := make(chan struct{})
	go func() { s.stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return while a task was running")
	}
	n := ticks.Load()
	time.Sleep(20 * time.Millisecond) // four tick intervals: none may run
	if ticks.Load() != n || wakes.Load() != 2 {
		t.Fatalf("tasks ran after stop: ticks %d→%d wakes %d", n, ticks.Load(), wakes.Load())
	}
}

// TestSweepScheduledEveryMinute: serve registers the sweep of expired
// codes, links and sessions at one minute, and mail and webhooks as
// wakeable tasks.
func TestSweepScheduledEveryMinute(t *testing.T) {
	m, _ := startMain(t, Config{Data: filepath.Join(t.TempDir(), "latchkey.db")})
	got := map[string]task{}
	for _, tk := range m.sched.tasks {
		got[tk.name] = tk
	}
	if tk, ok := got["sweep"]; !ok || tk.interval != time.Minute || tk.wakeCh != nil {
		t.Fatalf("sweep task %+v", tk)
	}
	for _, name := range []string{"mail", "webhooks"} {
		if got[name].wakeCh == nil {
			t.Fatalf("%s is not woken after commits", name)
		}
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}
