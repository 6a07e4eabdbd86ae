package auth

import (
	"sync"
	"time"

	"latchkey/store"
)

// Limiter counts requests per key over a rolling minute in one-second
// buckets. Each key has its own small lock; there is no global lock on
// the request path. On a store shared by replicas it also counts what the
// other replicas counted for the key (share; see shared.go).
type Limiter struct {
	now     func() time.Time
	windows sync.Map   // key → *window
	share   *rateShare // the other replicas' counts; nil: none
}

// NewLimiter returns a limiter reading time from now.
func NewLimiter(now func() time.Time) *Limiter {
	return &Limiter{now: now}
}

type window struct {
	mu    sync.Mutex
	secs  [60]int64  // the second each bucket counts, unix
	count [60]uint32 // requests in that second
	total uint32
	dirty bool // counts changed since the last collect
}

// RateResult is the outcome of one Allow call, for the X-RateLimit headers.
type RateResult struct {
	Allowed   bool
	Limit     int
	Remaining int
	// Reset is when the next request slot frees (unix seconds): when the
	// oldest request counted in the rolling minute leaves it.
	Reset int64
	// RetryAfter is the wait in whole seconds when not allowed.
	RetryAfter int

	sec int64 // the second an allowed request was counted in (Refund)
}

// Allow counts one request for key against limit per rolling minute. A
// refused request is not counted. The other replicas' requests count
// too, as of the last sync.
func (l *Limiter) Allow(key string, limit int) RateResult {
	now := l.now()
	sec := now.Unix()
	others, othersOldest := l.share.count(key, sec)
	w, ok := l.windows.Load(key)
	if !ok {
		w, _ = l.windows.LoadOrStore(key, new(window))
	}
	win := w.(*window)
	win.mu.Lock()
	defer win.mu.Unlock()
	// Evict buckets older than 60 seconds.
	var oldest int64
	for i := range win.secs {
		if win.count[i] == 0 {
			continue
		}
		if win.secs[i] <= sec-60 {
			win.total -= win.count[i]
			win.count[i] = 0
			continue
		}
		if oldest == 0 || win.secs[i] < oldest {
			oldest = win.secs[i]
		}
	}
	if othersOldest != 0 && (oldest == 0 || othersOldest < oldest) {
		oldest = othersOldest
	}
	res := RateResult{Limit: limit}
	if int64(win.total)+int64(others) >= int64(limit) {
		res.Reset = oldest + 60
		res.RetryAfter = int(res.Reset - sec)
		if res.RetryAfter < 1 {
			res.RetryAfter = 1
		}
		return res
	}
	i := sec % 60
	if win.secs[i] != sec {
		win.total -= win.count[i]
		win.count[i] = 0
		win.secs[i] = sec
	}
	win.count[i]++
	win.total++
	win.dirty = true
	if oldest == 0 {
		oldest = sec
	}
	res.Allowed = true
	res.sec = sec
	res.Remaining = max(0, limit-int(win.total)-others)
	// The oldest counted request leaves the window, freeing its slot.
	res.Reset = oldest + 60
	return res
}

// Refund takes back one request that Allow counted for key (res is its
// result), for limits that count only failures: count every attempt
// first, so concurrent attempts cannot all pass the check, and refund
// the ones that succeed.
func (l *Limiter) Refund(key string, res RateResult) {
	if !res.Allowed {
		return
	}
	w, ok := l.windows.Load(key)
	if !ok {
		return
	}
	win := w.(*window)
	win.mu.Lock()
	if i := res.sec % 60; win.secs[i] == res.sec && win.count[i] > 0 {
		win.count[i]--
		win.total--
		win.dirty = true
	}
	win.mu.Unlock()
}

// Forget drops idle windows whose newest request is over a minute old, so
// keys that stop calling cost no memory. The scheduler calls it.
func (l *Limiter) Forget() {
	sec := l.now().Unix()
	l.windows.Range(func(k, v any) bool {
		w := v.(*window)
		w.mu.Lock()
		idle := true
		for i := range w.secs {
			if w.count[i] > 0 && w.secs[i] > sec-60 {
				idle = false
				break
			}
		}
		w.mu.Unlock()
		if idle {
			l.windows.Delete(k)
		}
		return true
	})
}

// collect appends to put the counts of the keys whose counts changed
// since the last collect (every key's, with all), per slot from the slot
// since to now's, each key named ns+key; and to keys every key counted in
// the rolling minute ending at Unix second now (those whose other
// replicas' counts matter).
func (l *Limiter) collect(now, since int64, all bool, ns string, put []store.RateCount, keys []string) ([]store.RateCount, []string) {
	l.windows.Range(func(k, v any) bool {
		w := v.(*window)
		c := slotCounts{first: since, cur: now / store.RateSlot}
		w.mu.Lock()
		dirty, live := w.dirty || all, false
		w.dirty = false
		for i := range w.secs {
			if w.count[i] > 0 && w.secs[i] > now-60 && w.secs[i] <= now {
				live = true
				c.add(w.secs[i], int(w.count[i]))
			}
		}
		w.mu.Unlock()
		key := ns + k.(string)
		if dirty {
			put = c.appendTo(put, key)
		}
		if live {
			keys = append(keys, key)
		}
		return true
	})
	return put, keys
}
