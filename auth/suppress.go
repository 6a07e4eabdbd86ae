package auth

import (
	"context"
	"math"
	"net/netip"
	"sync"
	"time"

	"latchkey/store"
)

// Bounded abuse. A failure that names no known user (an unknown magic-link
// token, an unknown external id, a malformed request: anyone can make
// them, as fast as they like) is stored as an event at most
// SuppressPerMinute times in any minute per (project, client IP, method
// and action); the rest are only counted per hour and shown as
// "suppressed". The counts build up in memory, without a transaction per
// request (that would be the same disk attack), and FlushSuppressed writes
// them (the scheduler's minute sweep, and Close).
const (
	// SuppressPerMinute is how many failures that name no user one
	// (project, IP, method and action) may store per rolling minute.
	SuppressPerMinute = 10
	// maxSuppressWindows bounds the rolling windows kept in memory (about
	// 250 bytes each, 8 MiB in all). Once that many senders failed within a
	// minute, failures of further ones are counted, not stored, until the
	// windows age out.
	maxSuppressWindows = 1 << 15
)

type suppressKey struct{ project, ip, method, action string }

// recent holds the times of the last SuppressPerMinute stored failures
// of one key, as a ring whose oldest entry is at next.
type recent struct {
	times [SuppressPerMinute]int64
	n     int
	next  int
}

func (w *recent) newest() int64 { return w.times[(w.next+w.n-1)%len(w.times)] }

type pendingKey struct {
	hour                             int64
	project, method, action, failure string
}

// suppressor decides which failures are stored and counts the others. Its
// memory is bounded: maxSuppressWindows windows, and pending counts per
// (hour, project, method, action, category), of which only the hours since
// the last flush exist.
type suppressor struct {
	mu      sync.Mutex
	windows map[suppressKey]*recent
	// quietUntil: no window goes idle before it (the oldest newest
	// failure the last prune kept, plus a minute), so a full map is not
	// scanned again before then: a flood of new senders costs each one
	// a map lookup, not a scan of every window under the lock.
	quietUntil int64
	pending    map[pendingKey]int64
	flush      sync.Mutex // one FlushSuppressed at a time
}

func newSuppressor() *suppressor {
	return &suppressor{windows: map[suppressKey]*recent{}, pending: map[pendingKey]int64{}}
}

// admit reports whether a failure of k at now may be stored, and if so
// takes its place in k's window.
func (p *suppressor) admit(k suppressKey, now time.Time) bool {
	t := now.UnixNano()
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.windows[k]
	if w == nil {
		if len(p.windows) >= maxSuppressWindows {
			if t >= p.quietUntil {
				p.pruneLocked(t)
			}
			if len(p.windows) >= maxSuppressWindows {
				return false
			}
		}
		w = &recent{}
		p.windows[k] = w
	}
	if w.n < len(w.times) {
		w.times[(w.next+w.n)%len(w.times)] = t
		w.n++
		return true
	}
	if t-w.times[w.next] < int64(time.Minute) {
		return false
	}
	w.times[w.next] = t
	w.next = (w.next + 1) % len(w.times)
	return true
}

// pruneLocked forgets windows whose newest stored failure is over a minute
// before t: they admit the next failure anyway.
func (p *suppressor) pruneLocked(t int64) {
	oldest := int64(math.MaxInt64)
	for k, w := range p.windows {
		if n := w.newest(); t-n >= int64(time.Minute) {
			delete(p.windows, k)
		} else {
			oldest = min(oldest, n)
		}
	}
	// Windows kept or added later only get newer.
	p.quietUntil = 0
	if oldest != math.MaxInt64 {
		p.quietUntil = oldest + int64(time.Minute)
	}
}

// prune forgets idle windows (the minute sweep calls it).
func (p *suppressor) prune(now time.Time) {
	p.mu.Lock()
	p.pruneLocked(now.UnixNano())
	p.mu.Unlock()
}

// count adds a suppressed failure.
func (p *suppressor) count(e *store.AuthEvent) {
	k := pendingKey{hour: e.CreatedAt.Unix() / 3600, project: e.ProjectID, method: e.Method, action: e.Action, failure: e.FailureCode}
	p.mu.Lock()
	p.pending[k]++
	p.mu.Unlock()
}

// take returns the pending counts and starts afresh.
func (p *suppressor) take() map[pendingKey]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.pending
	p.pending = map[pendingKey]int64{}
	return out
}

// restore adds back counts whose flush failed.
func (p *suppressor) restore(m map[pendingKey]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, n := range m {
		p.pending[k] += n
	}
}

// pendingRows returns the unflushed counts that match a query: of
// projectID (any when empty), of failure (any when empty), in the hours
// from..to.
func (p *suppressor) pendingRows(projectID, failure string, from, to time.Time) []store.SuppressedCount {
	lo, hi := from.Unix()/3600, to.Unix()/3600
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []store.SuppressedCount
	for k, n := range p.pending {
		if k.hour < lo || k.hour > hi || (projectID != "" && k.project != projectID) || (failure != "" && k.failure != failure) {
			continue
		}
		out = append(out, store.SuppressedCount{Hour: time.Unix(k.hour*3600, 0).UTC(), ProjectID: k.project,
			Method: k.method, Action: k.action, FailureCode: k.failure, N: n})
	}
	return out
}

// FlushSuppressed writes the suppressed failures counted in memory to the
// store's hourly counters, in one transaction. The scheduler calls it
// every minute (through Sweep) and Close at shutdown; on failure the
// counts stay in memory for the next try.
func (s *Service) FlushSuppressed(ctx context.Context) error {
	s.suppress.flush.Lock()
	defer s.suppress.flush.Unlock()
	batch := s.suppress.take()
	if len(batch) == 0 {
		return nil
	}
	err := s.db.Update(ctx, func(tx store.Tx) error {
		for k, n := range batch {
			c := store.SuppressedCount{Hour: time.Unix(k.hour*3600, 0).UTC(), ProjectID: k.project, Method: k.method,
				Action: k.action, FailureCode: k.failure, N: n}
			if err := tx.AddSuppressed(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.suppress.restore(batch)
		return internal(err)
	}
	return nil
}

// suppressed reports whether the failure e, which names no user, is over
// its key's rate and must only be counted. Successes and failures that
// name a user are always stored.
func (s *Service) suppressed(e *store.AuthEvent) bool {
	if e.Success || e.UserID != "" {
		return false
	}
	k := suppressKey{project: e.ProjectID, ip: clientKey(e.IP), method: e.Method, action: e.Action}
	return !s.suppress.admit(k, s.now())
}

// clientKey is the client an address counts as: an IPv4 address, or the /64
// of an IPv6 address (one subscriber's usual allocation), so rotating
// through a prefix gains nothing.
func clientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.WithZone("").Prefix(64)
		return p.String()
	}
	return a.String()
}
