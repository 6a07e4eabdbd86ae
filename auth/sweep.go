package auth

import (
	"context"
	"errors"
	"time"

	"latchkey/store"
)

// EventRetention is how long authentication events are kept.
const EventRetention = 30 * 24 * time.Hour

// Sweep is SweepStore and SweepMemory: what one process owning its
// store runs every minute.
func (s *Service) Sweep(ctx context.Context) error {
	return errors.Join(s.SweepStore(ctx), s.SweepMemory(ctx))
}

// SweepStore deletes expired rows (sessions, codes, send and failure
// histories, magic links, challenges, grants, remembered devices, webhook
// delivery records: sweepExpired) and old events and counters
// (sweepEvents), expired dashboard sessions, and the velocity rows and
// rate counts of limits across replicas that count nothing any more
// (sweepShared). Every deletion runs in transactions of at most sweepRows
// rows that read only the rows they delete. The scheduler calls it every
// minute; among replicas sharing a database, on the one holding the
// sweep's lease.
func (s *Service) SweepStore(ctx context.Context) error {
	now := s.now().UTC()
	_, dashErr := s.db.SweepDashSessions(ctx, now)
	return errors.Join(s.sweepExpired(ctx, now), s.sweepEvents(ctx, now), dashErr, s.sweepShared(ctx, now))
}

// SweepMemory forgets this process's idle rate windows and risk counters
// and writes its suppressed-failure counts. Every replica runs it every
// minute: the state is its own.
func (s *Service) SweepMemory(ctx context.Context) error {
	now := s.now().UTC()
	s.limiter.Forget()
	s.adminFails.Forget()
	s.risk.Sweep()
	s.suppress.prune(now)
	return s.FlushSuppressed(ctx)
}

// sweepRows bounds the rows one sweep transaction deletes, so background
// work never holds the writer for long: a chunk of background work runs
// as one function of a group commit (DB.Batch), beside the requests'
// writes, and takes about a millisecond (a thousand rows took about 5 ms
// on their own, during which every request's write waited).
const sweepRows = 250

// sweepExpired deletes the rows of every expiring kind that are due at
// now, walking each kind's expiry index, at most sweepRows rows per
// transaction (kinds share a transaction while it has room; each
// transaction is a function of the group commit); with nothing due it
// costs one seek per kind in a read transaction and writes nothing.
func (s *Service) sweepExpired(ctx context.Context, now time.Time) error {
	var due []store.Expiring
	if err := s.db.View(ctx, func(tx store.Tx) error {
		for _, k := range store.ExpiringKinds() {
			if ok, err := tx.ExpiryDue(k, now); err != nil {
				return err
			} else if ok {
				due = append(due, k)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	for len(due) > 0 {
		finished := 0 // kinds done in this transaction
		err := s.db.Batch(ctx, func(tx store.Tx) error {
			finished = 0 // the function may run twice
			room := sweepRows
			for _, kind := range due {
				n, err := tx.SweepExpired(kind, now, room)
				if err != nil {
					return err
				}
				if n == room { // the room is used up; more may be due
					return nil
				}
				finished++
				room -= n
			}
			return nil
		})
		if err != nil {
			return err
		}
		due = due[finished:]
	}
	return nil
}

// sweepEvents deletes events and hourly counters older than the
// retention, and events of projects over the cap, in transactions of at
// most sweepRows rows (functions of the group commit). It walks only the rows it deletes (the events'
// time order and index, the counters' hour order).
func (s *Service) sweepEvents(ctx context.Context, now time.Time) error {
	cutoff := now.Add(-EventRetention)
	var due [3]bool
	if err := s.db.View(ctx, func(tx store.Tx) (err error) {
		due[0], due[1], due[2], err = tx.EventSweepDue(cutoff)
		return err
	}); err != nil {
		return err
	}
	steps := [3]func(tx store.Tx) (int, error){
		func(tx store.Tx) (int, error) { return tx.SweepAuthEvents(cutoff, sweepRows) },
		func(tx store.Tx) (int, error) { return tx.SweepEventCounts(cutoff, sweepRows) },
		func(tx store.Tx) (int, error) { return tx.TrimAuthEvents(sweepRows) },
	}
	for i, step := range steps {
		for n := sweepRows; due[i] && n == sweepRows; {
			if err := s.db.Batch(ctx, func(tx store.Tx) error {
				var err error
				n, err = step(tx)
				return err
			}); err != nil {
				return err
			}
		}
	}
	return nil
}
