package httpapi

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// load tracks whether the API is saturated, for Server.Busy.
//
// The API is busy when it has served a request within activeWindow and
// at least GOMAXPROCS goroutines are runnable but not running: a full
// CPU's worth of work is waiting, so anything else that runs now delays
// requests. Counting requests in flight is not enough: under saturation
// most requests wait to be read, before any handler runs. The runtime's
// count is read at most once per sampleEvery.
type load struct {
	lastRequest atomic.Int64 // Unix nanoseconds

	mu       sync.Mutex
	sampled  time.Time
	queueing bool
	sample   []metrics.Sample
}

const (
	activeWindow = 10 * time.Millisecond
	sampleEvery  = time.Millisecond
)

// request notes that a request is being served.
func (l *load) request() { l.lastRequest.Store(time.Now().UnixNano()) }

// busy reports whether the API is saturated.
func (l *load) busy() bool {
	now := time.Now()
	if now.UnixNano()-l.lastRequest.Load() > int64(activeWindow) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.sampled) >= sampleEvery {
		if l.sample == nil {
			l.sample = []metrics.Sample{{Name: "/sched/goroutines/runnable:goroutines"}}
		}
		metrics.Read(l.sample)
		runnable := uint64(0)
		if l.sample[0].Value.Kind() == metrics.KindUint64 {
			runnable = l.sample[0].Value.Uint64()
		}
		l.queueing = runnable >= uint64(runtime.GOMAXPROCS(0))
		l.sampled = now
	}
	return l.queueing
}
