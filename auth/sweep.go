package auth

import (
	"errors"
	"time"

	"latchkey/store"
)

// EventRetention is how long authentication events are kept.
const EventRetention = 30 * 24 * time.Hour

// Sweep deletes expired codes, links, sessions and send histories in one
// transaction, forgets idle rate windows, writes the suppressed-failure
// counts, and deletes old events and counters in small transactions
// (sweepEvents). The scheduler calls it every minute.
func (s *Service) Sweep() error {
	now := s.now().UTC()
	err := s.db.Update(func(tx *store.Tx) error {
		if _, err := tx.SweepCodes(now); err != nil {
			return err
		}
		if _, err := tx.SweepMagicLinks(now); err != nil {
			return err
		}
		if _, err := tx.SweepSessions(now); err != nil {
			return err
		}
		if _, err := tx.SweepChallenges(now); err != nil {
			return err
		}
		if _, err := tx.SweepGrants(now); err != nil {
			return err
		}
		_, err := tx.SweepThrottles(now.Add(-time.Hour))
		return err
	})
	s.limiter.Forget()
	s.adminFails.Forget()
	s.risk.Sweep()
	s.suppress.prune(now)
	return errors.Join(err, s.FlushSuppressed(), s.sweepEvents(now))
}

// sweepRows bounds the rows one sweep transaction deletes, so background
// work never holds the writer for long.
const sweepRows = 1000

// sweepEvents deletes events and hourly counters older than the
// retention, and events of projects over the cap, in transactions of at
// most sweepRows rows. It walks only the rows it deletes (the events'
// time order and index, the counters' hour order).
func (s *Service) sweepEvents(now time.Time) error {
	cutoff := now.Add(-EventRetention)
	var due [3]bool
	if err := s.db.View(func(tx *store.Tx) error {
		due[0], due[1], due[2] = tx.EventSweepDue(cutoff)
		return nil
	}); err != nil {
		return err
	}
	steps := [3]func(tx *store.Tx) (int, error){
		func(tx *store.Tx) (int, error) { return tx.SweepAuthEvents(cutoff, sweepRows) },
		func(tx *store.Tx) (int, error) { return tx.SweepEventCounts(cutoff, sweepRows) },
		func(tx *store.Tx) (int, error) { return tx.TrimAuthEvents(sweepRows) },
	}
	for i, step := range steps {
		for n := sweepRows; due[i] && n == sweepRows; {
			if err := s.db.Update(func(tx *store.Tx) error {
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
