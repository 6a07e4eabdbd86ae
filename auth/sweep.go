package auth

import (
	"time"

	"latchkey/store"
)

// EventRetention is how long authentication events are kept.
const EventRetention = 30 * 24 * time.Hour

// Sweep deletes expired codes, links, sessions, send histories and old
// events in one transaction, and forgets idle rate windows. The scheduler
// calls it every minute.
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
		if _, err := tx.SweepThrottles(now.Add(-time.Hour)); err != nil {
			return err
		}
		_, err := tx.SweepAuthEvents(now.Add(-EventRetention))
		return err
	})
	s.limiter.Forget()
	s.adminFails.Forget()
	s.risk.Sweep()
	return err
}
