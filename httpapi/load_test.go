package httpapi

import (
	"latchkey/internal/testkit"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLoadBusy: busy only while requests are being served and goroutines
// queue for the CPUs.
func TestLoadBusy(t *testing.T) {
	testkit.EngineFree(t, "measures the in-memory load gauge, not the store")
	var l load
	if l.busy() {
		t.Fatal("busy before any request")
	}
	l.request()
	// Saturate: more spinning goroutines than CPUs.
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
			}
		}()
	}
	saw := false
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !saw; {
		l.request()
		saw = l.busy()
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if !saw {
		t.Fatal("not busy while requests were served and the CPUs saturated")
	}
	// Idle API: not busy, whatever the CPUs do.
	l.lastRequest.Store(time.Now().Add(-2 * activeWindow).UnixNano())
	if l.busy() {
		t.Fatal("busy with no recent request")
	}
	// Requests but free CPUs: not busy (after the next sample).
	l.request()
	time.Sleep(2 * sampleEvery)
	for i := 0; i < 50 && l.busy(); i++ {
		time.Sleep(2 * sampleEvery)
		l.request()
	}
	if l.busy() {
		t.Fatal("busy with free CPUs")
	}
}
