package postgres

import (
	"context"
	"errors"
	"time"

	"latchkey/store"
)

// errNotImplemented answers the methods not yet written for PostgreSQL.
var errNotImplemented = errors.New("postgres: not implemented yet")

func (tx *txn) Webhook(projectID, id string) (*store.Webhook, error) { return nil, errNotImplemented }
func (tx *txn) Webhooks(projectID string) ([]*store.Webhook, error)  { return nil, errNotImplemented }
func (tx *txn) PutWebhook(w *store.Webhook) error                    { return errNotImplemented }
func (tx *txn) DeleteWebhook(w *store.Webhook) error                 { return errNotImplemented }
func (tx *txn) EnqueueJob(j *store.Job) error                        { return errNotImplemented }
func (tx *txn) DueJobs(now time.Time, limit int, after string, peek int, room func(webhookID string, due int) int, skip func(seq uint64) bool) ([]*store.Job, error) {
	return nil, errNotImplemented
}
func (tx *txn) NextJobAt() (time.Time, bool, error)  { return time.Time{}, false, errNotImplemented }
func (tx *txn) DeleteJob(j *store.Job) (bool, error) { return false, errNotImplemented }
func (tx *txn) JobCount() (int, error)               { return 0, errNotImplemented }
func (tx *txn) AddDelivery(d *store.Delivery) error  { return errNotImplemented }
func (tx *txn) Deliveries(webhookID string, limit int) ([]*store.Delivery, error) {
	return nil, errNotImplemented
}
func (tx *txn) DeliveriesBefore(webhookID string, before uint64, limit int) ([]*store.Delivery, bool, error) {
	return nil, false, errNotImplemented
}
func (tx *txn) AppendEvent(e *store.Event) error { return errNotImplemented }
func (tx *txn) HasEvents() (bool, error)         { return false, errNotImplemented }
func (tx *txn) EventsAfter(seq uint64, limit int) ([]*store.Event, error) {
	return nil, errNotImplemented
}
func (tx *txn) DeleteEvent(seq uint64) error    { return errNotImplemented }
func (tx *txn) EnqueueMail(m *store.Mail) error { return errNotImplemented }
func (tx *txn) DueMail(now time.Time, limit int) ([]*store.Mail, error) {
	return nil, errNotImplemented
}
func (tx *txn) PutMail(m *store.Mail) error                  { return errNotImplemented }
func (tx *txn) DeleteMail(id uint64) error                   { return errNotImplemented }
func (tx *txn) MailCount() (int, error)                      { return 0, errNotImplemented }
func (tx *txn) RecentMail(fn func(m *store.Mail) bool) error { return errNotImplemented }
func (tx *txn) AddAuthEvent(e *store.AuthEvent) error        { return errNotImplemented }
func (tx *txn) AuthEvents(f store.AuthEventFilter) ([]*store.AuthEvent, bool, error) {
	return nil, false, errNotImplemented
}
func (tx *txn) AuthEventCount(projectID string) (int, error)           { return 0, errNotImplemented }
func (tx *txn) SweepAuthEvents(cutoff time.Time, max int) (int, error) { return 0, errNotImplemented }
func (tx *txn) TrimAuthEvents(max int) (int, error)                    { return 0, errNotImplemented }
func (tx *txn) HourlyCounts(projectID string, from, to time.Time) ([]store.HourCount, error) {
	return nil, errNotImplemented
}
func (tx *txn) AddSuppressed(c store.SuppressedCount) error { return errNotImplemented }
func (tx *txn) SuppressedCounts(projectID, failureCode string, from, to time.Time, limit int) ([]store.SuppressedCount, error) {
	return nil, errNotImplemented
}
func (tx *txn) SweepEventCounts(cutoff time.Time, max int) (int, error) { return 0, errNotImplemented }
func (tx *txn) EventSweepDue(cutoff time.Time) (events, counters, overCap bool, err error) {
	err = errNotImplemented
	return
}

// Stats reads the queue lengths and the database's size.
func (db *DB) Stats(ctx context.Context) (store.Stats, error) {
	return store.Stats{}, errNotImplemented
}

// Helpers other files call across domains; each domain's file replaces
// its stub.

// deleteProjectWebhooks removes the project's webhooks with their queued
// jobs and delivery records (DeleteProject).
func (tx *txn) deleteProjectWebhooks(projectID string) error { return errNotImplemented }
