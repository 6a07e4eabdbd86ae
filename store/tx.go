package store

import "time"

// Tx is one transaction of a DB (View, Update or Batch), with the typed
// reads and writes of latchkey's records. It is valid only inside the
// function it was handed to and is not safe for concurrent use.
//
// What every method keeps to, unless its comment says otherwise:
//
//   - A lookup of one row returns ErrNotFound when there is none. A
//     method that lists rows returns nil (no error) when none match,
//     except where its comment says "never nil": there an empty, non-nil
//     slice (callers encode it as a JSON array).
//   - A method that deletes a row returns nil when the row is already
//     gone. Write methods belong in Update and Batch: in a View they
//     return an error (or nil when they find nothing to change).
//   - A Put method creates the row or replaces it whole, keyed as its
//     comment says; the caller keeps ownership of the value it passed,
//     and a read returns a fresh value that the caller may change.
//   - Values round-trip exactly: strings and []byte byte for byte
//     (json.RawMessage fields too: store them as bytes or text, not as
//     PostgreSQL's jsonb, which reorders keys), nil and empty alike where
//     the record's encoding does not tell them apart, times to the
//     nanosecond with their zero value kept (compare them with Equal:
//     the location of a time read back is not part of the interface),
//     nil pointers as nil.
//   - "Byte order" of strings is the order of their bytes (PostgreSQL:
//     COLLATE "C"). Ids are time-ordered UUIDs (version 7) unless said
//     otherwise, so id order is creation order.
//   - Sequence numbers (Mail.ID, Event.Seq, Job.Seq, Delivery.Seq,
//     EventPos.Seq) start at 1 and grow with every row of their kind,
//     never reused; they need not be dense. The method that assigns one
//     sets it in the value passed by the time the transaction commits:
//     EnqueueJob and AddDelivery before they return, AppendEvent,
//     EnqueueMail and AddAuthEvent possibly only with the transaction's
//     next statement (PostgreSQL sends the write with it).
//   - Limits: a limit of 0 or less means no limit only where the comment
//     says so.
//   - Errors other than those named are the store's own (I/O, a lost
//     connection, a conflict the backend could not retry).
type Tx interface {
	// OnCommit registers fn to run once the transaction has committed
	// durably, in the order of registration, before Update or Batch
	// returns (on bbolt, on the goroutine that committed). fn does not
	// run when the transaction rolls back, nor when a rerun of the
	// function (see DB) replaced this one, nor ever in a View. It must be
	// quick and must not block.
	OnCommit(fn func())

	// The records, by aggregate: each interface below holds one
	// aggregate's reads and writes, so a new kind of record shows every
	// place it must go (both backends, the copy, the conformance tests).
	Instance
	TLSCache
	Projects
	Users
	Sessions
	RefreshTokens
	Codes
	Factors
	Passkeys
	ExternalMethods
	Identities
	OAuthFlows
	Webhooks
	Outbox
	MailQueue
	AuthEvents
	Expiry
	Templates
	OIDCKeys
	OIDCClients
	OIDCFlows
	OIDCTokens
	OIDCConsents
	OIDCDevices
	Hints
}

// Instance is the instance settings: one value each, stored with the data.
type Instance interface {
	// AdminTokenHash returns the stored keyed hash of a generated admin
	// token; nil (no error) when none is stored.
	AdminTokenHash() ([]byte, error)
	// SetAdminTokenHash stores the keyed hash of the admin token,
	// replacing any.
	SetAdminTokenHash(h []byte) error
	// Initialized reports whether the first-start state (default
	// project, test key, admin token) was committed (SetInitialized).
	Initialized() (bool, error)
	// SetInitialized records that the first-start state is committed;
	// call it in the transaction that creates that state.
	SetInitialized() error
	// MasterKeyCheck returns the keyed check value of the master key the
	// store was written under (CheckKeyring); nil when none is stored.
	MasterKeyCheck() ([]byte, error)
	// SetMasterKeyCheck stores the master key's check value.
	SetMasterKeyCheck(v []byte) error
}

// TLSCache is the cache of automatic HTTPS (TLSCacheEntry), keyed by
// name: one per store, so the replicas of a database share their
// certificates and the challenges in flight, and a restart reuses them.
type TLSCache interface {
	// TLSCacheEntry returns the entry key.
	TLSCacheEntry(key string) (*TLSCacheEntry, error)
	// PutTLSCacheEntry creates or replaces the entry e.Key (a non-empty
	// name).
	PutTLSCacheEntry(e *TLSCacheEntry) error
	// DeleteTLSCacheEntry removes the entry key.
	DeleteTLSCacheEntry(key string) error
}

// Projects is the projects and their API keys.
type Projects interface {
	// Project returns the project with id.
	Project(id string) (*Project, error)
	// PutProject creates or replaces the project p.ID.
	PutProject(p *Project) error
	// Projects returns every project in id byte order.
	Projects() ([]*Project, error)
	// DeleteProject removes project id and everything that belongs to
	// it, in this transaction: its users with everything DeleteUser
	// removes (and any provider link of the project left without its
	// user); pending codes and send or failure histories whose
	// project is id or one of its external methods' ids (the replay
	// marks of those methods); magic links, remembered devices, WebAuthn
	// challenges, sign-ins with providers in flight (OAuthFlows),
	// external-method registrations and their grants; its
	// mail templates; its OpenID provider's signing keys, clients,
	// authorization requests, grants, refresh tokens, revoked access
	// tokens, consents and device authorizations; its webhooks
	// with their queued jobs and delivery records. Its API keys
	// stay but are detached (ProjectID set to ""), so they still show,
	// and can be revoked, in the key list; their prefixes are returned
	// (in any order) so callers can drop cached copies. Authentication
	// events and their counters, outbox events and queued mail stay. An
	// unknown id is ErrNotFound, changing nothing.
	DeleteProject(id string) (detached []string, err error)
	// APIKey returns the key whose Prefix is prefix.
	APIKey(prefix string) (*APIKey, error)
	// PutAPIKey creates or replaces the key k.Prefix.
	PutAPIKey(k *APIKey) error
	// APIKeys returns, in Prefix byte order, every key when projectID is
	// empty, else projectID's keys.
	APIKeys(projectID string) ([]*APIKey, error)
}

// Users is the accounts. Email is unique per project, and so is
// ExternalUserID when set; callers store addresses normalized
// (lowercased).
type Users interface {
	// User returns the user with id.
	User(id string) (*User, error)
	// UserByEmail returns projectID's user whose Email is email (an
	// exact match).
	UserByEmail(projectID, email string) (*User, error)
	// UserByExternalID returns projectID's user whose ExternalUserID is
	// ext.
	UserByExternalID(projectID, ext string) (*User, error)
	// PutUser creates or replaces the user u.ID and keeps the lookups by
	// email and external id in step (an address or external id that u
	// no longer has is free again). It returns ErrConflict, changing
	// nothing, when another user of u.ProjectID has u's Email, or u's
	// ExternalUserID when that is set.
	PutUser(u *User) error
	// DeleteUser removes the user u.ID, its lookups by email and
	// external id, its sessions (with their refresh tokens), its factors (totp and sms), its backup
	// codes, its passkeys, its links to sign-in providers
	// (Identities) and its consents to OpenID clients (OIDCConsents).
	// Other rows that name the user (remembered devices,
	// codes, events) stay until they expire.
	DeleteUser(u *User) error
	// Users returns up to limit of projectID's users in Email byte
	// order: those whose Email starts with emailPrefix ("" for all) and,
	// when after is set, sorts strictly after it. more reports whether
	// another user follows the page. A limit of 0 or less returns every
	// match (more is then false). It costs the page's rows, not the rows
	// before it.
	Users(projectID, emailPrefix, after string, limit int) (users []*User, more bool, err error)
	// FactorSummaries returns, for each of userIDs (users of
	// projectID), what second factors it has, in one read whatever
	// their number (the export reads a page of users at a time). A user
	// without any has the zero FactorSummary; an unknown id is left out
	// or given the zero value alike. Never nil.
	FactorSummaries(projectID string, userIDs []string) (map[string]FactorSummary, error)
}

// Sessions is the users' sessions. Session ids are time-ordered UUIDs.
type Sessions interface {
	// Session returns the session with id, expired or not (callers check
	// ExpiresAt; the sweep deletes it once expired).
	Session(id string) (*Session, error)
	// SessionExists reports whether a session row with id exists,
	// expired or not. It is on the path of every user call: make it the
	// cheapest read there is.
	SessionExists(id string) (bool, error)
	// SessionEnrolled returns the session with id (ErrNotFound without
	// it) and what its user has enrolled in the session's project
	// (Enrolled), in one read.
	SessionEnrolled(id string) (*Session, Enrolled, error)
	// ReadEnrolled sets *dst to what userID has enrolled in projectID
	// (Enrolled) by the time the transaction commits: at once, or, where
	// a read costs a round trip (PostgreSQL), with the commit, in the
	// transaction. It is for an answer needed only after the commit:
	// read *dst only once the transaction committed, and call it after
	// the transaction's last change to the user's factors and passkeys.
	ReadEnrolled(projectID, userID string, dst *Enrolled) error
	// PutSession creates or replaces the session s.ID, under its user
	// (UserSessions) and due for the sweep at its ExpiresAt
	// (ExpiringSessions). A replaced session leaves the store's session
	// cache (DB.SessionState) once the transaction commits.
	PutSession(s *Session) error
	// DeleteSession removes the session s.ID, its entry under s.UserID
	// (even when the row itself is gone) and its refresh tokens.
	DeleteSession(s *Session) error
	// UserSessions returns the ids of userID's sessions in id byte order
	// (oldest first).
	UserSessions(userID string) ([]string, error)
	// UserSessionRows returns userID's sessions in id byte order (oldest
	// first); never nil.
	UserSessionRows(userID string) ([]*Session, error)
	// RecentUserSessions returns up to limit of userID's sessions, newest
	// first (descending id), and whether older ones remain; never nil.
	// It costs limit+1 rows at most, whatever the user's number of
	// sessions.
	RecentUserSessions(userID string, limit int) ([]*Session, bool, error)
	// TouchSession sets session id's LastSeenAt to t when t is later
	// than it. A session that no longer exists is left absent (never
	// recreated, no error). A session never touched (LastSeenAt zero)
	// whose t is less than grace after its IssuedAt is left as it is:
	// shown as last seen at its sign-in, it is off by less than grace.
	// Nothing else of the row changes (its expiry neither).
	TouchSession(id string, t time.Time, grace time.Duration) error
	// DeleteUserSessions removes every session of userID, with their
	// refresh tokens.
	DeleteUserSessions(userID string) error
}

// RefreshTokens is the sessions' refresh tokens (RefreshToken), keyed by
// (session, hash): each session's tokens are its family. They go with
// their session, in the transaction that deletes it: DeleteSession,
// DeleteUserSessions, DeleteUser, DeleteProject and the sweep of expired
// sessions (SweepExpired of ExpiringSessions) delete them too.
type RefreshTokens interface {
	// RefreshToken returns session sessionID's token whose Hash is hash
	// (an exact match), used or expired or not.
	RefreshToken(sessionID string, hash []byte) (*RefreshToken, error)
	// PutRefreshToken creates or replaces the token (t.SessionID,
	// t.Hash); the sweep deletes it at its ExpiresAt
	// (ExpiringRefreshTokens). The session t.SessionID must be stored (by
	// this transaction or an earlier one): a token of a session that is
	// not is not stored either, and no error is returned (it would have
	// gone with its session).
	PutRefreshToken(t *RefreshToken) error
}

// Codes is the one-time codes and the send or failure histories
// (throttles), each keyed by (kind, project, subject); the project may
// be an external method's id (replay marks); and the magic links and
// remembered devices.
type Codes interface {
	// Code returns the pending code of (kind, projectID, subject),
	// expired or not (callers check ExpiresAt).
	Code(kind, projectID, subject string) (*Code, error)
	// PutCode stores c under (c.Kind, c.ProjectID, c.Subject), replacing
	// the code there; the sweep deletes it at its ExpiresAt
	// (ExpiringCodes).
	PutCode(c *Code) error
	// DeleteCode removes the code under (c.Kind, c.ProjectID,
	// c.Subject).
	DeleteCode(c *Code) error
	// Throttle returns the history of (kind, projectID, subject); an
	// empty one (not ErrNotFound) when none is stored.
	Throttle(kind, projectID, subject string) (*Throttle, error)
	// PutThrottle stores t as the history of (kind, projectID, subject),
	// due for the sweep ThrottleIdle after its newest entry or its
	// KeepUntil, whichever is later (ExpiringCodes). A history without
	// Sends is deleted instead.
	PutThrottle(kind, projectID, subject string, t *Throttle) error
	// MagicLink returns the link whose Hash is hash, used or expired or
	// not.
	MagicLink(hash []byte) (*MagicLink, error)
	// PutMagicLink creates or replaces the link m.Hash; the sweep deletes
	// it at its ExpiresAt (a used link is kept until then, so that reuse
	// answers "already used").
	PutMagicLink(m *MagicLink) error
	// DeleteMagicLinks removes projectID's links for email, used or not,
	// and returns how many it removed.
	DeleteMagicLinks(projectID, email string) (int, error)
	// Device returns the remembered device whose Key is key, expired or
	// not (callers check Device.Expired).
	Device(key []byte) (*Device, error)
	// PutDevice creates or replaces the device d.Key. A zero LastUsedAt
	// is set to CreatedAt first (in d too). The sweep deletes it
	// DeviceLifetime after its LastUsedAt (ExpiringDevices).
	PutDevice(d *Device) error
}

// Factors is the second factors (TOTP, SMS) and backup codes.
type Factors interface {
	// Factor returns userID's factor of kind ("totp" or "sms").
	Factor(userID, kind string) (*Factor, error)
	// PutFactor creates or replaces the factor (f.UserID, f.Kind). The
	// user's factors leave the store's session cache (DB.SessionState)
	// once the transaction commits.
	PutFactor(f *Factor) error
	// DeleteFactor removes userID's factor of kind.
	DeleteFactor(userID, kind string) error
	// BackupCodes returns userID's batch of backup codes.
	BackupCodes(userID string) (*BackupCodes, error)
	// PutBackupCodes stores b as b.UserID's batch, replacing the
	// previous one.
	PutBackupCodes(b *BackupCodes) error
	// DeleteBackupCodes removes userID's batch of backup codes.
	DeleteBackupCodes(userID string) error
}

// Passkeys is the WebAuthn credentials and the ceremonies in progress
// (challenges).
type Passkeys interface {
	// Passkey returns projectID's credential whose ID is id.
	Passkey(projectID, id string) (*Passkey, error)
	// PutPasskey creates or replaces the credential (pk.ProjectID,
	// pk.ID), listed under pk.UserID.
	PutPasskey(pk *Passkey) error
	// DeletePasskey removes the credential (pk.ProjectID, pk.ID) and its
	// entry under pk.UserID.
	DeletePasskey(pk *Passkey) error
	// UserPasskeys returns userID's credentials in projectID, oldest
	// CreatedAt first (equal times in ID byte order); never nil.
	UserPasskeys(projectID, userID string) ([]*Passkey, error)
	// Challenge returns the ceremony with id, expired or not.
	Challenge(id string) (*Challenge, error)
	// PutChallenge creates or replaces the ceremony c.ID; the sweep
	// deletes it at its ExpiresAt (ExpiringChallenges).
	PutChallenge(c *Challenge) error
	// DeleteChallenge removes the ceremony with id.
	DeleteChallenge(id string) error
}

// ExternalMethods is the external-method registrations (BYOAM) and
// their one-time grants.
type ExternalMethods interface {
	// ExternalMethod returns the registration with id.
	ExternalMethod(id string) (*ExternalMethod, error)
	// ExternalMethodByName returns projectID's registration whose Method
	// is method (the lowest ID when several are: the store does not make
	// names unique).
	ExternalMethodByName(projectID, method string) (*ExternalMethod, error)
	// ExternalMethods returns projectID's registrations, oldest
	// CreatedAt first (equal times in ID byte order).
	ExternalMethods(projectID string) ([]*ExternalMethod, error)
	// PutExternalMethod creates or replaces the registration m.ID.
	PutExternalMethod(m *ExternalMethod) error
	// Grant returns the grant whose Hash is hash, used or expired or
	// not.
	Grant(hash []byte) (*Grant, error)
	// PutGrant creates or replaces the grant g.Hash; the sweep deletes
	// it at its ExpiresAt (ExpiringGrants).
	PutGrant(g *Grant) error
	// DeleteGrants removes projectID's grants for externalUserID and
	// returns how many it removed.
	DeleteGrants(projectID, externalUserID string) (int, error)
}

// Identities is the links of users to their accounts at sign-in
// providers (Identity), keyed by (project, issuer, subject) and listed
// under their user. DeleteUser and DeleteProject remove them.
type Identities interface {
	// Identity returns projectID's link of (issuer, subject): an exact
	// match. A key that could not be stored (PutIdentity) finds none.
	Identity(projectID, issuer, subject string) (*Identity, error)
	// PutIdentity creates or replaces the link (id.ProjectID, id.Issuer,
	// id.Subject), listed under id.UserID (and no longer under the user
	// it named before, if another). ErrBadIdentity, changing nothing,
	// when a key field or the user is empty or a field is not text.
	PutIdentity(id *Identity) error
	// UserIdentities returns userID's links in (ProjectID, Issuer,
	// Subject) byte order; never nil.
	UserIdentities(userID string) ([]*Identity, error)
}

// OAuthFlows is the sign-ins with providers in flight (OAuthFlow): the
// states waiting for a provider's callback and the one-time codes
// waiting for the app's exchange, keyed by ID. DeleteProject removes a
// project's.
type OAuthFlows interface {
	// OAuthFlow returns the flow with id, expired or not (callers check
	// ExpiresAt).
	OAuthFlow(id string) (*OAuthFlow, error)
	// PutOAuthFlow creates or replaces the flow f.ID; the sweep deletes
	// it at its ExpiresAt (ExpiringOAuthFlows).
	PutOAuthFlow(f *OAuthFlow) error
	// DeleteOAuthFlow removes the flow with id.
	DeleteOAuthFlow(id string) error
}

// Webhooks is the webhooks, their queued jobs and their delivery
// records.
type Webhooks interface {
	// Webhook returns projectID's webhook with id.
	Webhook(projectID, id string) (*Webhook, error)
	// Webhooks returns projectID's webhooks in id byte order.
	Webhooks(projectID string) ([]*Webhook, error)
	// PutWebhook creates or replaces the webhook (w.ProjectID, w.ID).
	PutWebhook(w *Webhook) error
	// DeleteWebhook removes the webhook (w.ProjectID, w.ID), its queued
	// jobs and its delivery records. A delivery in flight then finds its
	// job gone (DeleteJob reports false) and records nothing.
	DeleteWebhook(w *Webhook) error
	// EnqueueJob queues j for j.WebhookID, due at j.NextAttemptAt. A zero
	// j.Seq is assigned the next job sequence number first (in j too); a
	// job rescheduled after a failed attempt is deleted and queued again
	// with its Seq, so it keeps its place among jobs due at the same
	// time. A job is identified by (WebhookID, NextAttemptAt, Seq).
	EnqueueJob(j *Job) error
	// DueJobs returns up to limit queued jobs that are due at now
	// (NextAttemptAt at or before it), for the webhook worker, which
	// delivers each webhook's jobs in order and only a few at a time.
	//
	// Webhooks that have queued jobs (due or not) are visited in id byte
	// order, starting with the first id after after and wrapping around
	// to after itself (after empty: from the first id, once), until
	// limit jobs are taken. For each, room(webhookID, peek) is asked
	// first; 0 passes the webhook over without reading its jobs.
	// Otherwise its due jobs are read in (NextAttemptAt, Seq) order,
	// leaving out those for which skip(Seq) is true (jobs the caller has
	// in flight), until peek of them are found; with n > 0 found,
	// room(webhookID, n) says how many of them, from the first, to take
	// (at most n, and at most what limit leaves). room never grows when
	// its second argument shrinks. A webhook's cost is one seek and the
	// jobs read, whatever its backlog. peek below 1 counts as 1. room
	// and skip must not call tx.
	DueJobs(now time.Time, limit int, after string, peek int, room func(webhookID string, due int) int, skip func(seq uint64) bool) ([]*Job, error)
	// NextJobAt returns the earliest NextAttemptAt of every queued job,
	// and false when none is queued.
	NextJobAt() (time.Time, bool, error)
	// DeleteJob removes the job (j.WebhookID, j.NextAttemptAt, j.Seq).
	// It reports false, with no error, when no such job is queued (its
	// webhook was deleted meanwhile).
	DeleteJob(j *Job) (bool, error)
	// JobCount returns how many jobs are queued (tests and tools; it may
	// walk them all).
	JobCount() (int, error)
	// AddDelivery records an attempt under d.WebhookID and assigns d.Seq
	// the next delivery sequence number; the sweep deletes the record
	// DeliveryLifetime after its CreatedAt (ExpiringDeliveries).
	AddDelivery(d *Delivery) error
	// Deliveries returns up to limit of webhookID's delivery records,
	// newest (highest Seq) first; never nil.
	Deliveries(webhookID string, limit int) ([]*Delivery, error)
	// DeliveriesBefore returns up to limit of webhookID's delivery
	// records whose Seq is below before (before 0: from the newest),
	// highest Seq first, and whether older ones remain; never nil. It
	// costs the page's rows at any depth.
	DeliveriesBefore(webhookID string, before uint64, limit int) ([]*Delivery, bool, error)
}

// Outbox is the event outbox: webhook events written in the
// transaction of the change they report, fanned out to the webhooks'
// jobs later.
type Outbox interface {
	// AppendEvent adds e to the outbox and assigns e.Seq the next outbox
	// sequence number.
	AppendEvent(e *Event) error
	// HasEvents reports whether the outbox holds any event.
	HasEvents() (bool, error)
	// EventsAfter returns up to limit outbox events whose Seq is greater
	// than seq, in Seq order.
	EventsAfter(seq uint64, limit int) ([]*Event, error)
	// DeleteEvent removes the outbox event with seq (once fanned out).
	DeleteEvent(seq uint64) error
}

// MailQueue is the queue of mail to send.
type MailQueue interface {
	// EnqueueMail assigns m.ID the next mail sequence number and queues
	// m.
	EnqueueMail(m *Mail) error
	// DueMail returns up to limit queued messages whose NextAttemptAt is
	// at or before now, in ID order (oldest queued first).
	DueMail(now time.Time, limit int) ([]*Mail, error)
	// PutMail replaces the queued message m.ID (after a failed attempt);
	// it does not check that the message is still queued.
	PutMail(m *Mail) error
	// DeleteMail removes the message with id from the queue.
	DeleteMail(id uint64) error
	// MailCount returns how many messages are queued (tests and tools; it
	// may walk them all).
	MailCount() (int, error)
	// RecentMail calls fn for queued messages, newest (highest ID)
	// first, until fn returns false or none is left. fn must not call tx.
	RecentMail(fn func(m *Mail) bool) error
}

// AuthEvents is the authentication events (the events API and the
// dashboard), with hourly counters per project and over all projects
// ("" is the project of events that name none), and suppressed
// failures: failures counted but not stored one by one.
type AuthEvents interface {
	// AddAuthEvent records e and counts it: in its hour's counter of its
	// outcome (success, or its FailureCode), for its project and for all
	// projects, and in the number of events its project keeps. It sets
	// e.Pos to (e.CreatedAt's Unix nanoseconds, the next event sequence
	// number). When the project then keeps more than
	// Options.MaxEventsPerProject, up to 4 of its oldest events (lowest
	// Pos) are deleted (TrimAuthEvents deletes the rest); counters stay.
	// A ProjectID or FailureCode holding a NUL byte is ErrBadEventField.
	AddAuthEvent(e *AuthEvent) error
	// AuthEvents returns up to f.Limit events matching f, newest (highest
	// Pos) first, and whether more match after them; never nil (see
	// AuthEventFilter). It reads only matching events.
	AuthEvents(f AuthEventFilter) ([]*AuthEvent, bool, error)
	// AuthEventCount returns how many events projectID keeps ("" for
	// those that name no project).
	AuthEventCount(projectID string) (int, error)
	// SweepAuthEvents deletes up to max events created before cutoff
	// (Pos below PosBefore(cutoff)), oldest first, and returns how many
	// it deleted; while that is max, more may be left for another
	// transaction. Counters of events stay (SweepEventCounts); the kept
	// numbers go down.
	SweepAuthEvents(cutoff time.Time, max int) (int, error)
	// TrimAuthEvents deletes, oldest first, up to max events of projects
	// that keep more than Options.MaxEventsPerProject (after the cap was
	// lowered) and returns how many it deleted.
	TrimAuthEvents(max int) (int, error)
	// HourlyCounts returns the counters of projectID (with "" the sums
	// over all projects, events without a project included) for the
	// hours from from's to to's, both included: oldest hour first, and
	// within an hour the success counter, then failures by FailureCode
	// in byte order, then the suppressed counter. Hours and outcomes
	// without events have no counter. Failure counters include
	// suppressed failures (AddSuppressed).
	HourlyCounts(projectID string, from, to time.Time) ([]HourCount, error)
	// AddSuppressed adds c.N (when above 0) to the suppressed counter of
	// (c's hour, c.ProjectID, c.Method, c.Action, c.FailureCode), and to
	// the hourly counters of c's project and of all projects: c's
	// failure category's and the hour's suppressed counter. A field
	// holding a NUL byte is ErrBadEventField.
	AddSuppressed(c SuppressedCount) error
	// SuppressedCounts returns suppressed counters for the hours from
	// from's to to's, both included, newest hour first (order within an
	// hour unspecified): projectID's, or with projectID empty every
	// project's and those of no project; only failureCode's when that is
	// set. It considers at most limit counters, newest hours first, so a
	// long busy window keeps its newest hours (with failureCode set,
	// counters of other codes count towards limit too).
	SuppressedCounts(projectID, failureCode string, from, to time.Time, limit int) ([]SuppressedCount, error)
	// SweepEventCounts deletes up to max hourly and suppressed counters
	// of hours before cutoff's hour, and returns how many it deleted
	// (the numbers of events projects keep stay).
	SweepEventCounts(cutoff time.Time, max int) (int, error)
	// EventSweepDue reports which of SweepAuthEvents, SweepEventCounts
	// (with cutoff) and TrimAuthEvents would delete anything, cheaply:
	// the sweep asks it in a View so that an idle sweep writes nothing.
	EventSweepDue(cutoff time.Time) (events, counters, overCap bool, err error)
}

// Expiry is the sweep of expiring rows (see Expiring): every kind is
// deleted once due, through an index by due time.
type Expiry interface {
	// ExpiryDue reports whether a row of kind is due at now (due at or
	// before it), cheaply (one index probe): an idle sweep then needs no
	// write transaction.
	ExpiryDue(kind Expiring, now time.Time) (bool, error)
	// ExpiringCount returns how many rows of kind are stored (tests and
	// tools; it may walk them all).
	ExpiringCount(kind Expiring) (int, error)
	// SweepExpired deletes up to max rows of kind that are due at now,
	// earliest due first, with what belongs to them (a session's entry
	// under its user), and returns how many it deleted; while that is
	// max, more may be left for another transaction. It costs the rows
	// it deletes.
	SweepExpired(kind Expiring, now time.Time, max int) (int, error)
}

// Templates is the mail templates (a project's own wording of a kind
// of mail in a locale), keyed by (project, kind, locale).
// DeleteProject removes a project's templates.
type Templates interface {
	// Template returns projectID's template of kind in locale (an exact
	// match: callers do the locale fallback).
	Template(projectID, kind, locale string) (*Template, error)
	// Templates returns projectID's templates in (Kind, Locale) byte
	// order; never nil.
	Templates(projectID string) ([]*Template, error)
	// PutTemplate creates or replaces the template (t.ProjectID, t.Kind,
	// t.Locale).
	PutTemplate(t *Template) error
	// DeleteTemplate removes the template (projectID, kind, locale).
	DeleteTemplate(projectID, kind, locale string) error
}

// OIDCKeys is the signing keys of the projects' OpenID providers
// (OIDCKey), keyed by (project, kid). A project has at most one active
// key (RetiredAt zero) of each algorithm. DeleteProject removes a
// project's keys.
type OIDCKeys interface {
	// OIDCKeys returns projectID's keys, active and retired, oldest
	// CreatedAt first (equal times in ID byte order); never nil.
	OIDCKeys(projectID string) ([]*OIDCKey, error)
	// AddOIDCKey creates the key (k.ProjectID, k.ID). It returns
	// ErrConflict, changing nothing, when the project has a key with
	// k.ID already, or when k is active and the project has an active
	// key of k.Alg: of two transactions that each add an active key of
	// one algorithm to a project, one fails or, where it ran
	// concurrently with the other (PostgreSQL), runs again and fails.
	AddOIDCKey(k *OIDCKey) error
	// RetireOIDCKey sets the RetiredAt of projectID's key id to at when
	// the key is active; a retired key keeps its time. ErrNotFound
	// when the project has no such key.
	RetireOIDCKey(projectID, id string, at time.Time) error
}

// OIDCClients is the clients (relying parties) of the projects' OpenID
// providers (OIDCClient), keyed by (project, id). DeleteProject removes
// a project's clients.
type OIDCClients interface {
	// OIDCClient returns projectID's client id.
	OIDCClient(projectID, id string) (*OIDCClient, error)
	// OIDCClients returns projectID's clients in ID byte order; never
	// nil.
	OIDCClients(projectID string) ([]*OIDCClient, error)
	// PutOIDCClient creates or replaces the client (c.ProjectID, c.ID).
	PutOIDCClient(c *OIDCClient) error
	// DeleteOIDCClient removes projectID's client id and the users'
	// consents to it.
	DeleteOIDCClient(projectID, id string) error
}

// OIDCFlows is the authorization code flow of the projects' OpenID
// providers: authorization requests (OIDCAuthRequest) and grants
// (OIDCGrant), each keyed by (project, id). Both expire: the sweep
// deletes them at their ExpiresAt (ExpiringOIDCAuthRequests,
// ExpiringOIDCGrants), DeleteProject with their project.
type OIDCFlows interface {
	// OIDCAuthRequest returns projectID's authorization request id,
	// expired or not (callers check).
	OIDCAuthRequest(projectID, id string) (*OIDCAuthRequest, error)
	// PutOIDCAuthRequest creates or replaces the request (r.ProjectID,
	// r.ID); the sweep deletes it at its ExpiresAt.
	PutOIDCAuthRequest(r *OIDCAuthRequest) error
	// DeleteOIDCAuthRequest removes projectID's request id.
	DeleteOIDCAuthRequest(projectID, id string) error
	// OIDCGrant returns projectID's grant id, expired or revoked or not.
	OIDCGrant(projectID, id string) (*OIDCGrant, error)
	// PutOIDCGrant creates or replaces the grant (g.ProjectID, g.ID); the
	// sweep deletes it at its ExpiresAt.
	PutOIDCGrant(g *OIDCGrant) error
	// OIDCUserGrants returns projectID's grants of userID, expired or
	// revoked or not, in ID byte order; never nil. It reads the user's
	// grants only (an index by user).
	OIDCUserGrants(projectID, userID string) ([]*OIDCGrant, error)
	// OIDCSessionGrants returns projectID's grants made under session
	// sessionID, expired or revoked or not, in ID byte order; never nil.
	// It costs the session's grants, whatever the project's number
	// (back-channel logout reads it when a session ends).
	OIDCSessionGrants(projectID, sessionID string) ([]*OIDCGrant, error)
	// OIDCClientGrants returns projectID's grants to client clientID,
	// expired or revoked or not, in ID byte order; never nil. It costs
	// the client's grants, whatever the project's number (deleting a
	// client revokes them).
	OIDCClientGrants(projectID, clientID string) ([]*OIDCGrant, error)
}

// OIDCTokens is the tokens of the projects' OpenID providers beyond the
// code flow: refresh tokens (OIDCRefreshToken), keyed by (project,
// keyed hash), and access tokens revoked before their expiry
// (OIDCRevokedToken), keyed by (project, jti). Both expire: the sweep
// deletes them at their ExpiresAt (ExpiringOIDCRefreshTokens,
// ExpiringOIDCRevokedTokens), DeleteProject with their project.
type OIDCTokens interface {
	// OIDCRefreshToken returns projectID's refresh token whose keyed hash
	// is hash, expired or rotated or not (callers check).
	OIDCRefreshToken(projectID string, hash []byte) (*OIDCRefreshToken, error)
	// PutOIDCRefreshToken creates or replaces the token (t.ProjectID,
	// t.Hash); the sweep deletes it at its ExpiresAt.
	PutOIDCRefreshToken(t *OIDCRefreshToken) error
	// OIDCRevokedToken returns projectID's revoked access token jti,
	// ErrNotFound when it was not revoked (or its row was swept).
	OIDCRevokedToken(projectID, jti string) (*OIDCRevokedToken, error)
	// PutOIDCRevokedToken creates or replaces the row (r.ProjectID,
	// r.JTI); the sweep deletes it at its ExpiresAt.
	PutOIDCRevokedToken(r *OIDCRevokedToken) error
}

// OIDCConsents is what users allowed the third-party clients of the
// projects' OpenID providers (OIDCConsent), keyed by (project, user,
// client). DeleteUser removes the user's, DeleteOIDCClient the client's,
// DeleteProject the project's.
type OIDCConsents interface {
	// OIDCConsent returns userID's consent to projectID's client
	// clientID.
	OIDCConsent(projectID, userID, clientID string) (*OIDCConsent, error)
	// OIDCUserConsents returns userID's consents in projectID, in
	// ClientID byte order; never nil.
	OIDCUserConsents(projectID, userID string) ([]*OIDCConsent, error)
	// PutOIDCConsent creates or replaces the consent (c.ProjectID,
	// c.UserID, c.ClientID).
	PutOIDCConsent(c *OIDCConsent) error
	// DeleteOIDCConsent removes userID's consent to projectID's client
	// clientID.
	DeleteOIDCConsent(projectID, userID, clientID string) error
}

// OIDCDevices is the device authorizations of the projects' OpenID
// providers (OIDCDeviceAuth), keyed by (project, keyed hash of the
// device code), each user code unique within its project. They expire:
// the sweep deletes them at their ExpiresAt (ExpiringOIDCDeviceAuths),
// DeleteProject with their project.
type OIDCDevices interface {
	// OIDCDeviceAuth returns projectID's device authorization whose
	// device code's keyed hash is hash, expired or spent or not (callers
	// check).
	OIDCDeviceAuth(projectID string, hash []byte) (*OIDCDeviceAuth, error)
	// OIDCDeviceAuthByUserCode returns projectID's device authorization
	// whose user code is userCode (exactly), expired or not.
	OIDCDeviceAuthByUserCode(projectID, userCode string) (*OIDCDeviceAuth, error)
	// PutOIDCDeviceAuth creates or replaces the row (d.ProjectID,
	// d.Hash); the sweep deletes it at its ExpiresAt. It returns
	// ErrConflict, changing nothing, when another row of the project
	// has d.UserCode.
	PutOIDCDeviceAuth(d *OIDCDeviceAuth) error
}

// Hints is what a transaction may tell the store about what it is
// about to do, so that a backend where each read costs a round trip
// (PostgreSQL) reads ahead and orders writers; what the reads answer
// does not change. On bbolt, where a read costs no round trip and
// writers run one at a time, every hint is already satisfied.
type Hints interface {
	// PrefetchCode and PrefetchThrottle say that the transaction is
	// about to read that code or history: a backend that pays a round
	// trip per read (PostgreSQL) reads it along with the transaction's
	// next statement. What Code and Throttle answer does not change.
	PrefetchCode(kind, projectID, subject string)
	PrefetchThrottle(kind, projectID, subject string)
	// PrefetchUsers says the same of UserByEmail for each of emails
	// (an import's chunk): they are read together, with the next
	// statement. What UserByEmail answers does not change.
	PrefetchUsers(projectID string, emails []string)
	// Lock makes write transactions that take the same name run one at
	// a time, each seeing what the one before it committed: two imports
	// into one project would otherwise write the same rows in opposite
	// orders and deadlock. Call it first in an Update's function, before
	// any read or write. bbolt's writers run one at a time anyway;
	// PostgreSQL tries the name as the transaction's first statement and,
	// while another transaction holds it, runs the function again later.
	Lock(name string) error
}
