package background

import (
	"context"
	"errors"
	"latchkey/internal/testkit"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTaskRunsAndStops: a periodic task ticks; one that runs at start
// does so, and again when woken; a run in progress sees its context
// cancelled at Close, and nothing runs after Close returns.
func TestTaskRunsAndStops(t *testing.T) {
	var ticks, wakes atomic.Int64
	blocked := make(chan struct{})
	tick := &Task{Name: "tick", Interval: 5 * time.Millisecond, Run: func(context.Context) error { ticks.Add(1); return nil }}
	woken := &Task{Name: "woken", Interval: time.Hour, AtStart: true, Run: func(ctx context.Context) error {
		if wakes.Add(1) == 2 {
			close(blocked)
			<-ctx.Done() // a long send: released by Close
		}
		return nil
	}}
	tick.Start()
	woken.Start()
	waitUntil(t, func() bool { return ticks.Load() >= 3 && wakes.Load() == 1 })
	woken.Wake()
	<-blocked
	done := make(chan struct{})
	go func() { tick.Close(); woken.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return while a run was in progress")
	}
	n := ticks.Load()
	woken.Wake()
	time.Sleep(20 * time.Millisecond) // four tick intervals: none may run
	if ticks.Load() != n || wakes.Load() != 2 {
		t.Fatalf("tasks ran after Close: ticks %d→%d wakes %d", n, ticks.Load(), wakes.Load())
	}
}

// TestTaskWakesCoalesce: wakes while a run is in progress make one more
// run, not one each; a task not started takes wakes without blocking,
// and Close before Start leaves it stopped for good.
func TestTaskWakesCoalesce(t *testing.T) {
	var runs atomic.Int64
	release := make(chan struct{})
	task := &Task{Name: "t", Interval: time.Hour, Run: func(context.Context) error {
		if runs.Add(1) == 1 {
			<-release
		}
		return nil
	}}
	for range 5 {
		task.Wake() // not started: never blocks
	}
	task.Start()
	waitUntil(t, func() bool { return runs.Load() == 1 })
	for range 5 {
		task.Wake()
	}
	close(release)
	waitUntil(t, func() bool { return runs.Load() == 2 })
	time.Sleep(20 * time.Millisecond)
	if n := runs.Load(); n != 2 {
		t.Fatalf("%d runs, want 2: the wake pending at start, then the five during the first run as one", n)
	}
	task.Close()

	never := &Task{Name: "never", Interval: time.Millisecond, AtStart: true, Run: func(context.Context) error {
		t.Error("a task closed before Start ran")
		return nil
	}}
	never.Close()
	never.Start()
	time.Sleep(10 * time.Millisecond)
	never.Close()
}

// TestTaskLogsErrors: a failed run is logged with the task's name and
// the task goes on; a run cut short by Close is not logged.
func TestTaskLogsErrors(t *testing.T) {
	var logs testkit.Buffer
	var runs atomic.Int64
	task := &Task{Name: "flaky", Interval: time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Run: func(ctx context.Context) error {
			if runs.Add(1) > 3 {
				<-ctx.Done()
				return ctx.Err()
			}
			return errors.New("disk on fire")
		}}
	task.Start()
	waitUntil(t, func() bool { return runs.Load() > 3 })
	task.Close()
	got := logs.String()
	if n := strings.Count(got, "background task failed"); n != 3 || !strings.Contains(got, "task=flaky") || strings.Contains(got, "context canceled") {
		t.Fatalf("log %q, want the three failures only", got)
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
