package store

import "time"

// Replicas: what processes sharing one store need of it (PostgreSQL,
// several `latchkey serve` on one database). A bbolt file has one owner,
// so there the same capabilities are trivial: no change ever comes from
// elsewhere, and every lease is held.

// ChangeKind says what a Change is about, and what its ID names.
type ChangeKind string

// The kinds of change. A backend with an invalidation feed writes one in
// the transaction of every such change (see DB.Watch).
const (
	// ChangeAPIKey: the API key whose prefix is ID was created, changed
	// (revoked) or detached from its deleted project.
	ChangeAPIKey ChangeKind = "api_key"
	// ChangeProject: project ID was created, changed or deleted (with
	// its users, sessions and webhooks).
	ChangeProject ChangeKind = "project"
	// ChangeUser: user ID was changed (disabled, address, profile) or
	// deleted.
	ChangeUser ChangeKind = "user"
	// ChangeSession: session ID was deleted (logout, revocation) or
	// rewritten (a step-up's proof).
	ChangeSession ChangeKind = "session"
	// ChangeUserSessions: every session of user ID was deleted (logout
	// everywhere, disabled, deleted).
	ChangeUserSessions ChangeKind = "user_sessions"
	// ChangeTemplates: a template (of mail, or the texts of the hosted
	// pages) of project ID was created, changed or deleted.
	ChangeTemplates ChangeKind = "templates"
	// ChangeMail: a message was queued (ID empty): the replica that sends
	// mail wakes its queue.
	ChangeMail ChangeKind = "mail"
	// ChangeOutbox: a webhook event was written to the outbox (ID empty):
	// the replica that delivers webhooks wakes its worker.
	ChangeOutbox ChangeKind = "outbox"

	// ChangeStale is not written by anyone: the feed tells it when it
	// could not be read for longer than Options.FeedStaleAfter. Changes
	// made elsewhere may be going unseen: drop every cached copy and
	// keep none (read the store each time) until ChangeFresh.
	ChangeStale ChangeKind = "stale"
	// ChangeFresh follows ChangeStale once the feed is read again: drop
	// every cached copy once more (one may have been filled while the
	// feed was failing) and cache again.
	ChangeFresh ChangeKind = "fresh"
)

// Change is one committed change that copies cached outside the store
// must drop (or a wake-up for the replica doing a background task).
type Change struct {
	Kind ChangeKind
	ID   string
}

// Default tuning of the replica services (Options).
const (
	// DefaultFeedInterval is how often a replica reads the invalidation
	// feed.
	DefaultFeedInterval = 250 * time.Millisecond
	// DefaultFeedStaleAfter is how long the feed may go unread before
	// caches stop trusting themselves (ChangeStale).
	DefaultFeedStaleAfter = time.Second
)

// feedInterval returns Options.FeedInterval or its default.
func (opt Options) feedInterval() time.Duration {
	if opt.FeedInterval <= 0 {
		return DefaultFeedInterval
	}
	return opt.FeedInterval
}

// FeedTiming returns the feed's poll interval and staleness bound that
// opt asks for, defaults applied: the staleness bound is at least four
// intervals. For backends.
func (opt Options) FeedTiming() (interval, staleAfter time.Duration) {
	interval = opt.feedInterval()
	staleAfter = opt.FeedStaleAfter
	if staleAfter <= 0 {
		staleAfter = DefaultFeedStaleAfter
	}
	return interval, max(staleAfter, 4*interval)
}
