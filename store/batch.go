package store

import (
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// groupCommit gathers concurrent Batch calls into shared transactions.
// There is no timer: while one commit (and its fsync) runs, new calls
// queue, and the next commit takes all of them. Batch sizes follow the
// load by themselves.
type groupCommit struct {
	mu         chanMutex
	pending    []batchCall
	committing bool
}

type batchCall struct {
	fn  func(*Tx) error
	err chan error
}

// chanMutex is a plain mutex; named for clarity at the call sites.
type chanMutex struct{ ch chan struct{} }

func (m *chanMutex) lock() {
	if m.ch == nil {
		panic("groupCommit used before init")
	}
	m.ch <- struct{}{}
}
func (m *chanMutex) unlock() { <-m.ch }

// errSolo tells a caller its function failed inside a shared
// transaction and must be run on its own to get its own error.
var errSolo = errors.New("batch function failed; run it alone")

// Batch runs fn in a read-write transaction shared with other concurrent
// Batch calls (group commit). fn may run more than once, so every effect
// it has must be inside tx. It returns fn's error, or the commit's.
func (db *DB) Batch(fn func(tx *Tx) error) error {
	c := batchCall{fn: fn, err: make(chan error, 1)}
	g := &db.group
	g.mu.lock()
	g.pending = append(g.pending, c)
	lead := !g.committing
	g.committing = true
	g.mu.unlock()
	if lead {
		db.commitLoop()
	}
	err := <-c.err
	if err == errSolo {
		return db.Update(fn)
	}
	return err
}

// commitLoop commits queued calls until none are left. Only one runs at
// a time (the leader).
func (db *DB) commitLoop() {
	g := &db.group
	for {
		g.mu.lock()
		calls := g.pending
		g.pending = nil
		if len(calls) == 0 {
			g.committing = false
			g.mu.unlock()
			return
		}
		g.mu.unlock()
		db.commit(calls)
	}
}

// commit runs calls in one transaction. A failing call is taken out and
// told to run alone; the rest are retried without it.
func (db *DB) commit(calls []batchCall) {
	for len(calls) > 0 {
		failed := -1
		err := db.update(func(btx *bolt.Tx) error {
			tx := &Tx{tx: btx, db: db}
			for i, c := range calls {
				if err := safeCall(c.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			calls[failed].err <- errSolo
			calls = append(calls[:failed], calls[failed+1:]...)
			continue
		}
		for _, c := range calls {
			c.err <- err
		}
		return
	}
}

// safeCall runs fn, turning a panic into an error so one bad call
// cannot take the leader down.
func safeCall(fn func(*Tx) error, tx *Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in batch function: %v", p)
		}
	}()
	return fn(tx)
}
