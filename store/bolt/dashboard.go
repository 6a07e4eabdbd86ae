package bolt

import (
	"context"
	"sync"
	"time"

	"latchkey/store"
)

// dashMemory is the in-memory Dashboard of a bbolt file.
type dashMemory struct {
	mu sync.Mutex
	m  map[string]store.DashSession
}

func (d *dashMemory) PutDashSession(_ context.Context, s *store.DashSession) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = make(map[string]store.DashSession)
	}
	d.m[string(s.Hash)] = store.DashSession{Hash: clone(s.Hash), ExpiresAt: s.ExpiresAt, Flash: clone(s.Flash)}
	return nil
}

func (d *dashMemory) DashSession(_ context.Context, hash []byte, now time.Time) (*store.DashSession, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.m[string(hash)]
	if !ok || !now.Before(s.ExpiresAt) {
		return nil, store.ErrNotFound
	}
	s.Hash, s.Flash = clone(s.Hash), clone(s.Flash)
	return &s, nil
}

func (d *dashMemory) UpdateDashFlash(_ context.Context, hash []byte, fn func([]byte) ([]byte, bool, error)) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.m[string(hash)]
	if !ok {
		return nil
	}
	next, changed, err := fn(clone(s.Flash))
	if err != nil || !changed {
		return err
	}
	s.Flash = clone(next)
	d.m[string(hash)] = s
	return nil
}

func (d *dashMemory) DeleteDashSession(_ context.Context, hash []byte) error {
	d.mu.Lock()
	delete(d.m, string(hash))
	d.mu.Unlock()
	return nil
}

func (d *dashMemory) SweepDashSessions(_ context.Context, now time.Time) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for k, s := range d.m {
		if !now.Before(s.ExpiresAt) {
			delete(d.m, k)
			n++
		}
	}
	return n, nil
}
